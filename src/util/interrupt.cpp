#include "feeder/util/interrupt.h"

#include <atomic>

namespace feeder {
namespace {

// Lock-free, so that a signal handler may set it.
std::atomic<bool> requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

}  // namespace

void request_interrupt() noexcept { requested.store(true, std::memory_order_relaxed); }
void clear_interrupt() noexcept { requested.store(false, std::memory_order_relaxed); }
bool interrupt_requested() noexcept { return requested.load(std::memory_order_relaxed); }

void throw_if_interrupted() {
  if (interrupt_requested()) throw Interrupted();
}

}  // namespace feeder
