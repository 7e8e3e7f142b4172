#pragma once

// The command line's Ctrl-C for long work (feeder convert): while an InterruptOnSignals is alive,
// SIGINT and SIGTERM request an interrupt (feeder/util/interrupt.h) instead of ending the process,
// so the work stops at its next safe point and removes what it wrote; then end_by_signal() ends
// the process by that signal, as a shell expects of a program it interrupted (a script's loop
// stops too). A second signal ends the process at once. A signal the process was started with
// ignored (a background job of a script) stays ignored. Not for the Python module, whose own
// SIGINT handler must stay in place.

#include <csignal>

namespace feeder::cli {

class InterruptOnSignals {
 public:
  InterruptOnSignals();
  ~InterruptOnSignals();  // the previous handlers back, and no interrupt pending
  InterruptOnSignals(const InterruptOnSignals&) = delete;
  InterruptOnSignals& operator=(const InterruptOnSignals&) = delete;

  // When a signal asked for the interrupt: that signal raised with its default action, which ends
  // the process. Returns when none did.
  void end_by_signal();

 private:
  struct sigaction previous_int_{};
  struct sigaction previous_term_{};
};

}  // namespace feeder::cli
