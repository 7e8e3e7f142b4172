// The batch buffers' pool and its default allocator (64-byte aligned, on huge pages when large); any
// thread.

#include "data/detail/buffer_pool.h"

#include <cstdlib>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "feeder/error.h"
#include "feeder/io/large_buffer.h"
#include "feeder/util/byte_size.h"

namespace feeder::detail {
namespace {

constexpr size_t kAlignment = 64;

size_t round_up(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

class AlignedAllocator : public BufferAllocator {
 public:
  // Large batches (a batch of 256 float images of 224x224 is 154 MB) on huge pages, as the image
  // store: filling one faults once per 2 MiB instead of once per 4 KiB page, and writing samples
  // into it misses the TLB as rarely.
  void* allocate(size_t size_bytes) override { return allocate_large_buffer(round_up(size_bytes)).release(); }
  void deallocate(void* data, size_t) override { std::free(data); }
};

// Where a buffer of `batch_size` rows of `schema` keeps each field's region, then the sample
// indices, and its size.
struct BatchLayout {
  std::vector<size_t> offsets;  // per field
  size_t indices_at = 0;
  size_t size_bytes = 0;
};

BatchLayout batch_layout(int64_t batch_size, const Schema& schema) {
  const auto batch = static_cast<size_t>(batch_size);
  BatchLayout layout;
  for (const Field& field : schema.fields) {
    layout.offsets.push_back(layout.indices_at);
    layout.indices_at += round_up(batch * static_cast<size_t>(field_bytes(field)));
  }
  layout.size_bytes = layout.indices_at + round_up(batch * sizeof(int64_t));
  return layout;
}

}  // namespace

Schema batch_schema(const ImageShape& shape, ImageDtype dtype, std::span<const Field> values) {
  Schema schema;
  schema.fields.push_back(
      {"image", dtype == ImageDtype::kUint8 ? FieldType::kPixels : FieldType::kFloat32, {shape.channels, shape.height, shape.width}});
  schema.fields.push_back({"label", FieldType::kInt64, {}});
  schema.fields.insert(schema.fields.end(), values.begin(), values.end());
  return schema;
}

int64_t batch_buffer_bytes(int64_t batch_size, const Schema& schema) {
  return static_cast<int64_t>(batch_layout(batch_size, schema).size_bytes);
}

BufferPool::BufferPool(std::shared_ptr<BufferAllocator> allocator, int64_t batch_size, Schema schema)
    : allocator_(allocator ? std::move(allocator) : std::make_shared<AlignedAllocator>()),
      batch_size_(batch_size),
      schema_(std::move(schema)) {}

BufferPool::~BufferPool() {
  for (BatchBuffer* buffer : free_) {
    allocator_->deallocate(buffer->memory, buffer->size_bytes);
    delete buffer;
  }
}

std::shared_ptr<BatchBuffer> BufferPool::acquire() {
  BatchBuffer* buffer = nullptr;
  {
    MutexLock lock(mutex_);
    if (!free_.empty()) {
      buffer = free_.back();
      free_.pop_back();
    }
  }
  if (!buffer) {
    const BatchLayout layout = batch_layout(batch_size_, schema_);
    auto owned = std::make_unique<BatchBuffer>();
    owned->size_bytes = layout.size_bytes;
    try {
      owned->memory = allocator_->allocate(owned->size_bytes);
    } catch (const std::bad_alloc&) {
      throw OptionsError("cannot allocate a batch buffer of " + format_byte_size(static_cast<int64_t>(owned->size_bytes)) +
                         " (batch_size " + std::to_string(batch_size_) + " x " +
                         std::to_string(field_bytes(schema_.fields.front())) +
                         " bytes of image, labels, indices and values): lower batch_size");
    }
    num_allocated_.fetch_add(1, std::memory_order_relaxed);
    auto* base = static_cast<uint8_t*>(owned->memory);
    owned->fields = schema_.fields;
    for (size_t f = 0; f < schema_.fields.size(); ++f)
      owned->regions.push_back(is_sequence(schema_.fields[f]) ? nullptr : base + layout.offsets[f]);
    owned->sequences.resize(schema_.fields.size());
    owned->sample_indices = reinterpret_cast<int64_t*>(base + layout.indices_at);
    buffer = owned.release();
  }
  for (SequenceValues& sequence : buffer->sequences) {  // a batch's rows append to them
    sequence.bytes.clear();
    sequence.offsets.assign(1, 0);
  }
  return std::shared_ptr<BatchBuffer>(buffer, [pool = shared_from_this()](BatchBuffer* b) { pool->release(b); });
}

void BufferPool::release(BatchBuffer* buffer) {
  // A batch freed in a forked child: the parent's workers may have held the lock at the fork.
  if (made_in_.forked()) return;
  MutexLock lock(mutex_);
  free_.push_back(buffer);
}

}  // namespace feeder::detail
