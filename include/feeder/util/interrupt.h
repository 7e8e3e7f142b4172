#pragma once

// Stopping long work early (feeder convert on Ctrl-C): one request for the whole process, made from
// a signal handler (the command line's SIGINT and SIGTERM) or from another thread (the Python
// module, which watches for Ctrl-C while the work runs), and checked by the work at safe points,
// where it throws Interrupted. Unwinding then removes what the work wrote, as after any error.
//
// Thread safety: every function may be called from any thread; request_interrupt() also from a
// signal handler.

#include <stdexcept>

namespace feeder {

class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted") {}
};

void request_interrupt() noexcept;
void clear_interrupt() noexcept;
bool interrupt_requested() noexcept;
// Throws Interrupted once request_interrupt() was called (and until clear_interrupt()).
void throw_if_interrupted();

}  // namespace feeder
