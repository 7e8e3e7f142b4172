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
#include "util/mutex.h"

namespace feeder::detail {

// A batch's values of a sequence field: each row's back to back, row r's in
// [offsets[r], offsets[r + 1]) elements. Grows to the largest batch's and keeps its room (its
// values are not in the pool's allocation, so not page-locked).
struct SequenceValues {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> offsets;  // rows + 1, from 0
};

// One batch's memory: images, labels, sample indices and one region per fixed-size value field, in
// a single allocation; a sequence field's values beside it.
struct BatchBuffer {
  void* memory = nullptr;
  size_t size_bytes = 0;
  void* images = nullptr;           // (batch_size, bytes_per_image)
  int64_t* labels = nullptr;        // (batch_size)
  int64_t* sample_indices = nullptr;  // (batch_size)
  std::vector<uint8_t*> values;     // per value field f: (batch_size, field_bytes(fields[f])); null for a sequence
  std::vector<SequenceValues> sequences;  // per value field f, used for a sequence
  std::span<const Field> fields;    // the pool's value fields (it outlives its buffers)
};

// Recycles batch buffers. acquire() hands out a buffer whose deleter returns it to the free list,
// so in steady state the loader allocates nothing. Buffers keep the pool alive (the deleter holds a
// shared_ptr to it), so batches may outlive the loader. Thread safe.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  BufferPool(std::shared_ptr<BufferAllocator> allocator, int64_t batch_size, int64_t bytes_per_image,
             std::vector<Field> value_fields = {});
  ~BufferPool();

  std::shared_ptr<BatchBuffer> acquire();
  bool pinned() const { return allocator_->pinned(); }
  // Buffers allocated so far (the free list's plus those handed out).
  int64_t num_allocated() const { return num_allocated_.load(std::memory_order_relaxed); }

 private:
  void release(BatchBuffer* buffer);

  std::shared_ptr<BufferAllocator> allocator_;
  int64_t batch_size_;
  int64_t bytes_per_image_;
  const std::vector<Field> value_fields_;
  Mutex mutex_;
  std::vector<BatchBuffer*> free_ GUARDED_BY(mutex_);
  std::atomic<int64_t> num_allocated_{0};
};

}  // namespace feeder::detail
