#pragma once

// The command line's Ctrl-C for long work (feeder convert): while an InterruptOnSignals is alive,
// SIGINT and SIGTERM request an interrupt (feeder/util/interrupt.h) instead of ending the process,
// so the work stops at its next safe point and removes what it wrote. A second signal ends the
// process as before. Not for the Python module, whose own SIGINT handler must stay in place.

#include <csignal>

namespace feeder::cli {

class InterruptOnSignals {
 public:
  InterruptOnSignals();
  ~InterruptOnSignals();  // the previous handlers back, and no interrupt pending
  InterruptOnSignals(const InterruptOnSignals&) = delete;
  InterruptOnSignals& operator=(const InterruptOnSignals&) = delete;

 private:
  struct sigaction previous_int_{};
  struct sigaction previous_term_{};
};

}  // namespace feeder::cli
