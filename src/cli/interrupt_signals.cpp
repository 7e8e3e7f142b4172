#include "cli/interrupt_signals.h"

#include "feeder/util/interrupt.h"

namespace feeder::cli {
namespace {

void on_signal(int signal) { request_interrupt(signal); }  // async-signal-safe: lock-free stores

// Installs on_signal for `signal` unless the process was started with it ignored.
void catch_signal(int signal, struct sigaction& previous) {
  sigaction(signal, nullptr, &previous);
  if (previous.sa_handler == SIG_IGN) return;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;  // the second signal takes the default way: the process ends
  sigaction(signal, &action, nullptr);
}

}  // namespace

InterruptOnSignals::InterruptOnSignals() {
  catch_signal(SIGINT, previous_int_);
  catch_signal(SIGTERM, previous_term_);
}

InterruptOnSignals::~InterruptOnSignals() {
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
  clear_interrupt();
}

void InterruptOnSignals::end_by_signal() {
  const int signal = interrupt_signal();
  if (signal == 0) return;
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(signal, &fallback, nullptr);
  sigset_t just_this;
  sigemptyset(&just_this);
  sigaddset(&just_this, signal);
  pthread_sigmask(SIG_UNBLOCK, &just_this, nullptr);
  raise(signal);
}

}  // namespace feeder::cli
