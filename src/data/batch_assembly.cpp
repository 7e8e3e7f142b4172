// The loader's batch assemblies (BatchAssembly): one per kind of source, picked once; workers run
// them concurrently, each on a batch of its own, so they hold nothing mutable.

#include "data/detail/batch_assembly.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "data/detail/batch_sequencer.h"
#include "data/detail/block_stream.h"
#include "data/detail/convert.h"
#include "feeder/error.h"

namespace feeder::detail {
namespace {

// Positions past the order's end are the padding (EpochPlan), and come last in a rank's slice.
int64_t order_size(const EpochView& epoch) { return static_cast<int64_t>(epoch.order.order().size()); }

// This thread's list of where a batch's samples are, reused from batch to batch.
std::vector<SampleRef>& sample_refs(int64_t count) {
  thread_local std::vector<SampleRef> refs;
  refs.resize(static_cast<size_t>(count));
  return refs;
}

// One stored image into the batch as it is (float32 values of a float store, or uint8 pixels
// served as uint8): a copy, transposed to (H,W,C) for kNhwc.
template <typename T>
void copy_image(const T* src, T* dst, const ImageShape& shape, ImageLayout layout) {
  const int64_t plane = shape.height * shape.width;
  if (layout != ImageLayout::kNhwc || shape.channels == 1) {
    std::memcpy(dst, src, static_cast<size_t>(shape.num_pixels()) * sizeof(T));
    return;
  }
  for (int64_t c = 0; c < shape.channels; ++c)
    for (int64_t p = 0; p < plane; ++p) dst[p * shape.channels + c] = src[c * plane + p];
}

// The samples at positions [first, first + refs.size()) of the order into `buffer`, with their
// indices and labels: uint8 pixels converted to normalised float32 (or copied, served as uint8),
// a float32 store's values copied as they are.
void write_pixel_rows(const EpochView& epoch, int64_t first, std::span<const SampleRef> refs, bool float_store,
                      BatchBuffer& buffer) {
  const LoaderOptions& options = epoch.plan.options();
  const ImageShape shape = epoch.plan.sample_shape();
  const int64_t pixels = shape.num_pixels();
  const float scale = 1.0f / (255.0f * options.normalization.std);
  const float bias = -options.normalization.mean / options.normalization.std;
  for (size_t i = 0; i < refs.size(); ++i) {
    const SampleRef& ref = refs[i];
    const auto row = static_cast<int64_t>(i);
    buffer.sample_indices[i] = epoch.order.sample_at(first + row);
    buffer.labels()[i] = ref.label;
    if (options.dtype == ImageDtype::kUint8) {  // the pixels as stored: a copy
      copy_image(ref.pixels, static_cast<uint8_t*>(buffer.images()) + row * pixels, shape, options.layout);
      continue;
    }
    float* dst = static_cast<float*>(buffer.images()) + row * pixels;
    if (float_store)
      copy_image(reinterpret_cast<const float*>(ref.pixels), dst, shape, options.layout);
    else if (options.layout == ImageLayout::kNhwc && shape.channels > 1)
      convert_pixels_to_hwc(ref.pixels, dst, shape.channels, shape.height * shape.width, scale, bias);
    else
      convert_pixels(ref.pixels, dst, pixels, scale, bias);
  }
}

// Row `row`'s value fields (SampleSource::value_fields): field f's from value_of(f) (ValueBytes),
// copied as bytes; the fields' types only size them. Rows are written in order from 0: a
// sequence's values are appended (BufferPool::acquire empties them).
template <class ValueOf>
void write_row_values(int64_t row, BatchBuffer& buffer, const ValueOf& value_of) {
  const std::span<const Field> fields = buffer.value_fields();
  for (size_t f = 0; f < fields.size(); ++f) {
    const ValueBytes value = value_of(f);
    if (!is_sequence(fields[f])) {
      std::memcpy(buffer.value_region(f) + static_cast<size_t>(row) * value.size(), value.data(), value.size());
      continue;
    }
    SequenceValues& sequence = buffer.value_sequence(f);
    sequence.bytes.insert(sequence.bytes.end(), value.begin(), value.end());
    sequence.offsets.push_back(static_cast<int64_t>(sequence.bytes.size()) / element_bytes(fields[f].type));
  }
}

// Rows [0, rows): row i's value of field f from value_of(i, f).
template <class ValueOf>
void write_values(int64_t rows, BatchBuffer& buffer, const ValueOf& value_of) {
  if (buffer.value_fields().empty()) return;
  for (int64_t i = 0; i < rows; ++i) write_row_values(i, buffer, [&](size_t f) { return value_of(i, f); });
}

// A value of a sample in a block the batch holds.
ValueBytes block_value(const SampleRef& ref, size_t f, const BatchBuffer& buffer) {
  return row_value(buffer.value_fields()[f], ref.block->values()[f], ref.row);
}

void write_block_values(std::span<const SampleRef> refs, BatchBuffer& buffer) {
  write_values(static_cast<int64_t>(refs.size()), buffer,
               [&](int64_t i, size_t f) { return block_value(refs[static_cast<size_t>(i)], f, buffer); });
}

Batch pixel_batch(const EpochView& epoch, std::shared_ptr<BatchBuffer> buffer, int64_t batch_index) {
  const auto [first, last] = epoch.order.batch_span(batch_index);
  const int64_t num_padding = std::max<int64_t>(0, last - std::max(first, order_size(epoch)));
  const LoaderOptions& options = epoch.plan.options();
  return Batch(std::move(buffer), batch_index, last - first, epoch.plan.sample_shape(), options.layout, options.dtype,
               num_padding);
}

// The rows of a batch of encoded samples, each made by the sample stage with its own generator.
// With skip_bad_samples, a sample the stage refuses (DataError) is left out and the rows after it
// move up; its reason is kept for the batch.
class StagedRows {
 public:
  StagedRows(const EpochView& epoch, const SampleSource& source, BatchBuffer& buffer, int64_t first)
      : epoch_(epoch), source_(source), buffer_(buffer), first_padding_(std::max(first, order_size(epoch))) {}

  // The sample at `position` of the epoch's order; `ref` where its values are when it has any.
  void add(int64_t position, int64_t sample, const SampleView& view, const SampleRef* ref = nullptr) {
    const LoaderOptions& options = epoch_.plan.options();
    const int64_t row_bytes = epoch_.plan.sample_shape().num_pixels() * dtype_bytes(options.dtype);
    SplitMix64 rng = sample_generator(options.seed, epoch_.epoch, sample, epoch_.order.occurrence(position));
    try {
      options.sample_stage->run(view.bytes, source_.sample_name(sample), rng, options.layout, options.dtype,
                                static_cast<uint8_t*>(buffer_.images()) + rows_ * row_bytes);
    } catch (const DataError& error) {
      if (!options.skip_bad_samples) throw;
      skipped_.push_back(error.what());
      return;
    }
    buffer_.sample_indices[rows_] = sample;
    buffer_.labels()[rows_] = view.label;
    write_row_values(rows_, buffer_, [&](size_t f) { return block_value(*ref, f, buffer_); });
    if (position >= first_padding_) ++padding_;
    ++rows_;
  }

  Batch finish(std::shared_ptr<BatchBuffer> buffer, int64_t batch_index) {
    const LoaderOptions& options = epoch_.plan.options();
    return Batch(std::move(buffer), batch_index, rows_, epoch_.plan.sample_shape(), options.layout, options.dtype,
                 padding_, std::move(skipped_));
  }

 private:
  const EpochView& epoch_;
  const SampleSource& source_;
  BatchBuffer& buffer_;
  int64_t first_padding_;  // positions from here on only pad the epoch
  int64_t rows_ = 0;
  int64_t padding_ = 0;
  std::vector<std::string> skipped_;
};

// Pixels of an ImageStore in memory, read in place.
class StorePixels : public BatchAssembly {
 public:
  StorePixels(std::shared_ptr<const InMemorySource> source, std::shared_ptr<BufferPool> pool)
      : source_(std::move(source)),
        store_(*source_->store()),
        float_store_(store_.pixel_type() == PixelType::kFloat32),
        pool_(std::move(pool)) {}

  Batch assemble(const EpochView& epoch, int64_t batch_index) const override {
    const auto [first, last] = epoch.order.batch_span(batch_index);
    std::vector<SampleRef>& refs = sample_refs(last - first);
    for (int64_t i = 0; i < last - first; ++i) {
      const int64_t sample = epoch.order.sample_at(first + i);
      refs[static_cast<size_t>(i)] = {.pixels = store_.image(sample), .label = store_.label(sample)};
    }
    std::shared_ptr<BatchBuffer> buffer = pool_->acquire();
    write_pixel_rows(epoch, first, refs, float_store_, *buffer);
    const int64_t begin = first;  // a structured binding cannot be captured before C++20's clang 16
    write_values(last - first, *buffer,
                 [&](int64_t i, size_t f) { return source_->value(f, epoch.order.sample_at(begin + i)); });
    finish_streaming();
    return pixel_batch(epoch, std::move(buffer), batch_index);
  }

 private:
  std::shared_ptr<const InMemorySource> source_;
  const ImageStore& store_;  // source_'s
  const bool float_store_;
  std::shared_ptr<BufferPool> pool_;
};

// Pixels of the stream's decoded blocks, which the batch holds (BlockLease) until it is assembled.
class StreamedPixels : public BatchAssembly {
 public:
  StreamedPixels(std::shared_ptr<BufferPool> pool, BlockStream& stream) : pool_(std::move(pool)), stream_(stream) {}

  Batch assemble(const EpochView& epoch, int64_t batch_index) const override {
    const auto [first, last] = epoch.order.batch_span(batch_index);
    std::vector<SampleRef>& refs = sample_refs(last - first);
    std::optional<BlockLease> lease(std::in_place, stream_, batch_index);
    if (!lease->acquire(refs)) throw BatchCancelled{};
    std::shared_ptr<BatchBuffer> buffer = pool_->acquire();
    write_pixel_rows(epoch, first, refs, false, *buffer);
    write_block_values(refs, *buffer);
    finish_streaming();
    lease.reset();
    return pixel_batch(epoch, std::move(buffer), batch_index);
  }

 private:
  std::shared_ptr<BufferPool> pool_;
  BlockStream& stream_;
};

// Encoded samples held in memory (RandomAccessSource::sample), each through the sample stage.
class EncodedInMemory : public BatchAssembly {
 public:
  EncodedInMemory(std::shared_ptr<const RandomAccessSource> source, std::shared_ptr<BufferPool> pool)
      : source_(std::move(source)), pool_(std::move(pool)) {
    if (!source_->value_fields().empty())
      throw std::logic_error(source_->name() + ": encoded samples in memory carry no value fields");
  }

  Batch assemble(const EpochView& epoch, int64_t batch_index) const override {
    const auto [first, last] = epoch.order.batch_span(batch_index);
    std::shared_ptr<BatchBuffer> buffer = pool_->acquire();
    StagedRows rows(epoch, *source_, *buffer, first);
    for (int64_t p = first; p < last; ++p) {
      const int64_t sample = epoch.order.sample_at(p);
      rows.add(p, sample, source_->sample(sample));
    }
    return rows.finish(std::move(buffer), batch_index);
  }

 private:
  std::shared_ptr<const RandomAccessSource> source_;
  std::shared_ptr<BufferPool> pool_;
};

// Encoded samples of the stream's blocks, each through the sample stage while the batch holds them.
class EncodedStreamed : public BatchAssembly {
 public:
  EncodedStreamed(std::shared_ptr<const SampleSource> source, std::shared_ptr<BufferPool> pool, BlockStream& stream)
      : source_(std::move(source)), pool_(std::move(pool)), stream_(stream) {}

  Batch assemble(const EpochView& epoch, int64_t batch_index) const override {
    const auto [first, last] = epoch.order.batch_span(batch_index);
    std::vector<SampleRef>& refs = sample_refs(last - first);
    std::optional<BlockLease> lease(std::in_place, stream_, batch_index);
    if (!lease->acquire(refs)) throw BatchCancelled{};
    std::shared_ptr<BatchBuffer> buffer = pool_->acquire();
    StagedRows rows(epoch, *source_, *buffer, first);
    for (int64_t i = 0; i < last - first; ++i) {
      const SampleRef& ref = refs[static_cast<size_t>(i)];
      rows.add(first + i, epoch.order.sample_at(first + i),
               SampleView{std::span<const uint8_t>(ref.pixels, static_cast<size_t>(ref.size)), ref.label}, &ref);
    }
    finish_streaming();
    lease.reset();
    return rows.finish(std::move(buffer), batch_index);
  }

 private:
  std::shared_ptr<const SampleSource> source_;
  std::shared_ptr<BufferPool> pool_;
  BlockStream& stream_;
};

}  // namespace

std::unique_ptr<BatchAssembly> make_batch_assembly(std::shared_ptr<const SampleSource> source,
                                                   std::shared_ptr<BufferPool> pool, BlockStream* stream) {
  if (auto store = std::dynamic_pointer_cast<const InMemorySource>(source))
    return std::make_unique<StorePixels>(std::move(store), std::move(pool));
  if (auto held = std::dynamic_pointer_cast<const RandomAccessSource>(source))
    return std::make_unique<EncodedInMemory>(std::move(held), std::move(pool));
  if (stream == nullptr) throw std::logic_error(source->name() + ": a stream's assembly needs the stream");
  if (source->encoded()) return std::make_unique<EncodedStreamed>(std::move(source), std::move(pool), *stream);
  return std::make_unique<StreamedPixels>(std::move(pool), *stream);
}

}  // namespace feeder::detail
