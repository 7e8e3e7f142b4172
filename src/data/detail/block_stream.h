#pragma once

// Internal to the loader: BlockStream, the reader threads that decode a streaming source's blocks
// (row groups) ahead of the batches that need them, as its BlockSchedule orders, into its
// BlockCache within a byte budget, and free them behind the batches; BlockLease, a batch's hold on
// its blocks. Workers call acquire()/release(), the loader's consumer thread start()/cancel(); the
// readers are the stream's own.

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "data/detail/block_cache.h"
#include "data/detail/block_schedule.h"
#include "feeder/data/sampler.h"
#include "feeder/data/source.h"
#include "util/mutex.h"

namespace feeder::detail {

// Where one sample of a batch is, while the batch holds its blocks.
struct SampleRef {
  const uint8_t* pixels = nullptr;  // the pixels, or an encoded sample's bytes
  int64_t size = 0;                 // encoded samples: their bytes
  int64_t label = 0;
  // Its value fields: row `row` of block->values() (row_value).
  const DecodedBlock* block = nullptr;
  int64_t row = 0;
};

// Reads, per epoch, the blocks its BlockSchedule says each of a rank's batches needs, grouped into
// loads (a shuffle window's blocks, held from the first batch that touches the window to the last).
// Reader threads decode the blocks in the schedule's read order, as long as the bytes held stay
// within the budget (BlockCache); a load is freed once every batch up to its last has been
// assembled (LoadFrontier). The loader checks at construction that the budget holds what its
// batches in flight need, so readers and workers can never wait for each other in a circle.
//
// Threads: start() and cancel() are called by the loader's consumer thread while no worker is in
// acquire() (start) or to get them out of it (cancel); acquire() and release() by workers; the
// readers are owned here. Every field below is guarded by mutex_ except the schedule (set by
// start() before any acquire()) and what the constructor sets.
class BlockStream {
 public:
  // `background_readers`: the readers run at a low scheduling priority (see LoaderOptions).
  BlockStream(std::shared_ptr<const SampleSource> source, int num_readers, int64_t budget_bytes,
              bool background_readers);
  ~BlockStream();
  BlockStream(const BlockStream&) = delete;
  BlockStream& operator=(const BlockStream&) = delete;

  // Makes every acquire() return false, those waiting now and those called later, until the next
  // start(); until then readers claim no read of the schedule, only reads ahead.
  void cancel() EXCLUDES(mutex_);
  // Schedules batches [first_batch, plan.num_batches()) of `plan`, whose order has the shuffle
  // windows starting at `window_begins`. `plan` must stay alive and unchanged until the next start().
  // `ahead_wanted`: this is the epoch read_ahead() guessed, so its reads in flight are awaited (at
  // most half a second, kAheadPatience); otherwise they are asked to end at once (a remote request within a
  // second), and the new schedule reads again what they leave.
  void start(const EpochPlan& plan, const std::vector<int64_t>& window_begins, int64_t first_batch,
             bool ahead_wanted) EXCLUDES(mutex_);
  // Once every read the current schedule needs is under way, reads `blocks` too while the budget
  // has room: the loader's guess at the next epoch's first window, so that epoch's first batch need
  // not wait for a whole window. The next start() takes those of its first window's blocks already
  // read; the rest become spare memory. Called by the consumer after start().
  void read_ahead(std::vector<int64_t> blocks) EXCLUDES(mutex_);
  // Waits until every block batch `batch_idx` needs is decoded and fills `refs` (one per sample, in
  // batch order); false when cancelled. Rethrows the error of a block that failed to read.
  bool acquire(int64_t batch_idx, std::vector<SampleRef>& refs) EXCLUDES(mutex_);
  // Batch `batch_idx` is assembled or failed: it no longer needs its blocks.
  void release(int64_t batch_idx) EXCLUDES(mutex_);

  int64_t peak_bytes() const EXCLUDES(mutex_);
  // The most bytes of decoded blocks alive at once (LiveBytes).
  int64_t peak_live_bytes() const { return live_bytes_.peak.load(); }

 private:
  // A read job: blocks of one read group claimed together, with their memory and counted bytes.
  struct Claim {
    std::vector<int64_t> blocks;
    std::vector<std::unique_ptr<DecodedBlock>> data;
    std::vector<int64_t> bytes;
    std::vector<int32_t> slots;  // schedule reads only
    std::vector<size_t> ahead;   // reads ahead only: their entries in cache_.ahead()
    void add(int64_t block, std::unique_ptr<DecodedBlock> memory, int64_t counted) {
      blocks.push_back(block);
      data.push_back(std::move(memory));
      bytes.push_back(counted);
    }
  };

  int64_t block_bytes(int64_t block) const { return source_->block_bytes(block); }
  // start()'s last step: the first window's slots take the blocks read ahead for them; the other
  // blocks read ahead become spare memory.
  void take_read_ahead(const std::vector<int32_t>& ahead_of_block) REQUIRES(mutex_);
  // acquire()'s wait for the blocks of `slots`; false when cancelled. Rethrows a failed block's error.
  bool wait_for_blocks(const std::vector<int32_t>& slots, std::vector<DecodedBlock*>& blocks) EXCLUDES(mutex_);

  void reader_loop(bool background) EXCLUDES(mutex_);
  // The next read to claim, if the budget has room for it: a slot of the schedule, else a block
  // to read ahead.
  bool next_read_ready() REQUIRES(mutex_);
  // Whether the next read is the schedule's: not after cancel() (nobody may acquire until the
  // next start(), so those reads would be wasted; reads ahead are for that start()).
  bool reading_schedule() const REQUIRES(mutex_) {
    return !cancelled_ && next_read_ < schedule_.read_queue().size();
  }
  // Claims the next read of the schedule and the later slots of its load in the same read group
  // while the budget has room (the pieces of one row group in a window are read together).
  Claim claim_scheduled() REQUIRES(mutex_);
  void take_slot(Claim& claim, int32_t id) REQUIRES(mutex_);
  // Claims the next block to read ahead and the blocks after it in the same read group.
  Claim claim_ahead() REQUIRES(mutex_);
  // Reads `blocks` (one read group, ascending) into `data` (spares the claim took, else new
  // blocks); the error, if any.
  std::exception_ptr read_into(std::span<const int64_t> blocks, std::vector<std::unique_ptr<DecodedBlock>>& data,
                               std::vector<uint8_t>& scratch) const;
  // A claim read (or failed): its blocks into their slots, unless the schedule changed since
  // `generation`, or into the blocks read ahead.
  void finish_scheduled(Claim& claim, const std::exception_ptr& error, uint64_t generation) REQUIRES(mutex_);
  void finish_ahead(Claim& claim, const std::exception_ptr& error) REQUIRES(mutex_);

  const std::shared_ptr<const SampleSource> source_;
  const BlockIndex index_;
  const std::vector<Field> fields_;  // of every block: with_label(source_->schema())
  mutable LiveBytes live_bytes_;  // declared before every holder of a DecodedBlock: destroyed after them

  mutable Mutex mutex_;
  CondVar block_ready_;  // acquire() waits for blocks
  CondVar work_;         // readers wait for a block to read and room in the budget
  CondVar ahead_done_;   // start() waits for reads ahead in flight

  // Replaced by start() under mutex_ while no acquire() runs; acquire() reads it without the lock
  // (it is called only after the start() that set it, see the class comment).
  BlockSchedule schedule_;
  BlockCache cache_ GUARDED_BY(mutex_);
  LoadFrontier frontier_ GUARDED_BY(mutex_);
  size_t next_read_ GUARDED_BY(mutex_) = 0;   // in schedule_.read_queue()
  size_t next_ahead_ GUARDED_BY(mutex_) = 0;  // in cache_.ahead(), claimed in order
  int ahead_reading_ GUARDED_BY(mutex_) = 0;  // reads of blocks ahead in flight
  uint64_t generation_ GUARDED_BY(mutex_) = 0;  // bumped by start(): reads of an older schedule are dropped
  bool cancelled_ GUARDED_BY(mutex_) = false;   // set by cancel() until the next start()
  bool stopping_ GUARDED_BY(mutex_) = false;
  // What readers' remote requests check without the mutex (RequestAbortScope): copies of
  // generation_ and stopping_, stored under the mutex when those change.
  std::atomic<uint64_t> reads_wanted_generation_{0};
  std::atomic<bool> reads_stopping_{false};
  std::atomic<bool> reads_ahead_unwanted_{false};  // set by start() while it waits for them
  int acquirers_waiting_ GUARDED_BY(mutex_) = 0;  // in acquire(), waiting on block_ready_
  int readers_waiting_ GUARDED_BY(mutex_) = 0;    // waiting on work_
  std::vector<std::thread> readers_;
};

// Holds batch `batch`'s blocks from a successful acquire() until it is destroyed, then releases
// them: on every path, an exception after acquire() included, so the stream's frontier always
// moves past the batch and no later epoch stalls on it.
class BlockLease {
 public:
  BlockLease(BlockStream& stream, int64_t batch) : stream_(stream), batch_(batch) {}
  ~BlockLease() {
    if (held_) stream_.release(batch_);
  }
  BlockLease(const BlockLease&) = delete;
  BlockLease& operator=(const BlockLease&) = delete;

  // acquire() for the batch: false when the stream was cancelled (nothing is then held). Any
  // error, a block's DataError included, releases the batch when the lease ends.
  bool acquire(std::vector<SampleRef>& refs) {
    held_ = true;  // a failed block fails the batch: it is released too
    if (stream_.acquire(batch_, refs)) return true;
    held_ = false;
    return false;
  }

 private:
  BlockStream& stream_;
  int64_t batch_;
  bool held_ = false;
};

}  // namespace feeder::detail
