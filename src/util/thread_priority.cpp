#include "util/thread_priority.h"

#if defined(__linux__)
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace feeder::detail {

void become_batch_thread() {
#if defined(__linux__)
  // A thread the program made real-time (or idle) keeps its policy. On Linux sched_setscheduler(0, ...)
  // applies to the calling thread only.
  if (::sched_getscheduler(0) != SCHED_OTHER) return;
  sched_param param{};
  param.sched_priority = 0;
  ::sched_setscheduler(0, SCHED_BATCH, &param);
#endif
}

void become_background_thread(int nice) {
#if defined(__linux__)
  become_batch_thread();
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), nice);
#else
  (void)nice;
#endif
}

}  // namespace feeder::detail
