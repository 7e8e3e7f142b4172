#pragma once

// Stopping long work early (feeder convert on Ctrl-C): one request for the whole process (so a
// Ctrl-C stops every conversion the process runs at once), made from a signal handler (the command
// line's SIGINT and SIGTERM) or from another thread (the Python module, which watches for Ctrl-C
// while the work runs), and checked by the work at safe points, where it throws Interrupted.
// Unwinding then removes what the work wrote, as after any error.
//
// Thread safety: every function may be called from any thread; request_interrupt() also from a
// signal handler.

#include <stdexcept>

namespace feeder {

class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted") {}
};

// `signal`: the signal that asked, when one did (InterruptOnSignals re-raises it once the work has
// cleaned up, so that a shell sees the process end by it).
void request_interrupt(int signal = 0) noexcept;
void clear_interrupt() noexcept;
bool interrupt_requested() noexcept;
int interrupt_signal() noexcept;  // 0 when none asked
// Throws Interrupted once request_interrupt() was called (and until clear_interrupt()).
void throw_if_interrupted();

}  // namespace feeder
