#pragma once

// A hang in a test is a failure, never a stalled test command: Watchdog ends the process when a
// scope outlives its deadline, after printing every thread's stack to stderr, so the failure says
// where each thread waited.
//
// Threads: construct and destroy on one thread; the watchdog's own thread and the signal handler
// touch only atomics and async-signal-safe calls.

#include <dirent.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace feeder::testing {

namespace watchdog_detail {

inline std::atomic<int> dumped{0};

inline void write_text(const char* text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

// Runs on the thread it interrupts: writes that thread's stack.
inline void dump_stack(int) {
  void* frames[64];
  const int depth = ::backtrace(frames, 64);
  char line[64];
  std::snprintf(line, sizeof line, "--- thread %ld ---\n", static_cast<long>(::syscall(SYS_gettid)));
  write_text(line);
  ::backtrace_symbols_fd(frames, depth, STDERR_FILENO);
  dumped.fetch_add(1);
}

// Signals every thread of the process in turn and waits (briefly) for each to write its stack.
inline void dump_all_threads() {
  void* warm[1];
  ::backtrace(warm, 1);  // loads the unwinder now, not inside the handler
  struct sigaction action {};
  action.sa_handler = dump_stack;
  ::sigaction(SIGUSR2, &action, nullptr);
  DIR* tasks = ::opendir("/proc/self/task");
  if (!tasks) return;
  const long self = ::syscall(SYS_gettid);
  while (dirent* entry = ::readdir(tasks)) {
    const long tid = std::strtol(entry->d_name, nullptr, 10);
    if (tid <= 0 || tid == self) continue;
    const int before = dumped.load();
    if (::syscall(SYS_tgkill, ::getpid(), tid, SIGUSR2) != 0) continue;
    for (int i = 0; i < 100 && dumped.load() == before; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::closedir(tasks);
}

}  // namespace watchdog_detail

class Watchdog {
 public:
  Watchdog(std::chrono::milliseconds deadline, std::string what) : what_(std::move(what)) {
    thread_ = std::thread([this, deadline] {
      std::unique_lock lock(mutex_);
      if (done_cv_.wait_for(lock, deadline, [&] { return done_; })) return;
      std::fprintf(stderr, "\nWATCHDOG: %s did not finish within %lld ms: a hang. Every thread's stack:\n",
                   what_.c_str(), static_cast<long long>(deadline.count()));
      watchdog_detail::dump_all_threads();
      std::fprintf(stderr, "WATCHDOG: failing the test (%s hung)\n", what_.c_str());
      std::fflush(stderr);
      std::_Exit(3);
    });
  }
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::string what_;
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace feeder::testing
