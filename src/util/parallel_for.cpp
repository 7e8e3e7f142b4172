#include "feeder/util/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <vector>

#include "feeder/error.h"

namespace feeder {
namespace {

int hardware_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

}  // namespace

int resolve_num_threads(int requested, std::string_view what) {
  if (requested < 0)
    throw OptionsError(std::string(what) + " must be 0 (one per core) or positive, got " + std::to_string(requested));
  return requested == 0 ? hardware_threads() : requested;
}

void parallel_for(int64_t num_items, int num_threads, const std::function<void(int64_t)>& body) {
  detail::parallel_for_with_starter(num_items, num_threads, body,
                                    [](std::function<void()> work) { return std::thread(std::move(work)); });
}

namespace detail {

void parallel_for_with_starter(int64_t num_items, int num_threads, const std::function<void(int64_t)>& body,
                               const ThreadStarter& start_thread) {
  if (num_threads < 0)
    throw std::invalid_argument("parallel_for: num_threads must be 0 (one per core) or positive, got " +
                                std::to_string(num_threads));
  if (num_items <= 0) return;
  const int64_t num_workers = std::min<int64_t>(num_threads == 0 ? hardware_threads() : num_threads, num_items);
  if (num_workers == 1) {
    // In index order on this thread: the first exception is the lowest index's, let it through.
    for (int64_t idx = 0; idx < num_items; ++idx) body(idx);
    return;
  }

  // Shared by every worker for the duration of the call; the calling thread owns them and reads
  // the error only after every worker has joined.
  std::atomic<int64_t> next_idx{0};
  std::atomic<bool> stop{false};
  std::mutex error_mutex;
  int64_t failed_idx = num_items;  // guarded by error_mutex
  std::exception_ptr error;        // guarded by error_mutex
  auto work = [&] {
    // stop is read before claiming, and a claimed index always runs: claims are in increasing
    // order, so when index i fails every index below i has been claimed and will finish.
    while (!stop.load(std::memory_order_acquire)) {
      const int64_t idx = next_idx.fetch_add(1, std::memory_order_relaxed);
      if (idx >= num_items) return;
      try {
        body(idx);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (idx < failed_idx) {
          failed_idx = idx;
          error = std::current_exception();
        }
        stop.store(true, std::memory_order_release);
      }
    }
  };

  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(num_workers - 1));
  std::string start_failure;
  for (int64_t t = 1; t < num_workers; ++t) {
    try {
      threads.push_back(start_thread(work));
    } catch (const std::exception& e) {
      start_failure = e.what();
      stop.store(true, std::memory_order_release);
      break;
    }
  }
  if (start_failure.empty()) work();
  for (std::thread& thread : threads) thread.join();
  if (!start_failure.empty())
    throw ThreadStartError("parallel_for: could not start a thread (" + std::to_string(threads.size()) + " of " +
                           std::to_string(num_workers - 1) + " had started, and were joined): " + start_failure);
  if (error) std::rethrow_exception(error);
}

}  // namespace detail
}  // namespace feeder
