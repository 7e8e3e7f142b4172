#pragma once

// Internal to the loader: the blocks (row groups) of a streaming source, read ahead of the batches
// that need them and freed behind them, within a byte budget.

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "feeder/data/sampler.h"
#include "feeder/data/source.h"
#include "util/mutex.h"

namespace feeder::detail {

// Bytes of one stream's decoded blocks alive now, and the most there have been: counted where
// blocks are mapped and unmapped, apart from the stream's own accounting, so that the budget can be
// checked against what really exists. Any thread.
struct LiveBytes {
  std::atomic<int64_t> now{0};
  std::atomic<int64_t> peak{0};
  void add(int64_t bytes) {
    const int64_t live = now.fetch_add(bytes) + bytes;
    int64_t seen = peak.load();
    while (live > seen && !peak.compare_exchange_weak(seen, live)) {
    }
  }
  void subtract(int64_t bytes) { now.fetch_sub(bytes); }
};

// One block's samples in an anonymous mapping of its own, so that freeing it returns the memory
// to the system at once, whatever the allocator's thresholds: its pixels (rows of a fixed size) or,
// for an encoded source, its samples' bytes back to back with the end of each; then the labels.
// Counted in `live`, which must outlive it.
class DecodedBlock {
 public:
  // `counted_bytes`: what the budget counts for it (SampleSource::block_bytes): the payload, plus
  // an int64 label per row, plus an int64 end per row when `encoded`.
  DecodedBlock(int64_t rows, int64_t counted_bytes, bool encoded, LiveBytes& live);
  ~DecodedBlock();
  DecodedBlock(const DecodedBlock&) = delete;
  DecodedBlock& operator=(const DecodedBlock&) = delete;

  int64_t rows_capacity() const { return rows_capacity_; }
  int64_t counted_bytes() const { return counted_bytes_; }
  // Room for the pixels or the encoded bytes.
  int64_t payload_capacity() const { return payload_capacity_; }

  uint8_t* pixels() { return static_cast<uint8_t*>(memory_); }
  int64_t* labels() { return reinterpret_cast<int64_t*>(static_cast<uint8_t*>(memory_) + labels_offset_); }
  // Encoded blocks: where each sample's bytes end in pixels().
  int64_t* ends() { return reinterpret_cast<int64_t*>(static_cast<uint8_t*>(memory_) + ends_offset_); }

 private:
  void* memory_ = nullptr;
  size_t size_bytes_ = 0;
  int64_t rows_capacity_ = 0;
  int64_t counted_bytes_ = 0;
  int64_t payload_capacity_ = 0;
  size_t ends_offset_ = 0;
  size_t labels_offset_ = 0;
  LiveBytes& live_;
};

// Where one sample of a batch is, while the batch holds its blocks.
struct SampleRef {
  const uint8_t* pixels = nullptr;  // the pixels, or an encoded sample's bytes
  int64_t size = 0;                 // encoded samples: their bytes
  int64_t label = 0;
};

// Schedules, per epoch, the blocks each of a rank's batches needs, grouped into "loads": the blocks
// of one shuffle window that this rank's batches read (or of the padding at the end of the epoch),
// held from the first batch that touches the window to the last. Reader threads decode the loads'
// blocks in the order the batches first need them, as long as the bytes held stay within the
// budget; a load is freed once every batch up to its last has been assembled. The loader checks at
// construction that the budget holds what its batches in flight need, so readers and workers can
// never wait for each other in a circle.
//
// Threads: start() and cancel() are called by the loader's consumer thread while no worker is in
// acquire() (start) or to get them out of it (cancel); acquire() and release() by workers; the
// readers are owned here. Every field below is guarded by mutex_ except the schedule's immutable
// parts (set by start() before any acquire()).
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
  void start(const EpochPlan& plan, const std::vector<int64_t>& window_begins, int64_t first_batch) EXCLUDES(mutex_);
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
  enum class SlotState { kPending, kReading, kReady, kFailed, kFreed };
  struct Slot {
    int64_t block = 0;
    SlotState state = SlotState::kPending;
    std::unique_ptr<DecodedBlock> data;
    std::exception_ptr error;
    int64_t held_bytes = 0;  // what this slot adds to held_bytes_ while read or ready
    int32_t next_in_group = -1;  // the load's next slot in the read queue with the same read group
  };
  struct Load {
    int64_t last_batch = 0;
    std::vector<Slot> slots;
  };
  struct SlotId {
    int32_t load = 0;
    int32_t slot = 0;
  };

  // A block read ahead for the next start() (see read_ahead).
  struct AheadBlock {
    int64_t block = 0;
    SlotState state = SlotState::kPending;  // kPending, kReading, kReady or kFailed
    std::unique_ptr<DecodedBlock> data;
    int64_t held_bytes = 0;
  };

  // The slot holding the sample at `position` of the order, which lies in `block`.
  SlotId slot_of(int64_t position, int64_t block, size_t& window_hint) const;
  Slot& slot(SlotId id) REQUIRES(mutex_) {
    return loads_[static_cast<size_t>(id.load)].slots[static_cast<size_t>(id.slot)];
  }
  int64_t block_of(int64_t sample) const;
  int64_t block_bytes(int64_t block) const;
  void reader_loop(bool background) EXCLUDES(mutex_);
  // The next read to claim, if the budget has room for it: a slot of the schedule, else a block
  // to read ahead.
  bool next_read_ready() REQUIRES(mutex_);
  // Whether the next read is the schedule's: not after cancel() (nobody may acquire until the
  // next start(), so those reads would be wasted; reads ahead are for that start()).
  bool reading_schedule() const REQUIRES(mutex_) { return !cancelled_ && next_read_ < read_queue_.size(); }
  // Counts `block`'s bytes as held, with a spare's memory in `data` when one fits.
  int64_t claim_bytes(int64_t block, std::unique_ptr<DecodedBlock>& data) REQUIRES(mutex_);
  // Reads `blocks` (one read group, ascending) into `data` (claim_bytes' spares, else new
  // blocks); the error, if any.
  std::exception_ptr read_into(std::span<const int64_t> blocks, std::vector<std::unique_ptr<DecodedBlock>>& data,
                               std::vector<uint8_t>& scratch) const;
  // A read job: blocks of one read group claimed together, with their memory and counted bytes.
  struct Claim {
    std::vector<int64_t> blocks;
    std::vector<std::unique_ptr<DecodedBlock>> data;
    std::vector<int64_t> bytes;
    std::vector<SlotId> slots;  // schedule reads only
    std::vector<size_t> ahead;  // reads ahead only: their ahead_ entries
    void add(int64_t block, std::unique_ptr<DecodedBlock> memory, int64_t counted) {
      blocks.push_back(block);
      data.push_back(std::move(memory));
      bytes.push_back(counted);
    }
  };
  // Claims the next read of the schedule and the later slots of its load in the same read group
  // while the budget has room (the pieces of one row group in a window are read together).
  Claim claim_scheduled() REQUIRES(mutex_);
  void take_slot(Claim& claim, SlotId id) REQUIRES(mutex_);
  // Claims the next block to read ahead and the blocks after it in the same read group.
  Claim claim_ahead() REQUIRES(mutex_);
  bool fits(int64_t block) const REQUIRES(mutex_) { return held_bytes_ + block_bytes(block) <= budget_bytes_; }
  void free_load(Load& load) REQUIRES(mutex_);
  // Keeps a freed block's memory for the next read (refilling it costs no page faults, unlike a
  // fresh mapping); spares count against the budget and are unmapped when room is needed.
  void keep_spare(std::unique_ptr<DecodedBlock> block, int64_t held_bytes) REQUIRES(mutex_);
  std::unique_ptr<DecodedBlock> take_spare(int64_t rows, int64_t bytes) REQUIRES(mutex_);
  void trim_spares() REQUIRES(mutex_);

  std::shared_ptr<const SampleSource> source_;
  std::vector<int64_t> block_starts_;
  int bucket_shift_ = 0;                     // block_of's lookup: 2^bucket_shift_ samples per bucket
  std::vector<int64_t> bucket_first_block_;  // per bucket: the block holding its first sample
  int64_t pixels_per_sample_ = 0;
  bool encoded_ = false;  // blocks of encoded samples (SampleSource::encoded)
  int64_t budget_bytes_ = 0;
  mutable LiveBytes live_bytes_;  // declared before every holder of a DecodedBlock: destroyed after them

  mutable Mutex mutex_;
  CondVar block_ready_;  // acquire() waits for blocks
  CondVar work_;         // readers wait for a block to read and room in the budget
  CondVar ahead_done_;   // start() waits for reads ahead in flight

  // The schedule, rebuilt by start() under mutex_ while no acquire() runs; acquire() reads these
  // without the lock (it is called only after the start() that set them, see the class comment).
  const EpochPlan* plan_ = nullptr;
  std::vector<int64_t> window_begins_;
  int64_t num_samples_ = 0;              // positions at and past this are the padding
  std::vector<int32_t> window_load_;     // per window: its load, or -1 when this rank reads none of it
  int32_t padding_load_ = -1;
  std::vector<int32_t> block_slot_;      // per block: its slot in its window's load
  std::vector<int32_t> padding_slot_;    // per block: its slot in the padding's load, or -1

  std::vector<Load> loads_ GUARDED_BY(mutex_);
  std::vector<SlotId> read_queue_ GUARDED_BY(mutex_);   // every slot, in the order batches first need them
  int64_t first_batch_ GUARDED_BY(mutex_) = 0;
  std::vector<AheadBlock> ahead_ GUARDED_BY(mutex_);    // read_ahead()'s blocks, claimed in order
  size_t next_ahead_ GUARDED_BY(mutex_) = 0;
  int ahead_reading_ GUARDED_BY(mutex_) = 0;            // reads of ahead_ blocks in flight
  uint64_t generation_ GUARDED_BY(mutex_) = 0;          // bumped by start(): reads of an older schedule are dropped
  bool cancelled_ GUARDED_BY(mutex_) = false;           // set by cancel() until the next start()
  bool stopping_ GUARDED_BY(mutex_) = false;
  int acquirers_waiting_ GUARDED_BY(mutex_) = 0;  // in acquire(), waiting on block_ready_
  int readers_waiting_ GUARDED_BY(mutex_) = 0;    // waiting on work_
  size_t next_read_ GUARDED_BY(mutex_) = 0;
  size_t next_free_ GUARDED_BY(mutex_) = 0;             // loads before this one are freed
  std::vector<uint8_t> assembled_ GUARDED_BY(mutex_);   // per batch from first_batch_
  int64_t frontier_ GUARDED_BY(mutex_) = 0;             // every batch before this one is assembled
  int64_t held_bytes_ GUARDED_BY(mutex_) = 0;           // decoded blocks held plus reads in flight
  std::vector<std::unique_ptr<DecodedBlock>> spares_ GUARDED_BY(mutex_);  // freed blocks' memory, ready for reuse
  int64_t spare_bytes_ GUARDED_BY(mutex_) = 0;
  int64_t peak_bytes_ GUARDED_BY(mutex_) = 0;
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
