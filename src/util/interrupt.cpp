#include "feeder/util/interrupt.h"

#include <atomic>

namespace feeder {
namespace {

// Lock-free, so that a signal handler may set it.
std::atomic<bool> requested{false};
std::atomic<int> requesting_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

}  // namespace

void request_interrupt(int signal) noexcept {
  if (signal != 0) requesting_signal.store(signal, std::memory_order_relaxed);
  requested.store(true, std::memory_order_relaxed);
}
void clear_interrupt() noexcept {
  requested.store(false, std::memory_order_relaxed);
  requesting_signal.store(0, std::memory_order_relaxed);
}
int interrupt_signal() noexcept { return requesting_signal.load(std::memory_order_relaxed); }
bool interrupt_requested() noexcept { return requested.load(std::memory_order_relaxed); }

void throw_if_interrupted() {
  if (interrupt_requested()) throw Interrupted();
}

}  // namespace feeder
