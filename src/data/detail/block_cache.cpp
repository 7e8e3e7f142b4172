// DecodedBlock (its mapping) and BlockCache (the stream's blocks and their bytes); the cache is
// called under BlockStream's mutex.

#include "data/detail/block_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>
#include <vector>

namespace feeder::detail {

DecodedBlock::DecodedBlock(int64_t rows, int64_t counted_bytes, std::span<const Field> fields,
                           std::span<const int64_t> capacity, LiveBytes& live)
    : capacity_(capacity.begin(), capacity.end()), live_(live) {
  const auto align = [](size_t offset) { return (offset + 63) / 64 * 64; };
  const size_t row_ends = static_cast<size_t>(rows) * sizeof(int64_t);
  // Per field: its values, then the ends of a field of no fixed size.
  std::vector<std::pair<size_t, size_t>> offsets;
  for (size_t f = 0; f < fields.size(); ++f) {
    const size_t values_at = size_bytes_ = align(size_bytes_);
    size_bytes_ += static_cast<size_t>(capacity[f]);
    const size_t ends_at = align(size_bytes_);
    if (is_variable(fields[f])) size_bytes_ = ends_at + row_ends;
    offsets.emplace_back(values_at, is_variable(fields[f]) ? ends_at : 0);
  }
  if (size_bytes_ == 0) size_bytes_ = 1;
  // Populated in one call: the block is about to be filled, and faulting its pages in one at a
  // time cost an image stream a tenth of its time in the kernel (more on a virtual machine).
  memory_ = ::mmap(nullptr, size_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (memory_ == MAP_FAILED) throw std::bad_alloc();
  auto* base = static_cast<uint8_t*>(memory_);
  for (size_t f = 0; f < fields.size(); ++f) {
    const auto [values_at, ends_at] = offsets[f];
    fields_.push_back({base + values_at, capacity[f], ends_at ? reinterpret_cast<int64_t*>(base + ends_at) : nullptr});
  }
  rows_capacity_ = rows;
  counted_bytes_ = counted_bytes;
  live_.add(counted_bytes_);
}

DecodedBlock::~DecodedBlock() {
  ::munmap(memory_, size_bytes_);
  live_.subtract(counted_bytes_);
}

int64_t BlockCache::claim(int64_t rows, int64_t bytes, std::unique_ptr<DecodedBlock>& data) {
  // Row groups mostly have one size: the last spare usually fits. Only a spare of exactly the
  // block's rows and bytes will do: a larger one would hold more than the block's bytes, which the
  // budget's arithmetic (LoaderPlan: required_rows) does not allow for, and readers and workers
  // could then wait for each other with the budget full of oversized spares. (Blocks of encoded
  // samples rarely match: they are mapped afresh.)
  data = nullptr;
  for (size_t i = spares_.size(); i-- > 0;) {
    if (spares_[i]->rows_capacity() == rows && spares_[i]->counted_bytes() == bytes) {
      data = std::move(spares_[i]);
      spares_.erase(spares_.begin() + static_cast<std::ptrdiff_t>(i));
      spare_bytes_ -= data->counted_bytes();
      break;
    }
  }
  const int64_t counted = data ? data->counted_bytes() : bytes;
  held_bytes_ += counted;
  trim_spares();
  peak_bytes_ = std::max(peak_bytes_, held_bytes_ + spare_bytes_);
  return counted;
}

void BlockCache::keep_spare(std::unique_ptr<DecodedBlock> block, int64_t held_bytes) {
  held_bytes_ -= held_bytes;
  if (!block) return;
  spare_bytes_ += block->counted_bytes();
  spares_.push_back(std::move(block));
}

void BlockCache::trim_spares() {
  while (!spares_.empty() && held_bytes_ + spare_bytes_ > budget_bytes_) {
    spare_bytes_ -= spares_.back()->counted_bytes();
    spares_.pop_back();
  }
}

void BlockCache::free_slots(std::span<const int32_t> ids) {
  for (const int32_t id : ids) {
    CachedBlock& s = slot(id);
    if (s.state == BlockState::kReady) keep_spare(std::move(s.data), s.held_bytes);
    s.data.reset();
    s.error = nullptr;
    // A slot being read keeps its bytes counted until its reader sees the new generation.
    s.state = BlockState::kFreed;
  }
}

void BlockCache::reset_slots(size_t count) {
  slots_.clear();
  slots_.resize(count);
}

}  // namespace feeder::detail
