#pragma once

// Elapsed wall time on the steady clock: the one timer every command and benchmark uses.
// A small value: one thread reads and restarts it.

#include <chrono>

namespace feeder {

class Stopwatch {
 public:
  using Clock = std::chrono::steady_clock;

  Stopwatch() : start_(Clock::now()) {}

  // Seconds since construction or the last restart().
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  void restart() { start_ = Clock::now(); }

 private:
  Clock::time_point start_;
};

}  // namespace feeder
