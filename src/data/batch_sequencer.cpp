// BatchSequencer: the loader's worker threads and the in-order hand-out of their batches; the
// consumer thread drives it, the workers share its fields under mutex_.

#include "data/detail/batch_sequencer.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "util/thread_priority.h"

namespace feeder::detail {

BatchSequencer::BatchSequencer(int num_workers, int prefetch, Work work, Interrupt interrupt)
    : num_workers_(num_workers), prefetch_(prefetch), work_(std::move(work)), interrupt_(std::move(interrupt)) {
  for (int i = 0; i < num_workers_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

BatchSequencer::~BatchSequencer() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    ++generation_;
    interrupt_();
  }
  work_available_.notify_all();
  // Workers finish at most the batch they are making, then exit.
  for (std::thread& worker : workers_) worker.join();
}

void BatchSequencer::stop_epoch() {
  MutexLock lock(mutex_);
  ++generation_;
  epoch_batches_ = 0;  // nothing can be claimed while the epoch is replaced
  ready_.clear();
  // Workers waiting inside their work give up their batch, so busy_ drops to 0.
  interrupt_();
  while (busy_ != 0) batch_done_.wait(mutex_);
}

void BatchSequencer::resume(int64_t first_batch, int64_t num_batches) {
  {
    MutexLock lock(mutex_);
    next_to_claim_ = first_batch;
    next_to_deliver_ = first_batch;
    epoch_batches_ = num_batches;
    started_ = true;
  }
  work_available_.notify_all();
}

std::optional<Batch> BatchSequencer::next() {
  MutexLock lock(mutex_);
  if (!started_) throw std::logic_error("Loader::next() called before start_epoch()");
  if (next_to_deliver_ >= epoch_batches_) return std::nullopt;
  if (num_workers_ == 0) {
    const int64_t index = next_to_deliver_++;
    lock.unlock();
    return work_(index);
  }
  while (ready_.count(next_to_deliver_) == 0) batch_done_.wait(mutex_);
  auto node = ready_.extract(next_to_deliver_);
  ++next_to_deliver_;
  lock.unlock();
  work_available_.notify_one();
  Result& result = node.mapped();
  if (result.error) std::rethrow_exception(result.error);
  return std::move(result.batch);
}

bool BatchSequencer::wait_for_next(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(mutex_);
  if (!started_) throw std::logic_error("Loader::wait_for_next() called before start_epoch()");
  if (num_workers_ == 0 || next_to_deliver_ >= epoch_batches_) return true;
  while (ready_.count(next_to_deliver_) == 0) {
    if (!batch_done_.wait_until(mutex_, deadline)) break;
  }
  return ready_.count(next_to_deliver_) != 0;
}

int64_t BatchSequencer::delivered(const char* caller) const {
  MutexLock lock(mutex_);
  if (!started_) throw std::logic_error(std::string(caller) + " called before start_epoch() or restore()");
  return next_to_deliver_;
}

void BatchSequencer::worker_loop() {
  become_batch_thread();
  MutexLock lock(mutex_);
  for (;;) {
    while (!stopping_ && !claimable()) work_available_.wait(mutex_);
    if (stopping_) return;
    const int64_t index = next_to_claim_++;
    const uint64_t generation = generation_;
    ++busy_;
    lock.unlock();

    Result result;
    try {
      result.batch.emplace(work_(index));
    } catch (const BatchCancelled&) {
      // A new epoch began: the result is dropped below.
    } catch (...) {
      result.error = std::current_exception();
    }

    lock.lock();
    --busy_;
    if (generation == generation_) ready_.emplace(index, std::move(result));
    // The consumer may wait for this batch, or for busy_ == 0 in stop_epoch().
    batch_done_.notify_all();
  }
}

}  // namespace feeder::detail
