#include "data/detail/block_stream.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <unordered_map>

#include "feeder/error.h"
#include "util/thread_priority.h"

namespace feeder::detail {

namespace {

// Low, not the lowest: at nice 19 other busy processes starve the readers (under 1% of a core each
// against four CPU-bound processes), and a thread cannot raise its priority again when a worker
// waits on it (docs/streaming.md).
constexpr int kReaderNice = 10;

// Throws a copy of a failed block's error. Every batch that needs the block fails with it, on
// several workers and then the consumer; copies keep them from sharing one exception object, whose
// message libstdc++ reference-counts in code ThreadSanitizer cannot see (it reported a race on
// it). Called with the stream's mutex held, which guards the slot's original.
[[noreturn]] void rethrow_copy(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const DataError& e) {
    throw DataError(e.what());
  } catch (const OptionsError& e) {
    throw OptionsError(e.what());
  }
}

}  // namespace

DecodedBlock::DecodedBlock(int64_t rows, int64_t counted_bytes, bool encoded, LiveBytes& live) : live_(live) {
  const int64_t row_bytes = static_cast<int64_t>(sizeof(int64_t)) * (encoded ? 2 : 1);
  payload_capacity_ = std::max<int64_t>(0, counted_bytes - rows * row_bytes);
  const auto align = [](size_t offset) { return (offset + 63) / 64 * 64; };
  ends_offset_ = align(static_cast<size_t>(payload_capacity_));
  labels_offset_ = encoded ? align(ends_offset_ + static_cast<size_t>(rows) * sizeof(int64_t)) : ends_offset_;
  size_bytes_ = labels_offset_ + static_cast<size_t>(rows) * sizeof(int64_t);
  if (size_bytes_ == 0) size_bytes_ = 1;
  // Populated in one call: the block is about to be filled, and faulting its pages in one at a
  // time cost an image stream a tenth of its time in the kernel (more on a virtual machine).
  memory_ = ::mmap(nullptr, size_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (memory_ == MAP_FAILED) throw std::bad_alloc();
  rows_capacity_ = rows;
  counted_bytes_ = counted_bytes;
  live_.add(counted_bytes_);
}

DecodedBlock::~DecodedBlock() {
  ::munmap(memory_, size_bytes_);
  live_.subtract(counted_bytes_);
}

BlockStream::BlockStream(std::shared_ptr<const SampleSource> source, int num_readers, int64_t budget_bytes,
                         bool background_readers)
    : source_(std::move(source)), budget_bytes_(budget_bytes) {
  const auto starts = source_->block_starts();
  block_starts_.assign(starts.begin(), starts.end());
  pixels_per_sample_ = source_->shape().num_pixels();
  encoded_ = source_->encoded();
  // Buckets of samples for block_of: at least twice as many buckets as blocks, each a power of two
  // samples, so that finding a sample's bucket is a shift (a division per sample cost a few percent
  // of a loader-bound stream).
  const int64_t num_samples = block_starts_.back();
  const auto num_blocks = static_cast<int64_t>(block_starts_.size()) - 1;
  const int64_t most_per_bucket = std::max<int64_t>(1, num_samples / std::max<int64_t>(1, 2 * num_blocks));
  while ((int64_t{2} << bucket_shift_) <= most_per_bucket) ++bucket_shift_;
  bucket_first_block_.resize(static_cast<size_t>((num_samples >> bucket_shift_) + 1));
  int64_t block = 0;
  for (size_t k = 0; k < bucket_first_block_.size(); ++k) {
    const int64_t first_sample = static_cast<int64_t>(k) << bucket_shift_;
    while (block + 1 < num_blocks && block_starts_[static_cast<size_t>(block) + 1] <= first_sample) ++block;
    bucket_first_block_[k] = block;
  }
  for (int i = 0; i < num_readers; ++i) {
    readers_.emplace_back([this, background_readers] { reader_loop(background_readers); });
  }
}

BlockStream::~BlockStream() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    ++generation_;
  }
  work_.notify_all();
  block_ready_.notify_all();
  for (std::thread& reader : readers_) reader.join();
}

void BlockStream::cancel() {
  {
    MutexLock lock(mutex_);
    cancelled_ = true;
  }
  block_ready_.notify_all();
}

int64_t BlockStream::block_of(int64_t sample) const {
  // The bucket's first block, then forward: a step or two, as buckets are at most half a block on
  // average.
  auto block = static_cast<size_t>(bucket_first_block_[static_cast<size_t>(sample >> bucket_shift_)]);
  while (block_starts_[block + 1] <= sample) ++block;
  return static_cast<int64_t>(block);
}

int64_t BlockStream::block_bytes(int64_t block) const { return source_->block_bytes(block); }

void BlockStream::free_load(Load& load) {
  for (Slot& slot : load.slots) {
    if (slot.state == SlotState::kReady) keep_spare(std::move(slot.data), slot.held_bytes);
    slot.data.reset();
    slot.error = nullptr;
    // A slot being read keeps its bytes counted until its reader sees the new generation.
    slot.state = SlotState::kFreed;
  }
}

void BlockStream::keep_spare(std::unique_ptr<DecodedBlock> block, int64_t held_bytes) {
  held_bytes_ -= held_bytes;
  if (!block) return;
  spare_bytes_ += block->counted_bytes();
  spares_.push_back(std::move(block));
}

std::unique_ptr<DecodedBlock> BlockStream::take_spare(int64_t rows, int64_t bytes) {
  // Row groups mostly have one size: the last spare usually fits. Only a spare of exactly the
  // block's rows and bytes will do: a larger one would hold more than the block's bytes, which the
  // budget's arithmetic (Loader: required_rows) does not allow for, and readers and workers could
  // then wait for each other with the budget full of oversized spares. (Blocks of encoded samples
  // rarely match: they are mapped afresh.)
  for (size_t i = spares_.size(); i-- > 0;) {
    if (spares_[i]->rows_capacity() == rows && spares_[i]->counted_bytes() == bytes) {
      std::unique_ptr<DecodedBlock> block = std::move(spares_[i]);
      spares_.erase(spares_.begin() + static_cast<std::ptrdiff_t>(i));
      spare_bytes_ -= block->counted_bytes();
      return block;
    }
  }
  return nullptr;
}

void BlockStream::trim_spares() {
  while (!spares_.empty() && held_bytes_ + spare_bytes_ > budget_bytes_) {
    spare_bytes_ -= spares_.back()->counted_bytes();
    spares_.pop_back();
  }
}

void BlockStream::start(const EpochPlan& plan, const std::vector<int64_t>& window_begins, int64_t first_batch) {
  MutexLock lock(mutex_);
  // No read may be claimed while the schedule is replaced: none of the old schedule (as after
  // cancel()), none ahead (all counted as claimed). Then wait for the reads ahead in flight (a read
  // per reader at most), so that each is now either ready to take or not read. The wait lets go of
  // the mutex: a reader that claimed a slot of the old schedule here, under the new generation,
  // would later write its block into the new schedule's slot of the same number.
  cancelled_ = true;
  next_ahead_ = ahead_.size();
  while (ahead_reading_ != 0) ahead_done_.wait(mutex_);
  ++generation_;
  std::vector<int32_t> ahead_ready(block_starts_.size() - 1, -1);  // per block: its ready ahead_ entry
  for (size_t i = 0; i < ahead_.size(); ++i) {
    if (ahead_[i].state == SlotState::kReady) ahead_ready[static_cast<size_t>(ahead_[i].block)] = static_cast<int32_t>(i);
  }
  for (Load& load : loads_) free_load(load);
  loads_.clear();
  read_queue_.clear();
  next_read_ = 0;
  next_free_ = 0;

  plan_ = &plan;
  window_begins_ = window_begins;
  num_samples_ = static_cast<int64_t>(plan.order().size());
  first_batch_ = first_batch;
  frontier_ = first_batch;
  assembled_.assign(static_cast<size_t>(std::max<int64_t>(plan.num_batches() - first_batch, 0)), 0);
  window_load_.assign(window_begins_.size(), -1);
  padding_load_ = -1;
  const size_t num_blocks = block_starts_.size() - 1;
  // Per load: the last slot queued of each read group, to chain the next one to it.
  std::vector<std::unordered_map<int64_t, int32_t>> last_in_group;
  block_slot_.assign(num_blocks, -1);
  padding_slot_.assign(num_blocks, -1);

  // Walk the rank's batches in order: a window's load is created by the first batch that touches
  // it, and each block joins its load (and the read queue) when a batch first needs it.
  size_t window = 0;
  for (int64_t b = first_batch; b < plan.num_batches(); ++b) {
    const auto [first, last] = plan.batch_span(b);
    for (int64_t p = first; p < last; ++p) {
      const int64_t block = block_of(plan.sample_at(p));
      int32_t* load_idx = nullptr;
      int32_t* slot_idx = nullptr;
      if (p >= num_samples_) {
        load_idx = &padding_load_;
        slot_idx = &padding_slot_[static_cast<size_t>(block)];
      } else {
        while (window + 1 < window_begins_.size() && window_begins_[window + 1] <= p) ++window;
        load_idx = &window_load_[window];
        slot_idx = &block_slot_[static_cast<size_t>(block)];
      }
      if (*load_idx < 0) {
        *load_idx = static_cast<int32_t>(loads_.size());
        loads_.emplace_back();
      }
      Load& load = loads_[static_cast<size_t>(*load_idx)];
      load.last_batch = b;
      if (*slot_idx < 0) {
        *slot_idx = static_cast<int32_t>(load.slots.size());
        load.slots.push_back(Slot{block, SlotState::kPending, nullptr, nullptr});
        int32_t& ahead_idx = ahead_ready[static_cast<size_t>(block)];
        // Only the first window takes blocks read ahead: a later one holding them early could
        // crowd the windows before it out of the budget.
        if (*load_idx == 0 && p < num_samples_ && ahead_idx >= 0) {
          AheadBlock& ahead = ahead_[static_cast<size_t>(ahead_idx)];
          Slot& taken = load.slots.back();
          taken.state = SlotState::kReady;
          taken.data = std::move(ahead.data);
          taken.held_bytes = ahead.held_bytes;
          ahead.state = SlotState::kFreed;
          ahead_idx = -1;
        } else {
          read_queue_.push_back(SlotId{*load_idx, *slot_idx});
          last_in_group.resize(loads_.size());
          const auto [last, first_of_group] =
              last_in_group[static_cast<size_t>(*load_idx)].try_emplace(source_->read_group(block), *slot_idx);
          if (!first_of_group) {
            load.slots[static_cast<size_t>(last->second)].next_in_group = *slot_idx;
            last->second = *slot_idx;
          }
        }
      }
    }
  }
  for (AheadBlock& ahead : ahead_) {
    if (ahead.state == SlotState::kReady) keep_spare(std::move(ahead.data), ahead.held_bytes);
  }
  ahead_.clear();
  next_ahead_ = 0;
  trim_spares();
  cancelled_ = false;
  work_.notify_all();
}

void BlockStream::read_ahead(std::vector<int64_t> blocks) {
  // In block order, so that the pieces of a row group follow each other and are read together.
  std::sort(blocks.begin(), blocks.end());
  {
    MutexLock lock(mutex_);
    for (const int64_t block : blocks) {
      AheadBlock ahead;
      ahead.block = block;
      ahead_.push_back(std::move(ahead));
    }
  }
  work_.notify_all();
}

BlockStream::SlotId BlockStream::slot_of(int64_t position, int64_t block, size_t& window_hint) const {
  if (position >= num_samples_) return SlotId{padding_load_, padding_slot_[static_cast<size_t>(block)]};
  if (window_hint >= window_begins_.size() || window_begins_[window_hint] > position) {
    window_hint = static_cast<size_t>(
        std::upper_bound(window_begins_.begin(), window_begins_.end(), position) - window_begins_.begin() - 1);
  }
  while (window_hint + 1 < window_begins_.size() && window_begins_[window_hint + 1] <= position) ++window_hint;
  return SlotId{window_load_[window_hint], block_slot_[static_cast<size_t>(block)]};
}

bool BlockStream::acquire(int64_t batch_idx, std::vector<SampleRef>& refs) {
  const auto [first, last] = plan_->batch_span(batch_idx);
  std::vector<SlotId> slots;
  slots.reserve(static_cast<size_t>(last - first));
  thread_local std::vector<int64_t> rows;  // each sample's row in its block
  rows.clear();
  size_t window_hint = 0;
  for (int64_t p = first; p < last; ++p) {
    const int64_t sample = plan_->sample_at(p);
    const int64_t block = block_of(sample);
    slots.push_back(slot_of(p, block, window_hint));
    rows.push_back(sample - block_starts_[static_cast<size_t>(block)]);
  }

  MutexLock lock(mutex_);
  // Waiting on the first slot not ready, then the next, checks each slot once per wake-up. A
  // cancel() before this call counts as well as one during it: the batch was claimed before the
  // cancel, and the readers may already have dropped the reads it would wait for.
  size_t waiting_on = 0;
  for (;;) {
    if (cancelled_ || stopping_) return false;
    while (waiting_on < slots.size() && slot(slots[waiting_on]).state == SlotState::kReady) ++waiting_on;
    if (waiting_on == slots.size() || slot(slots[waiting_on]).state == SlotState::kFailed) break;
    ++acquirers_waiting_;
    block_ready_.wait(mutex_);
    --acquirers_waiting_;
  }
  if (waiting_on < slots.size()) rethrow_copy(slot(slots[waiting_on]).error);

  // Each sample's block, taken under the lock; the samples are found in them after it: the blocks
  // stay as they are until this batch is released (only readers write a block, before it is ready),
  // and reading a batch's labels and ends misses the cache once per sample, which other workers and
  // the readers need not wait for.
  thread_local std::vector<DecodedBlock*> blocks;
  blocks.resize(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) blocks[i] = slot(slots[i]).data.get();
  lock.unlock();

  refs.resize(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    DecodedBlock& data = *blocks[i];
    const int64_t row = rows[i];
    if (encoded_) {
      const int64_t begin = row == 0 ? 0 : data.ends()[row - 1];
      refs[i].pixels = data.pixels() + begin;
      refs[i].size = data.ends()[row] - begin;
    } else {
      refs[i].pixels = data.pixels() + row * pixels_per_sample_;
    }
    refs[i].label = data.labels()[row];
  }
  return true;
}

void BlockStream::release(int64_t batch_idx) {
  bool wake_readers = false;
  {
    MutexLock lock(mutex_);
    const int64_t offset = batch_idx - first_batch_;
    if (offset < 0 || offset >= static_cast<int64_t>(assembled_.size())) return;
    assembled_[static_cast<size_t>(offset)] = 1;
    while (frontier_ - first_batch_ < static_cast<int64_t>(assembled_.size()) &&
           assembled_[static_cast<size_t>(frontier_ - first_batch_)])
      ++frontier_;
    // Loads end in batch order (windows follow each other; the padding comes last).
    while (next_free_ < loads_.size() && loads_[next_free_].last_batch < frontier_) free_load(loads_[next_free_++]);
    wake_readers = readers_waiting_ > 0;
  }
  // Thousands of small blocks an epoch: waking nobody costs a system call each.
  if (wake_readers) work_.notify_all();
}

int64_t BlockStream::peak_bytes() const {
  MutexLock lock(mutex_);
  return peak_bytes_;
}

bool BlockStream::next_read_ready() {
  // Skip slots whose load was freed before they were read (the batches needing them failed), and
  // those claimed already with an earlier slot of their read group.
  while (next_read_ < read_queue_.size() && slot(read_queue_[next_read_]).state != SlotState::kPending) ++next_read_;
  if (reading_schedule()) {
    const int64_t bytes = block_bytes(slot(read_queue_[next_read_]).block);
    return held_bytes_ == 0 || held_bytes_ + bytes <= budget_bytes_;
  }
  // Every read of the schedule is under way, or it was cancelled: the rest of the budget may read
  // ahead for the next start().
  return next_ahead_ < ahead_.size() && fits(ahead_[next_ahead_].block);
}

int64_t BlockStream::claim_bytes(int64_t block, std::unique_ptr<DecodedBlock>& data) {
  const int64_t rows = source_->block_rows(block);
  data = take_spare(rows, block_bytes(block));
  const int64_t bytes = data ? data->counted_bytes() : block_bytes(block);
  held_bytes_ += bytes;
  trim_spares();
  peak_bytes_ = std::max(peak_bytes_, held_bytes_ + spare_bytes_);
  return bytes;
}

std::exception_ptr BlockStream::read_into(std::span<const int64_t> blocks,
                                          std::vector<std::unique_ptr<DecodedBlock>>& data,
                                          std::vector<uint8_t>& scratch) const {
  try {
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (!data[i]) {
        data[i] = std::make_unique<DecodedBlock>(source_->block_rows(blocks[i]), block_bytes(blocks[i]), encoded_,
                                                 live_bytes_);
      }
    }
    if (encoded_) {
      for (size_t i = 0; i < blocks.size(); ++i) {
        DecodedBlock& block = *data[i];
        source_->read_encoded_block(blocks[i], scratch, block.pixels(), block.payload_capacity(), block.ends(),
                                    block.labels());
      }
      return nullptr;
    }
    std::vector<uint8_t*> pixels;
    std::vector<int64_t*> labels;
    for (size_t i = 0; i < blocks.size(); ++i) {
      pixels.push_back(data[i]->pixels());
      labels.push_back(data[i]->labels());
    }
    source_->read_blocks(blocks, scratch, pixels, labels);
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

void BlockStream::take_slot(Claim& claim, SlotId id) {
  Slot& s = slot(id);
  std::unique_ptr<DecodedBlock> data;
  const int64_t bytes = claim_bytes(s.block, data);
  s.state = SlotState::kReading;
  s.held_bytes = bytes;
  claim.add(s.block, std::move(data), bytes);
  claim.slots.push_back(id);
}

BlockStream::Claim BlockStream::claim_scheduled() {
  Claim claim;
  const SlotId head = read_queue_[next_read_++];
  take_slot(claim, head);
  // The rest of the group in this load only: every load the reads so far belong to is one the
  // batch at the frontier needs whole, and the budget holds those (Loader: required_rows), so
  // claiming ahead within them never keeps the frontier's own blocks out of the budget.
  for (int32_t next = slot(head).next_in_group; next >= 0;) {
    const SlotId id{head.load, next};
    next = slot(id).next_in_group;
    if (slot(id).state != SlotState::kPending) continue;
    if (!fits(slot(id).block)) break;
    take_slot(claim, id);
  }
  return claim;
}

BlockStream::Claim BlockStream::claim_ahead() {
  Claim claim;
  const int64_t group = source_->read_group(ahead_[next_ahead_].block);
  do {
    const size_t idx = next_ahead_++;
    std::unique_ptr<DecodedBlock> data;
    const int64_t bytes = claim_bytes(ahead_[idx].block, data);
    ahead_[idx].state = SlotState::kReading;
    claim.add(ahead_[idx].block, std::move(data), bytes);
    claim.ahead.push_back(idx);
  } while (next_ahead_ < ahead_.size() && source_->read_group(ahead_[next_ahead_].block) == group &&
           fits(ahead_[next_ahead_].block));
  return claim;
}

void BlockStream::reader_loop(bool background) {
  // Readers work a window or more ahead of the batches: in the background they run at a low
  // priority (kReaderNice), below the threads that wait for data (workers, the training loop), so
  // that the burst of reads when a window is freed does not delay those (with feeder train
  // streaming and nice 19, the data wait fell from about 2% of an epoch to about 1%). When workers
  // wait for a block, nothing else is runnable and the readers get the cores. Best effort: a
  // failure (or a system without per-thread priorities) leaves the default priority.
  if (background) become_background_thread(kReaderNice);
  std::vector<uint8_t> scratch;  // this reader's read buffer, reused for every read
  MutexLock lock(mutex_);
  for (;;) {
    while (!stopping_ && !next_read_ready()) {
      ++readers_waiting_;
      work_.wait(mutex_);
      --readers_waiting_;
    }
    if (stopping_) return;
    const bool scheduled = reading_schedule();
    // Blocks read ahead: start() waits for them, so ahead_ keeps their entries until they are back.
    if (!scheduled) ++ahead_reading_;
    Claim claim = scheduled ? claim_scheduled() : claim_ahead();
    const uint64_t generation = generation_;
    lock.unlock();

    const std::exception_ptr error = read_into(claim.blocks, claim.data, scratch);

    lock.lock();
    if (!scheduled) {
      --ahead_reading_;
      for (size_t i = 0; i < claim.ahead.size(); ++i) {
        AheadBlock& ahead = ahead_[claim.ahead[i]];
        if (error) {
          keep_spare(std::move(claim.data[i]), claim.bytes[i]);  // the next epoch reads it again and reports the error
          ahead.state = SlotState::kFailed;
        } else {
          ahead.state = SlotState::kReady;
          ahead.data = std::move(claim.data[i]);
          ahead.held_bytes = claim.bytes[i];
        }
      }
      ahead_done_.notify_all();
      continue;
    }
    if (generation != generation_) {
      // An old epoch's read: nobody wants it now.
      for (size_t i = 0; i < claim.blocks.size(); ++i) keep_spare(std::move(claim.data[i]), claim.bytes[i]);
      trim_spares();
      work_.notify_all();
      continue;
    }
    for (size_t i = 0; i < claim.slots.size(); ++i) {
      Slot& s = slot(claim.slots[i]);
      if (error) {
        keep_spare(std::move(claim.data[i]), claim.bytes[i]);
        s.state = SlotState::kFailed;
        s.error = error;
      } else {
        s.state = SlotState::kReady;
        s.data = std::move(claim.data[i]);
      }
    }
    if (acquirers_waiting_ > 0) block_ready_.notify_all();
  }
}

}  // namespace feeder::detail
