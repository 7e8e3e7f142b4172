#pragma once

// Internal to the loader's stream: which block holds a sample (BlockIndex), and per epoch which
// blocks each batch needs, in what order to read them and when they may be freed (BlockSchedule,
// LoadFrontier). Pure: no threads, no locks. A schedule is immutable once made, so any thread may
// read it; a LoadFrontier belongs to whoever guards it (BlockStream: its mutex).

#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "feeder/data/sampler.h"

namespace feeder::detail {

// The blocks of a source: block b holds samples [block_starts[b], block_starts[b+1]).
class BlockIndex {
 public:
  explicit BlockIndex(std::span<const int64_t> block_starts);

  int64_t num_blocks() const { return static_cast<int64_t>(block_starts_.size()) - 1; }
  int64_t block_start(int64_t block) const { return block_starts_[static_cast<size_t>(block)]; }
  int64_t block_of(int64_t sample) const {
    // The bucket's first block, then forward: a step or two, as buckets are at most half a block on
    // average.
    auto block = static_cast<size_t>(bucket_first_block_[static_cast<size_t>(sample >> bucket_shift_)]);
    while (block_starts_[block + 1] <= sample) ++block;
    return static_cast<int64_t>(block);
  }

 private:
  std::vector<int64_t> block_starts_;
  int bucket_shift_ = 0;                     // 2^bucket_shift_ samples per bucket
  std::vector<int64_t> bucket_first_block_;  // per bucket: the block holding its first sample
};

// One epoch's blocks for batches [first_batch, plan.num_batches()) of one rank, grouped into
// "loads": the blocks of one shuffle window that this rank's batches read (or of the padding at the
// end of the epoch), held from the first batch that touches the window to the last. Each block of a
// load is a slot; slots are numbered across loads in the order batches first need them, which is
// also the order to read them, except the first window's blocks already read ahead.
class BlockSchedule {
 public:
  struct Slot {
    int64_t block = 0;
    int32_t load = 0;
    int32_t next_in_group = -1;  // the load's next slot to read with the same read group, or -1
    bool read_ahead = false;     // taken from the blocks read ahead: not in the read queue
  };
  struct Load {
    int64_t last_batch = 0;      // the last batch that needs the load's blocks
    std::vector<int32_t> slots;  // in the order batches first need them
  };

  BlockSchedule() = default;  // schedules nothing
  // `plan` (and `index`) must outlive the schedule; the order has the shuffle windows starting at
  // `window_begins`, each of whole blocks. `read_group(block)`: blocks of one group are read
  // together (the pieces of a row group). `ready_ahead[block]` != 0: the block was read ahead and is
  // ready, and the first window's load takes it instead of reading it (may be empty).
  BlockSchedule(const EpochPlan& plan, std::span<const int64_t> window_begins, int64_t first_batch,
                const BlockIndex& index, const std::function<int64_t(int64_t)>& read_group,
                std::span<const uint8_t> ready_ahead);

  int64_t first_batch() const { return first_batch_; }
  int64_t end_batch() const { return plan_ ? plan_->num_batches() : first_batch_; }
  const std::vector<Slot>& slots() const { return slots_; }
  const Slot& slot(int32_t id) const { return slots_[static_cast<size_t>(id)]; }
  // In batch order: a load's last batch is never before the last batch of a load before it.
  const std::vector<Load>& loads() const { return loads_; }
  // Every slot not read ahead, in the order batches first need them.
  const std::vector<int32_t>& read_queue() const { return read_queue_; }

  // The slots batch `batch` needs, one per sample in batch order, and each sample's row in its block.
  void batch_needs(int64_t batch, std::vector<int32_t>& slots, std::vector<int64_t>& rows) const;

 private:
  // The slot holding the sample at `position` of the order, which lies in `block`.
  int32_t slot_of(int64_t position, int64_t block) const {
    return position >= num_samples_ ? padding_slot_[static_cast<size_t>(block)] : block_slot_[static_cast<size_t>(block)];
  }

  const EpochPlan* plan_ = nullptr;
  const BlockIndex* index_ = nullptr;
  int64_t first_batch_ = 0;
  int64_t num_samples_ = 0;  // positions at and past this are the padding
  std::vector<Slot> slots_;
  std::vector<Load> loads_;
  std::vector<int32_t> read_queue_;
  std::vector<int32_t> block_slot_;    // per block: its slot in its window's load, or -1
  std::vector<int32_t> padding_slot_;  // per block: its slot in the padding's load, or -1
};

// How far a schedule's batches are assembled, and so which of its loads may be freed: a load's
// blocks are needed until every batch up to its last is assembled (or failed).
class LoadFrontier {
 public:
  void reset(const BlockSchedule& schedule);
  // Batch `batch` is done; the loads that may be freed now, as [begin, end) of schedule.loads()
  // (empty for a batch outside the schedule).
  std::pair<size_t, size_t> mark_assembled(const BlockSchedule& schedule, int64_t batch);
  int64_t frontier() const { return frontier_; }  // every batch before this one is assembled

 private:
  int64_t first_batch_ = 0;
  std::vector<uint8_t> assembled_;  // per batch from first_batch_
  int64_t frontier_ = 0;
  size_t next_free_ = 0;  // loads before this one may be freed already
};

}  // namespace feeder::detail
