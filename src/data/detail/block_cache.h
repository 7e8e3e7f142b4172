#pragma once

// Internal to the loader's stream: the decoded blocks it holds (DecodedBlock, counted in LiveBytes)
// and their byte accounting against its budget (BlockCache: the bytes held by blocks read or being
// read, the spare memory of freed blocks, the peak). BlockCache is not thread safe: BlockStream's
// mutex guards it. A DecodedBlock is filled by one reader, then only read; LiveBytes is atomic.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <vector>

#include "feeder/data/schema.h"
#include "feeder/data/source.h"

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
// to the system at once, whatever the allocator's thresholds: one region per field of the loader's
// sample (with_label of the source's schema: the image, the label, the value fields), each sized
// for the block (a field of no fixed size with an end per row). Counted in `live`, which must
// outlive it.
class DecodedBlock {
 public:
  // `counted_bytes`: what the budget counts for it (SampleSource::block_bytes): field f's region
  // of `capacity[f]` bytes, and an int64 end per row of each field of no fixed size (is_variable).
  DecodedBlock(int64_t rows, int64_t counted_bytes, std::span<const Field> fields, std::span<const int64_t> capacity,
               LiveBytes& live);
  ~DecodedBlock();
  DecodedBlock(const DecodedBlock&) = delete;
  DecodedBlock& operator=(const DecodedBlock&) = delete;

  int64_t rows_capacity() const { return rows_capacity_; }
  int64_t counted_bytes() const { return counted_bytes_; }
  // Every field's region, in the schema's order, and the value fields' (after the image and label).
  std::span<const ValueRegion> fields() const { return fields_; }
  std::span<const ValueRegion> values() const { return std::span<const ValueRegion>(fields_).subspan(2); }
  // Whether its regions are those of a block needing `capacity` (a spare's may not be).
  bool holds(std::span<const int64_t> capacity) const {
    return std::equal(capacity.begin(), capacity.end(), capacity_.begin(), capacity_.end());
  }
  // The regions as a read fills them: the image's (pixels, or encoded samples' bytes with their
  // ends), the labels, and the value fields'.
  BlockBuffers buffers() const {
    return {.payload = fields_[0].data,
            .capacity = fields_[0].capacity,
            .ends = fields_[0].ends,
            .labels = reinterpret_cast<int64_t*>(fields_[1].data),
            .values = values()};
  }

 private:
  void* memory_ = nullptr;
  size_t size_bytes_ = 0;
  int64_t rows_capacity_ = 0;
  int64_t counted_bytes_ = 0;
  std::vector<ValueRegion> fields_;
  std::vector<int64_t> capacity_;
  LiveBytes& live_;
};

enum class BlockState { kPending, kReading, kReady, kFailed, kFreed };

// A block the stream holds for its schedule (a slot) or has read ahead for the next one.
struct CachedBlock {
  int64_t block = 0;  // blocks read ahead (a slot's is its schedule's)
  BlockState state = BlockState::kPending;
  std::unique_ptr<DecodedBlock> data;
  std::exception_ptr error;  // kFailed slots: the read's error
  int64_t held_bytes = 0;    // what it adds to the held bytes while read or ready
};

// The stream's blocks and what they count against `budget_bytes`: blocks held (ready, or being
// read: claimed), and spares, freed blocks' memory kept for the next read of the same size.
class BlockCache {
 public:
  explicit BlockCache(int64_t budget_bytes) : budget_bytes_(budget_bytes) {}

  // Whether `bytes` more fit the budget beside the blocks held.
  bool fits(int64_t bytes) const { return held_bytes_ + bytes <= budget_bytes_; }
  // Whether a read of the schedule may begin: it fits, or nothing is held (a block larger than
  // the budget is still read, alone).
  bool room_for_schedule(int64_t bytes) const { return held_bytes_ == 0 || fits(bytes); }
  // Counts a block of `rows` and `bytes` as held, with a spare's memory in `data` when one of
  // exactly its size is kept; the bytes counted.
  int64_t claim(int64_t rows, int64_t bytes, std::unique_ptr<DecodedBlock>& data);
  // Stops counting `held_bytes`, and keeps `block`'s memory (if any) as a spare: refilling it costs
  // no page faults, unlike a fresh mapping; spares count against the budget and are unmapped when
  // room is needed.
  void keep_spare(std::unique_ptr<DecodedBlock> block, int64_t held_bytes);
  // Unmaps spares, newest first, until the held bytes and the spares fit the budget.
  void trim_spares();
  int64_t peak_bytes() const { return peak_bytes_; }  // the most held plus spare at once

  // The schedule's slots, numbered as BlockSchedule's.
  CachedBlock& slot(int32_t id) { return slots_[static_cast<size_t>(id)]; }
  // Frees slots `ids` (a load): the ready ones' memory becomes spares; a slot being read keeps its
  // bytes counted until its reader is done with it.
  void free_slots(std::span<const int32_t> ids);
  // `count` slots for a new schedule, all pending; the old ones must be freed.
  void reset_slots(size_t count);

  // Blocks read ahead for the next schedule, in the order they are claimed.
  std::vector<CachedBlock>& ahead() { return ahead_; }

 private:
  const int64_t budget_bytes_;
  int64_t held_bytes_ = 0;  // blocks held plus reads in flight
  std::vector<std::unique_ptr<DecodedBlock>> spares_;
  int64_t spare_bytes_ = 0;
  int64_t peak_bytes_ = 0;
  std::vector<CachedBlock> slots_;
  std::vector<CachedBlock> ahead_;
};

}  // namespace feeder::detail
