// BlockIndex, BlockSchedule and LoadFrontier: pure functions of an epoch's plan and the source's
// blocks; no threads, no locks.

#include "data/detail/block_schedule.h"

#include <algorithm>
#include <unordered_map>

namespace feeder::detail {

BlockIndex::BlockIndex(std::span<const int64_t> block_starts) : block_starts_(block_starts.begin(), block_starts.end()) {
  // Buckets of samples for block_of: at least twice as many buckets as blocks, each a power of two
  // samples, so that finding a sample's bucket is a shift (a division per sample cost a few percent
  // of a loader-bound stream).
  const int64_t num_samples = block_starts_.back();
  const int64_t blocks = num_blocks();
  const int64_t most_per_bucket = std::max<int64_t>(1, num_samples / std::max<int64_t>(1, 2 * blocks));
  while ((int64_t{2} << bucket_shift_) <= most_per_bucket) ++bucket_shift_;
  bucket_first_block_.resize(static_cast<size_t>((num_samples >> bucket_shift_) + 1));
  int64_t block = 0;
  for (size_t k = 0; k < bucket_first_block_.size(); ++k) {
    const int64_t first_sample = static_cast<int64_t>(k) << bucket_shift_;
    while (block + 1 < blocks && block_starts_[static_cast<size_t>(block) + 1] <= first_sample) ++block;
    bucket_first_block_[k] = block;
  }
}

BlockSchedule::BlockSchedule(const EpochPlan& plan, std::span<const int64_t> window_begins, int64_t first_batch,
                             const BlockIndex& index, const std::function<int64_t(int64_t)>& read_group,
                             std::span<const uint8_t> ready_ahead)
    : plan_(&plan), index_(&index), first_batch_(first_batch), num_samples_(static_cast<int64_t>(plan.order().size())) {
  const auto num_blocks = static_cast<size_t>(index.num_blocks());
  std::vector<int32_t> window_load(window_begins.size(), -1);  // per window: its load, or -1 while unread
  int32_t padding_load = -1;
  block_slot_.assign(num_blocks, -1);
  padding_slot_.assign(num_blocks, -1);
  // Per load: the last slot queued of each read group, to chain the next one to it.
  std::vector<std::unordered_map<int64_t, int32_t>> last_in_group;

  // Walk the rank's batches in order: a window's load is created by the first batch that touches
  // it, and each block joins its load (and the read queue) when a batch first needs it.
  size_t window = 0;
  for (int64_t b = first_batch; b < plan.num_batches(); ++b) {
    const auto [first, last] = plan.batch_span(b);
    for (int64_t p = first; p < last; ++p) {
      const int64_t block = index.block_of(plan.sample_at(p));
      const bool padding = p >= num_samples_;
      if (!padding) {
        while (window + 1 < window_begins.size() && window_begins[window + 1] <= p) ++window;
      }
      int32_t& load_id = padding ? padding_load : window_load[window];
      int32_t& slot_id = (padding ? padding_slot_ : block_slot_)[static_cast<size_t>(block)];
      if (load_id < 0) {
        load_id = static_cast<int32_t>(loads_.size());
        loads_.emplace_back();
        last_in_group.emplace_back();
      }
      loads_[static_cast<size_t>(load_id)].last_batch = b;
      if (slot_id >= 0) continue;
      slot_id = static_cast<int32_t>(slots_.size());
      loads_[static_cast<size_t>(load_id)].slots.push_back(slot_id);
      // Only the first window takes blocks read ahead: a later one holding them early could crowd
      // the windows before it out of the budget.
      const bool ahead = load_id == 0 && !padding && static_cast<size_t>(block) < ready_ahead.size() &&
                         ready_ahead[static_cast<size_t>(block)] != 0;
      slots_.push_back(Slot{.block = block, .load = load_id, .next_in_group = -1, .read_ahead = ahead});
      if (ahead) continue;
      read_queue_.push_back(slot_id);
      const auto [last_slot, first_of_group] =
          last_in_group[static_cast<size_t>(load_id)].try_emplace(read_group(block), slot_id);
      if (!first_of_group) {
        slots_[static_cast<size_t>(last_slot->second)].next_in_group = slot_id;
        last_slot->second = slot_id;
      }
    }
  }
}

void BlockSchedule::batch_needs(int64_t batch, std::vector<int32_t>& slots, std::vector<int64_t>& rows) const {
  const auto [first, last] = plan_->batch_span(batch);
  slots.clear();
  rows.clear();
  for (int64_t p = first; p < last; ++p) {
    const int64_t sample = plan_->sample_at(p);
    const int64_t block = index_->block_of(sample);
    slots.push_back(slot_of(p, block));
    rows.push_back(sample - index_->block_start(block));
  }
}

void LoadFrontier::reset(const BlockSchedule& schedule) {
  first_batch_ = schedule.first_batch();
  frontier_ = first_batch_;
  next_free_ = 0;
  assembled_.assign(static_cast<size_t>(std::max<int64_t>(schedule.end_batch() - first_batch_, 0)), 0);
}

std::pair<size_t, size_t> LoadFrontier::mark_assembled(const BlockSchedule& schedule, int64_t batch) {
  const int64_t offset = batch - first_batch_;
  if (offset < 0 || offset >= static_cast<int64_t>(assembled_.size())) return {next_free_, next_free_};
  assembled_[static_cast<size_t>(offset)] = 1;
  while (frontier_ - first_batch_ < static_cast<int64_t>(assembled_.size()) &&
         assembled_[static_cast<size_t>(frontier_ - first_batch_)])
    ++frontier_;
  // Loads end in batch order (windows follow each other; the padding comes last).
  const size_t begin = next_free_;
  const std::vector<BlockSchedule::Load>& loads = schedule.loads();
  while (next_free_ < loads.size() && loads[next_free_].last_batch < frontier_) ++next_free_;
  return {begin, next_free_};
}

}  // namespace feeder::detail
