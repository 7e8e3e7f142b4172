#include "cli/interrupt_signals.h"

#include "feeder/util/interrupt.h"

namespace feeder::cli {
namespace {

void on_signal(int) { request_interrupt(); }  // async-signal-safe: one lock-free store

}  // namespace

InterruptOnSignals::InterruptOnSignals() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;  // the second signal takes the default way: the process ends
  sigaction(SIGINT, &action, &previous_int_);
  sigaction(SIGTERM, &action, &previous_term_);
}

InterruptOnSignals::~InterruptOnSignals() {
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
  clear_interrupt();
}

}  // namespace feeder::cli
