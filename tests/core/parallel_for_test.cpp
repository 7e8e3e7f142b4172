#include "feeder/util/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "feeder/error.h"

namespace feeder {
namespace {

// Calls parallel_for and returns the message of the exception it throws, or "" when none.
std::string error_of(int64_t num_items, int num_threads, const std::function<void(int64_t)>& body) {
  try {
    parallel_for(num_items, num_threads, body);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(ParallelForTest, RunsEveryIndexExactlyOnce) {
  for (const int num_threads : {1, 2, 3, 8, 0}) {
    constexpr int64_t kNumItems = 1000;
    std::vector<std::atomic<int>> runs(kNumItems);
    parallel_for(kNumItems, num_threads, [&](int64_t idx) { runs[static_cast<size_t>(idx)].fetch_add(1); });
    for (int64_t idx = 0; idx < kNumItems; ++idx)
      ASSERT_EQ(runs[static_cast<size_t>(idx)].load(), 1) << "index " << idx << ", " << num_threads << " threads";
  }
}

TEST(ParallelForTest, UsesAtMostTheRequestedThreadsIncludingTheCaller) {
  std::mutex mutex;
  std::set<std::thread::id> ids;
  parallel_for(200, 3, [&](int64_t) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    const std::lock_guard<std::mutex> lock(mutex);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_GE(ids.size(), 1u);
  EXPECT_LE(ids.size(), 3u);
}

TEST(ParallelForTest, OneThreadRunsInIndexOrderOnTheCallingThread) {
  std::vector<int64_t> order;
  std::vector<std::thread::id> ids;
  parallel_for(5, 1, [&](int64_t idx) {
    order.push_back(idx);
    ids.push_back(std::this_thread::get_id());
  });
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  for (const std::thread::id id : ids) EXPECT_EQ(id, std::this_thread::get_id());
}

TEST(ParallelForTest, NeverStartsMoreThreadsThanItems) {
  std::atomic<int> starts{0};
  detail::parallel_for_with_starter(
      2, 8, [](int64_t) {},
      [&](std::function<void()> work) {
        ++starts;
        return std::thread(std::move(work));
      });
  EXPECT_EQ(starts.load(), 1);  // two items: the caller and one started thread
}

TEST(ParallelForTest, NoItemsRunsNothing) {
  std::atomic<int> runs{0};
  parallel_for(0, 4, [&](int64_t) { ++runs; });
  parallel_for(-3, 4, [&](int64_t) { ++runs; });
  EXPECT_EQ(runs.load(), 0);
}

TEST(ParallelForTest, ZeroThreadsMeansOnePerCore) {
  std::mutex mutex;
  std::set<std::thread::id> ids;
  std::atomic<int> runs{0};
  parallel_for(64, 0, [&](int64_t) {
    ++runs;
    const std::lock_guard<std::mutex> lock(mutex);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(runs.load(), 64);
  EXPECT_LE(ids.size(), std::max(1u, std::thread::hardware_concurrency()));
}

TEST(ParallelForTest, NegativeThreadsThrowsBeforeRunningAnything) {
  std::atomic<int> runs{0};
  EXPECT_EQ(error_of(10, -1, [&](int64_t) { ++runs; }),
            "parallel_for: num_threads must be 0 (one per core) or positive, got -1");
  EXPECT_THROW(parallel_for(10, -1, [&](int64_t) { ++runs; }), std::invalid_argument);
  EXPECT_EQ(runs.load(), 0);
}

TEST(ParallelForTest, ResolveNumThreadsKeepsPositiveAndMapsZeroToCores) {
  EXPECT_EQ(resolve_num_threads(5, "x"), 5);
  EXPECT_EQ(resolve_num_threads(0, "x"), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(ParallelForTest, ResolveNumThreadsRejectsNegativeNamingTheOption) {
  try {
    resolve_num_threads(-2, "CSV num_threads");
    FAIL() << "no exception for -2 threads";
  } catch (const OptionsError& e) {
    EXPECT_STREQ(e.what(), "CSV num_threads must be 0 (one per core) or positive, got -2");
  }
}

TEST(ParallelForTest, RethrowsTheErrorOfASingleFailingIndex) {
  for (const int num_threads : {1, 2, 4}) {
    EXPECT_EQ(error_of(50, num_threads,
                       [](int64_t idx) {
                         if (idx == 17) throw std::runtime_error("bad 17");
                       }),
              "bad 17")
        << num_threads << " threads";
  }
}

TEST(ParallelForTest, LowestFailingIndexWinsForAnyThreadCount) {
  for (const int num_threads : {1, 2, 3, 8}) {
    EXPECT_EQ(error_of(100, num_threads,
                       [](int64_t idx) {
                         if (idx % 10 == 7) throw std::runtime_error("bad " + std::to_string(idx));
                       }),
              "bad 7")
        << num_threads << " threads";
  }
}

// Index 1 fails only after index 5 has failed, so the later index fails first in time; the error
// reported must still be index 1's.
TEST(ParallelForTest, LowestIndexWinsEvenWhenAHigherIndexFailsFirst) {
  std::atomic<bool> five_failed{false};
  std::atomic<bool> one_saw_five{false};
  const std::string message = error_of(8, 4, [&](int64_t idx) {
    if (idx == 5) {
      five_failed = true;
      throw std::runtime_error("bad 5");
    }
    if (idx == 1) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!five_failed && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      one_saw_five = five_failed.load();
      throw std::runtime_error("bad 1");
    }
  });
  EXPECT_TRUE(one_saw_five) << "index 5 did not fail before index 1";
  EXPECT_EQ(message, "bad 1");
}

TEST(ParallelForTest, StopsClaimingAfterAFailure) {
  std::atomic<int64_t> highest_run{-1};
  EXPECT_EQ(error_of(1'000'000, 1,
                     [&](int64_t idx) {
                       highest_run = idx;
                       if (idx == 3) throw std::runtime_error("bad 3");
                     }),
            "bad 3");
  EXPECT_EQ(highest_run.load(), 3);
}

TEST(ParallelForTest, ThreadStartFailureJoinsStartedThreadsAndThrows) {
  std::atomic<int> starts{0};
  std::atomic<int> running{0};
  std::atomic<int> runs{0};
  auto starter = [&](std::function<void()> work) {
    if (++starts > 2) throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
    return std::thread(std::move(work));
  };
  auto body = [&](int64_t) {
    ++running;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ++runs;
    --running;
  };
  try {
    detail::parallel_for_with_starter(100, 6, body, starter);
    FAIL() << "no exception when a thread could not start";
  } catch (const ThreadStartError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("parallel_for: could not start a thread (2 of 5 had started, and were joined): ", 0), 0u)
        << e.what();
  }
  // Every started thread has returned: nothing is still inside body, and nothing runs later.
  EXPECT_EQ(running.load(), 0);
  const int runs_at_return = runs.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(runs.load(), runs_at_return);
  EXPECT_LT(runs_at_return, 100);
}

TEST(ParallelForTest, FirstThreadStartFailureRunsNothing) {
  std::atomic<int> runs{0};
  auto starter = [](std::function<void()>) -> std::thread {
    throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
  };
  EXPECT_THROW(detail::parallel_for_with_starter(10, 4, [&](int64_t) { ++runs; }, starter), ThreadStartError);
  EXPECT_EQ(runs.load(), 0);
}

}  // namespace
}  // namespace feeder
