// A process that forks while a loader runs (torch's DataLoader forks its workers in the same process
// as a feeder loader): the child, which has none of the loader's threads, frees the loader and its
// batches without joining, locking or waiting on anything of the parent's; a loader made in the
// child works; the parent's goes on.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include "core/numbered_store.h"
#include "feeder/data/loader.h"

namespace feeder {
namespace {

using testing::numbered_store;
using testing::options_with;

// The child's exit code, or -1 when it is still running after `limit` (it is then killed).
int wait_for_child(pid_t child, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int64_t samples_of_epoch(Loader& loader, int64_t epoch) {
  int64_t samples = 0;
  loader.start_epoch(epoch);
  while (auto batch = loader.next()) samples += batch->size();
  return samples;
}

TEST(LoaderFork, AChildFreesTheParentsLoaderAndBatchesWithoutWaitingOnItsThreads) {
  auto loader = std::make_unique<Loader>(numbered_store(400), options_with(8, 3));
  loader->start_epoch(0);
  std::optional<Batch> held = loader->next();  // workers are assembling the batches after it
  ASSERT_TRUE(held);
  // Then they wait, the prefetch full: the fork finds them blocked, holding their state, and none
  // inside malloc. AddressSanitizer's allocator (clang 14) takes no lock at fork: a worker inside
  // it when the process forks would hang the child's first free, whatever feeder does.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Only async-signal-safe work is promised after fork in a threaded process; freeing these is
    // what a Python child does when it collects a dropped loader.
    held.reset();
    loader.reset();
    Loader own(numbered_store(40), options_with(8, 0));  // no threads: the child's own loader works
    ::_exit(samples_of_epoch(own, 0) == 40 ? 0 : 3);
  }
  EXPECT_EQ(wait_for_child(child, std::chrono::seconds(20)), 0) << "-1: the child hung freeing the loader";
  int64_t rest = held->size();
  while (auto batch = loader->next()) rest += batch->size();
  EXPECT_EQ(rest, 400);  // the parent's epoch goes on
}

}  // namespace
}  // namespace feeder
