// BlockStream: the reader threads, and the waits between them, the workers and the consumer; the
// schedule (block_schedule.*) and the blocks' memory (block_cache.*) are its parts, under mutex_.

#include "data/detail/block_stream.h"

#include <algorithm>
#include <chrono>

#include "feeder/error.h"
#include "io/detail/request_abort.h"
#include "util/thread_priority.h"

namespace feeder::detail {

namespace {

// Low, not the lowest: at nice 19 other busy processes starve the readers (under 1% of a core each
// against four CPU-bound processes), and a thread cannot raise its priority again when a worker
// waits on it (docs/streaming.md).
constexpr int kReaderNice = 10;
// How long start() waits for the reads ahead of the epoch it begins before giving them up: a
// healthy read of a few MiB, even 25 ms away, ends well within it.
constexpr std::chrono::milliseconds kAheadPatience{500};

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

// The bytes each field of block b needs, in the order of with_label(source.schema()): the image,
// the labels (kNoLabel for an unlabeled set), the value fields.
std::vector<int64_t> region_capacity(const SampleSource& source, int64_t block_idx) {
  std::vector<int64_t> bytes{source.payload_bytes(block_idx),
                             source.block_rows(block_idx) * static_cast<int64_t>(sizeof(int64_t))};
  for (size_t f = 0; f < source.value_fields().size(); ++f) bytes.push_back(source.value_capacity(block_idx, f));
  return bytes;
}

}  // namespace

BlockStream::BlockStream(std::shared_ptr<const SampleSource> source, int num_readers, int64_t budget_bytes,
                         bool background_readers)
    : source_(std::move(source)),
      index_(source_->block_starts()),
      fields_(with_label(source_->schema()).fields),
      cache_(budget_bytes) {
  for (int i = 0; i < num_readers; ++i) {
    readers_.emplace_back([this, background_readers] { reader_loop(background_readers); });
  }
}

BlockStream::~BlockStream() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    ++generation_;
    reads_wanted_generation_.store(generation_);
    reads_stopping_.store(true);
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

void BlockStream::start(const EpochPlan& plan, const std::vector<int64_t>& window_begins, int64_t first_batch,
                        bool ahead_wanted) {
  MutexLock lock(mutex_);
  // No read may be claimed while the schedule is replaced: none of the old schedule (as after
  // cancel()), none ahead (all counted as claimed). Then wait for the reads ahead in flight (a read
  // per reader at most), so that each is now either ready to take or not read. Reads of another
  // epoch than this one are asked to end at once, this epoch's after kAheadPatience (a stalled
  // server would hold them up to its retry bound; the new schedule reads again what they leave).
  // The wait lets go of the mutex: a reader that claimed a slot of the old schedule here, under
  // the new generation, would later write its block into the new schedule's slot of the same
  // number.
  cancelled_ = true;
  next_ahead_ = cache_.ahead().size();
  const auto patience = std::chrono::steady_clock::now() + kAheadPatience;
  if (!ahead_wanted) reads_ahead_unwanted_.store(true);
  while (ahead_reading_ != 0) {
    if (reads_ahead_unwanted_.load()) {
      ahead_done_.wait(mutex_);  // asked to end: they do within a second
    } else if (!ahead_done_.wait_until(mutex_, patience)) {
      reads_ahead_unwanted_.store(true);
    }
  }
  reads_ahead_unwanted_.store(false);
  ++generation_;
  reads_wanted_generation_.store(generation_);
  for (const BlockSchedule::Load& load : schedule_.loads()) cache_.free_slots(load.slots);

  const auto num_blocks = static_cast<size_t>(index_.num_blocks());
  std::vector<int32_t> ahead_of_block(num_blocks, -1);  // per block: its ready entry of cache_.ahead()
  std::vector<uint8_t> ready_ahead(num_blocks, 0);
  for (size_t i = 0; i < cache_.ahead().size(); ++i) {
    const CachedBlock& ahead = cache_.ahead()[i];
    if (ahead.state != BlockState::kReady) continue;
    ahead_of_block[static_cast<size_t>(ahead.block)] = static_cast<int32_t>(i);
    ready_ahead[static_cast<size_t>(ahead.block)] = 1;
  }
  schedule_ = BlockSchedule(plan, window_begins, first_batch, index_,
                            [this](int64_t block) { return source_->read_group(block); }, ready_ahead);
  cache_.reset_slots(schedule_.slots().size());
  frontier_.reset(schedule_);
  next_read_ = 0;
  take_read_ahead(ahead_of_block);
  cancelled_ = false;
  work_.notify_all();
}

void BlockStream::take_read_ahead(const std::vector<int32_t>& ahead_of_block) {
  std::vector<CachedBlock>& ahead = cache_.ahead();
  for (size_t id = 0; id < schedule_.slots().size(); ++id) {
    const BlockSchedule::Slot& scheduled = schedule_.slots()[id];
    if (!scheduled.read_ahead) continue;
    CachedBlock& taken = ahead[static_cast<size_t>(ahead_of_block[static_cast<size_t>(scheduled.block)])];
    CachedBlock& slot = cache_.slot(static_cast<int32_t>(id));
    slot.state = BlockState::kReady;
    slot.data = std::move(taken.data);
    slot.held_bytes = taken.held_bytes;
    taken.state = BlockState::kFreed;
  }
  for (CachedBlock& unused : ahead) {
    if (unused.state == BlockState::kReady) cache_.keep_spare(std::move(unused.data), unused.held_bytes);
  }
  ahead.clear();
  next_ahead_ = 0;
  cache_.trim_spares();
}

void BlockStream::read_ahead(std::vector<int64_t> blocks) {
  // In block order, so that the pieces of a row group follow each other and are read together.
  std::sort(blocks.begin(), blocks.end());
  {
    MutexLock lock(mutex_);
    for (const int64_t block : blocks) {
      CachedBlock ahead;
      ahead.block = block;
      cache_.ahead().push_back(std::move(ahead));
    }
  }
  work_.notify_all();
}

bool BlockStream::acquire(int64_t batch_idx, std::vector<SampleRef>& refs) {
  thread_local std::vector<int32_t> slots;
  thread_local std::vector<int64_t> rows;  // each sample's row in its block
  schedule_.batch_needs(batch_idx, slots, rows);
  // Each sample's block, taken under the lock; the samples are found in them after it: the blocks
  // stay as they are until this batch is released (only readers write a block, before it is ready),
  // and reading a batch's labels and ends misses the cache once per sample, which other workers and
  // the readers need not wait for.
  thread_local std::vector<DecodedBlock*> blocks;
  if (!wait_for_blocks(slots, blocks)) return false;

  refs.resize(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    DecodedBlock& data = *blocks[i];
    const int64_t row = rows[i];
    const ValueBytes image = row_value(fields_[0], data.fields()[0], row);
    refs[i].pixels = image.data();
    refs[i].size = static_cast<int64_t>(image.size());
    refs[i].label = reinterpret_cast<const int64_t*>(data.fields()[1].data)[row];
    refs[i].block = &data;
    refs[i].row = row;
  }
  return true;
}

bool BlockStream::wait_for_blocks(const std::vector<int32_t>& slots, std::vector<DecodedBlock*>& blocks) {
  MutexLock lock(mutex_);
  // Waiting on the first slot not ready, then the next, checks each slot once per wake-up. A
  // cancel() before this call counts as well as one during it: the batch was claimed before the
  // cancel, and the readers may already have dropped the reads it would wait for.
  size_t waiting_on = 0;
  for (;;) {
    if (cancelled_ || stopping_) return false;
    while (waiting_on < slots.size() && cache_.slot(slots[waiting_on]).state == BlockState::kReady) ++waiting_on;
    if (waiting_on == slots.size() || cache_.slot(slots[waiting_on]).state == BlockState::kFailed) break;
    ++acquirers_waiting_;
    block_ready_.wait(mutex_);
    --acquirers_waiting_;
  }
  if (waiting_on < slots.size()) rethrow_copy(cache_.slot(slots[waiting_on]).error);
  blocks.resize(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) blocks[i] = cache_.slot(slots[i]).data.get();
  return true;
}

void BlockStream::release(int64_t batch_idx) {
  bool wake_readers = false;
  {
    MutexLock lock(mutex_);
    const auto [begin, end] = frontier_.mark_assembled(schedule_, batch_idx);
    for (size_t load = begin; load < end; ++load) cache_.free_slots(schedule_.loads()[load].slots);
    wake_readers = readers_waiting_ > 0;
  }
  // Thousands of small blocks an epoch: waking nobody costs a system call each.
  if (wake_readers) work_.notify_all();
}

int64_t BlockStream::peak_bytes() const {
  MutexLock lock(mutex_);
  return cache_.peak_bytes();
}

bool BlockStream::next_read_ready() {
  // Skip slots whose load was freed before they were read (the batches needing them failed), and
  // those claimed already with an earlier slot of their read group.
  const std::vector<int32_t>& queue = schedule_.read_queue();
  while (next_read_ < queue.size() && cache_.slot(queue[next_read_]).state != BlockState::kPending) ++next_read_;
  if (reading_schedule()) return cache_.room_for_schedule(block_bytes(schedule_.slot(queue[next_read_]).block));
  // Every read of the schedule is under way, or it was cancelled: the rest of the budget may read
  // ahead for the next start().
  const std::vector<CachedBlock>& ahead = cache_.ahead();
  return next_ahead_ < ahead.size() && cache_.fits(block_bytes(ahead[next_ahead_].block));
}

void BlockStream::take_slot(Claim& claim, int32_t id) {
  const int64_t block = schedule_.slot(id).block;
  std::unique_ptr<DecodedBlock> data;
  const int64_t bytes = cache_.claim(source_->block_rows(block), block_bytes(block), data);
  CachedBlock& slot = cache_.slot(id);
  slot.state = BlockState::kReading;
  slot.held_bytes = bytes;
  claim.add(block, std::move(data), bytes);
  claim.slots.push_back(id);
}

BlockStream::Claim BlockStream::claim_scheduled() {
  Claim claim;
  const int32_t head = schedule_.read_queue()[next_read_++];
  take_slot(claim, head);
  // The rest of the group in this load only: every load the reads so far belong to is one the
  // batch at the frontier needs whole, and the budget holds those (LoaderPlan: required_rows), so
  // claiming ahead within them never keeps the frontier's own blocks out of the budget.
  for (int32_t next = schedule_.slot(head).next_in_group; next >= 0;) {
    const int32_t id = next;
    next = schedule_.slot(id).next_in_group;
    if (cache_.slot(id).state != BlockState::kPending) continue;
    if (!cache_.fits(block_bytes(schedule_.slot(id).block))) break;
    take_slot(claim, id);
  }
  return claim;
}

BlockStream::Claim BlockStream::claim_ahead() {
  Claim claim;
  std::vector<CachedBlock>& ahead = cache_.ahead();
  const int64_t group = source_->read_group(ahead[next_ahead_].block);
  do {
    CachedBlock& entry = ahead[next_ahead_];
    std::unique_ptr<DecodedBlock> data;
    const int64_t bytes = cache_.claim(source_->block_rows(entry.block), block_bytes(entry.block), data);
    entry.state = BlockState::kReading;
    claim.add(entry.block, std::move(data), bytes);
    claim.ahead.push_back(next_ahead_++);
  } while (next_ahead_ < ahead.size() && source_->read_group(ahead[next_ahead_].block) == group &&
           cache_.fits(block_bytes(ahead[next_ahead_].block)));
  return claim;
}

std::exception_ptr BlockStream::read_into(std::span<const int64_t> blocks,
                                          std::vector<std::unique_ptr<DecodedBlock>>& data,
                                          std::vector<uint8_t>& scratch) const {
  try {
    for (size_t i = 0; i < blocks.size(); ++i) {
      const std::vector<int64_t> capacity = region_capacity(*source_, blocks[i]);
      // A spare of the block's rows and bytes whose regions are split otherwise (encoded images,
      // sequences) is mapped afresh.
      if (!data[i] || !data[i]->holds(capacity)) {
        data[i] = std::make_unique<DecodedBlock>(source_->block_rows(blocks[i]), block_bytes(blocks[i]), fields_,
                                                 capacity, live_bytes_);
      }
    }
    std::vector<BlockBuffers> out;
    for (size_t i = 0; i < blocks.size(); ++i) out.push_back(data[i]->buffers());
    source_->read_blocks(blocks, scratch, out);
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
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
    // Blocks read ahead: start() waits for them, so cache_.ahead() keeps their entries until they are back.
    if (!scheduled) ++ahead_reading_;
    Claim claim = scheduled ? claim_scheduled() : claim_ahead();
    const uint64_t generation = generation_;
    lock.unlock();

    std::exception_ptr error;
    {
      // A remote read ends within a second once it is not wanted: the stream is destroyed, a read
      // of the schedule was replaced by start() (its block would be dropped), or a read ahead is of
      // another epoch than the one start() begins.
      const RequestAbortScope abort_unwanted([this, scheduled, generation] {
        if (reads_stopping_.load(std::memory_order_relaxed)) return true;
        return scheduled ? reads_wanted_generation_.load(std::memory_order_relaxed) != generation
                         : reads_ahead_unwanted_.load(std::memory_order_relaxed);
      });
      error = read_into(claim.blocks, claim.data, scratch);
    }

    lock.lock();
    if (scheduled) {
      finish_scheduled(claim, error, generation);
    } else {
      finish_ahead(claim, error);
    }
  }
}

void BlockStream::finish_ahead(Claim& claim, const std::exception_ptr& error) {
  --ahead_reading_;
  for (size_t i = 0; i < claim.ahead.size(); ++i) {
    CachedBlock& ahead = cache_.ahead()[claim.ahead[i]];
    if (error) {
      cache_.keep_spare(std::move(claim.data[i]), claim.bytes[i]);  // the next epoch reads it again and reports the error
      ahead.state = BlockState::kFailed;
    } else {
      ahead.state = BlockState::kReady;
      ahead.data = std::move(claim.data[i]);
      ahead.held_bytes = claim.bytes[i];
    }
  }
  ahead_done_.notify_all();
}

void BlockStream::finish_scheduled(Claim& claim, const std::exception_ptr& error, uint64_t generation) {
  if (generation != generation_) {
    // An old epoch's read: nobody wants it now.
    for (size_t i = 0; i < claim.blocks.size(); ++i) cache_.keep_spare(std::move(claim.data[i]), claim.bytes[i]);
    cache_.trim_spares();
    work_.notify_all();
    return;
  }
  for (size_t i = 0; i < claim.slots.size(); ++i) {
    CachedBlock& slot = cache_.slot(claim.slots[i]);
    if (error) {
      cache_.keep_spare(std::move(claim.data[i]), claim.bytes[i]);
      slot.state = BlockState::kFailed;
      slot.error = error;
    } else {
      slot.state = BlockState::kReady;
      slot.data = std::move(claim.data[i]);
    }
  }
  if (acquirers_waiting_ > 0) block_ready_.notify_all();
}

}  // namespace feeder::detail
