#pragma once

// What a forked child may do with feeder's objects made before the fork: nothing. fork() copies
// the memory but only the thread that called it, so a loader's workers and readers are not in the
// child, and a lock or condition variable one of them held or waited on stays held for ever. A
// child that destroys such an object would join threads that do not exist or wait on those locks
// (torch's DataLoader forks its workers while a feeder loader, or one dropped but not yet
// collected, is still in the process). So objects that own threads or locks remember the process
// that made them and, destroyed in another, leave their parts alone: a few bytes kept until the
// child exits, which is what fork() already copied.

#include <sys/types.h>
#include <unistd.h>

#include <memory>

namespace feeder {

// The process an object was made in. Copies keep it.
class MadeInProcess {
 public:
  MadeInProcess() : pid_(::getpid()) {}
  // True in a child forked after the object was made (the only way another process holds it).
  bool forked() const { return ::getpid() != pid_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

// Keeps `object` alive for the rest of the process: what a forked child does instead of
// destroying what its parent's threads may still hold (see above).
template <class T>
void keep_in_forked_child(T&& object) {
  new std::decay_t<T>(std::forward<T>(object));  // never freed, by design
}

}  // namespace feeder
