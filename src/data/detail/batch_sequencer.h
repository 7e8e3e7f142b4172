#pragma once

// Internal to the loader: BatchSequencer, the persistent worker threads that claim batch numbers in
// order, at most `prefetch` ahead of the consumer, and the reordering that hands their batches out
// strictly in order. The consumer thread calls every public method; the workers are its own.

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "feeder/data/loader.h"
#include "util/mutex.h"

namespace feeder::detail {

// Thrown by a batch's work when the epoch it belongs to was cancelled under it (the stream gave up
// its blocks): the sequencer drops it without a word.
struct BatchCancelled {};

class BatchSequencer {
 public:
  // Makes batch `batch_index` of the epoch in progress; called by the workers concurrently (by the
  // consumer inside next() without workers). What it reads of the epoch is replaced only between
  // stop_epoch() and resume().
  using Work = std::function<Batch(int64_t batch_index)>;
  // Gets workers out of a wait inside `work` (they then throw BatchCancelled): called with the
  // sequencer's lock held, by stop_epoch() and the destructor.
  using Interrupt = std::function<void()>;

  // Starts `num_workers` batch threads (Linux's SCHED_BATCH, util/thread_priority.h).
  BatchSequencer(int num_workers, int prefetch, Work work, Interrupt interrupt);
  // Cancels what is left of the epoch and joins the workers after at most one batch each.
  ~BatchSequencer();
  BatchSequencer(const BatchSequencer&) = delete;
  BatchSequencer& operator=(const BatchSequencer&) = delete;

  // Ends the epoch in progress: no batch is claimed until resume(), results not yet delivered and
  // those being made are dropped, and it returns once no worker is in `work`.
  void stop_epoch() EXCLUDES(mutex_);
  // Batches [first_batch, num_batches) of a new epoch become claimable.
  void resume(int64_t first_batch, int64_t num_batches) EXCLUDES(mutex_);
  // The next batch in order, or nothing at the epoch's end; rethrows its work's exception.
  std::optional<Batch> next() EXCLUDES(mutex_);
  // Loader::wait_for_next: true once next() would not wait for a worker, false when `timeout` ran out.
  bool wait_for_next(std::chrono::milliseconds timeout) EXCLUDES(mutex_);
  // Batches next() has handed out in this epoch (from its first batch's number); throws
  // std::logic_error naming `caller` before the first resume().
  int64_t delivered(const char* caller) const EXCLUDES(mutex_);

 private:
  struct Result {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };
  void worker_loop() EXCLUDES(mutex_);
  bool claimable() const REQUIRES(mutex_) {
    return next_to_claim_ < epoch_batches_ && next_to_claim_ < next_to_deliver_ + prefetch_;
  }

  const int num_workers_;
  const int prefetch_;
  const Work work_;
  const Interrupt interrupt_;

  mutable Mutex mutex_;
  CondVar work_available_;  // workers wait for a batch to claim or for stop
  CondVar batch_done_;      // the consumer waits for a batch or for busy_ == 0
  bool stopping_ GUARDED_BY(mutex_) = false;
  bool started_ GUARDED_BY(mutex_) = false;
  uint64_t generation_ GUARDED_BY(mutex_) = 0;  // bumped by each stop_epoch(); stale results are dropped
  int64_t epoch_batches_ GUARDED_BY(mutex_) = 0;  // batches claimable in this epoch; 0 while switching
  int64_t next_to_claim_ GUARDED_BY(mutex_) = 0;
  int64_t next_to_deliver_ GUARDED_BY(mutex_) = 0;
  int busy_ GUARDED_BY(mutex_) = 0;                    // workers in work_ right now
  std::map<int64_t, Result> ready_ GUARDED_BY(mutex_);  // finished batches by index, waiting for delivery
  std::vector<std::thread> workers_;                   // the consumer's: started and joined by it
};

}  // namespace feeder::detail
