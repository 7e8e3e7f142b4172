#pragma once

// Internal to the loader: the batch buffers (BatchBuffer) and the pool that recycles them; any thread
// (workers take buffers, whoever frees a Batch gives one back).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "feeder/data/loader.h"
#include "feeder/data/schema.h"
#include "feeder/util/made_in_process.h"
#include "util/mutex.h"

namespace feeder::detail {

// A batch's values of a sequence field: each row's back to back, row r's in
// [offsets[r], offsets[r + 1]) elements. Grows to the largest batch's and keeps its room (its
// values are not in the pool's allocation, so not page-locked).
struct SequenceValues {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> offsets;  // rows + 1, from 0
};

// One batch's memory: one region per field of the batch's schema (the images as the batch holds
// them, the labels, the value fields) and the sample indices, in a single allocation; a sequence
// field's values beside it.
struct BatchBuffer {
  void* memory = nullptr;
  size_t size_bytes = 0;
  std::span<const Field> fields;     // the pool's batch schema (it outlives its buffers)
  std::vector<uint8_t*> regions;     // per field f: (batch_size, field_bytes(fields[f])); null for a sequence
  std::vector<SequenceValues> sequences;  // per field f, used for a sequence
  int64_t* sample_indices = nullptr;  // (batch_size)

  void* images() const { return regions[0]; }
  int64_t* labels() const { return reinterpret_cast<int64_t*>(regions[1]); }
  // The value fields, after the image and the label, and value field f's region and sequence.
  std::span<const Field> value_fields() const { return fields.subspan(2); }
  uint8_t* value_region(size_t f) const { return regions.at(f + 2); }
  SequenceValues& value_sequence(size_t f) { return sequences.at(f + 2); }
};

// What a batch holds: its images as `dtype` (float32, or uint8 pixels) of `shape`, an int64 label,
// then `values`.
Schema batch_schema(const ImageShape& shape, ImageDtype dtype, std::span<const Field> values);

// The bytes a buffer of `batch_size` rows of `schema` takes (each field's region, then the sample
// indices; a sequence field's values are held beside it, as many as its rows have).
int64_t batch_buffer_bytes(int64_t batch_size, const Schema& schema);

// Recycles batch buffers. acquire() hands out a buffer whose deleter returns it to the free list,
// so in steady state the loader allocates nothing. Buffers keep the pool alive (the deleter holds a
// shared_ptr to it), so batches may outlive the loader. Thread safe.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  // Buffers of `batch_size` rows of `schema` (batch_schema).
  BufferPool(std::shared_ptr<BufferAllocator> allocator, int64_t batch_size, Schema schema);
  ~BufferPool();

  std::shared_ptr<BatchBuffer> acquire();
  bool pinned() const { return allocator_->pinned(); }
  // Buffers allocated so far (the free list's plus those handed out).
  int64_t num_allocated() const { return num_allocated_.load(std::memory_order_relaxed); }

 private:
  void release(BatchBuffer* buffer);

  std::shared_ptr<BufferAllocator> allocator_;
  int64_t batch_size_;
  const Schema schema_;
  Mutex mutex_;
  std::vector<BatchBuffer*> free_ GUARDED_BY(mutex_);
  MadeInProcess made_in_;  // a forked child returns no buffer (release)
  std::atomic<int64_t> num_allocated_{0};
};

}  // namespace feeder::detail
