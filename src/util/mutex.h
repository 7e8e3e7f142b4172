#pragma once

// A mutex and a condition variable that clang's thread-safety analysis understands, so that the
// fields shared between the loader's threads say which lock guards them (GUARDED_BY) and the
// compiler checks every access (-Wthread-safety in clang builds), as leveldb's port::Mutex does.
// libstdc++'s std::mutex carries no annotations, hence the thin wrappers; GCC ignores them.

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define FEEDER_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define FEEDER_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) FEEDER_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY FEEDER_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) FEEDER_THREAD_ANNOTATION(guarded_by(x))
#define REQUIRES(...) FEEDER_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) FEEDER_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) FEEDER_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define EXCLUDES(...) FEEDER_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS FEEDER_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace feeder::detail {

class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mutex_.lock(); }
  void unlock() RELEASE() { mutex_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mutex_;
};

// Holds a Mutex for its scope; unlock() and lock() let a thread work without it in between.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~MutexLock() RELEASE() {
    if (locked_) mutex_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void unlock() RELEASE() {
    mutex_.unlock();
    locked_ = false;
  }
  void lock() ACQUIRE() {
    mutex_.lock();
    locked_ = true;
  }

 private:
  Mutex& mutex_;
  bool locked_ = true;
};

// Waits release the mutex while blocked and hold it again on return; callers loop on their
// condition (while (!ready) cv.wait(mutex);), which the analysis checks with the lock held.
class CondVar {
 public:
  void wait(Mutex& mutex) REQUIRES(mutex) {
    std::unique_lock<std::mutex> lock(mutex.mutex_, std::adopt_lock);
    condition_.wait(lock);
    lock.release();
  }
  // False when `deadline` passed.
  bool wait_until(Mutex& mutex, std::chrono::steady_clock::time_point deadline) REQUIRES(mutex) {
    std::unique_lock<std::mutex> lock(mutex.mutex_, std::adopt_lock);
    const bool notified = condition_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return notified;
  }
  void notify_one() { condition_.notify_one(); }
  void notify_all() { condition_.notify_all(); }

 private:
  std::condition_variable condition_;
};

}  // namespace feeder::detail
