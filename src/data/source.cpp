#include "feeder/data/source.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "feeder/error.h"
#include "feeder/util/parallel_for.h"

namespace feeder {

namespace {

// Throws OptionsError unless `values` holds `size` samples' values of its field.
void check_values(const FieldValues& values, int64_t size) {
  const std::string what = "InMemorySource: field '" + values.field.name + "' ";
  if (!is_sequence(values.field)) {
    const int64_t bytes = field_bytes(values.field);
    if (bytes <= 0 || static_cast<int64_t>(values.bytes.size()) != size * bytes)
      throw OptionsError(what + "holds " + std::to_string(values.bytes.size()) + " bytes, not " + std::to_string(size) +
                         " values of " + std::to_string(bytes));
    return;
  }
  const int64_t element = element_bytes(values.field.type);
  if (static_cast<int64_t>(values.ends.size()) != size)
    throw OptionsError(what + "has " + std::to_string(values.ends.size()) + " ends, not one per sample (" +
                       std::to_string(size) + ")");
  if (!std::is_sorted(values.ends.begin(), values.ends.end()) || (size > 0 && values.ends.front() < 0) ||
      (size > 0 ? values.ends.back() : 0) * element != static_cast<int64_t>(values.bytes.size()))
    throw OptionsError(what + "ends must rise from 0 to its " + std::to_string(values.bytes.size() / element) + " values");
}

// Samples [first, first + rows) of `values` into a block's region.
void copy_values(const FieldValues& values, int64_t first, int64_t rows, const ValueRegion& out) {
  if (!is_sequence(values.field)) {
    std::memcpy(out.data, values.value(first).data(), static_cast<size_t>(rows * field_bytes(values.field)));
    return;
  }
  const int64_t element = element_bytes(values.field.type);
  const int64_t begin = first > 0 ? values.ends[static_cast<size_t>(first) - 1] : 0;
  for (int64_t r = 0; r < rows; ++r) out.ends[r] = values.ends[static_cast<size_t>(first + r)] - begin;
  const int64_t bytes = (rows > 0 ? out.ends[rows - 1] : 0) * element;
  if (bytes > out.capacity) throw std::logic_error("copy_values: a block's region is smaller than its values");
  if (bytes > 0) std::memcpy(out.data, values.bytes.data() + begin * element, static_cast<size_t>(bytes));
}

// What read_into_memory holds of a source's value fields while it reads: each fixed-size field's
// values in place for the whole set; each sequence's read a block apart (their sizes are known only
// once read), then appended in block order. Blocks are filled by different threads, each its own.
class HeldValues {
 public:
  explicit HeldValues(const SampleSource& source) : source_(source), fields_(source.value_fields()) {
    for (const Field& field : fields_)
      values_.push_back({field, std::vector<uint8_t>(static_cast<size_t>(source.size() * field_bytes(field))), {}});
    if (source.has_sequences()) blocks_.resize(static_cast<size_t>(source.num_blocks()));
  }

  // Where block b's values go, one region per value field; valid until take().
  std::vector<ValueRegion> regions(int64_t b) {
    const int64_t first = source_.block_starts()[static_cast<size_t>(b)];
    std::vector<ValueRegion> regions(fields_.size());
    for (size_t f = 0; f < fields_.size(); ++f) {
      if (!is_sequence(fields_[f])) {
        regions[f] = {values_[f].bytes.data() + first * field_bytes(fields_[f]), 0, nullptr};
        continue;
      }
      Block& block = blocks_[static_cast<size_t>(b)];
      block.bytes.resize(fields_.size());
      block.ends.resize(fields_.size());
      block.bytes[f].resize(static_cast<size_t>(source_.value_capacity(b, f)));
      block.ends[f].resize(static_cast<size_t>(source_.block_rows(b)));
      regions[f] = {block.bytes[f].data(), static_cast<int64_t>(block.bytes[f].size()), block.ends[f].data()};
    }
    return regions;
  }

  // Every field's values, the sequences' blocks appended in order.
  std::vector<FieldValues> take() {
    for (size_t f = 0; f < fields_.size(); ++f) {
      if (!is_sequence(fields_[f])) continue;
      const int64_t element = element_bytes(fields_[f].type);
      FieldValues& values = values_[f];
      values.ends.reserve(static_cast<size_t>(source_.size()));
      for (const Block& block : blocks_) {
        const int64_t done = static_cast<int64_t>(values.bytes.size()) / element;
        for (const int64_t end : block.ends[f]) values.ends.push_back(done + end);
        const int64_t bytes = (block.ends[f].empty() ? 0 : block.ends[f].back()) * element;
        values.bytes.insert(values.bytes.end(), block.bytes[f].begin(), block.bytes[f].begin() + bytes);
      }
    }
    return std::move(values_);
  }

 private:
  struct Block {
    std::vector<std::vector<uint8_t>> bytes;  // per value field (empty for a fixed-size one)
    std::vector<std::vector<int64_t>> ends;
  };
  const SampleSource& source_;
  const std::span<const Field> fields_;
  std::vector<FieldValues> values_;
  std::vector<Block> blocks_;  // sets with sequences: per block
};

}  // namespace

int64_t SampleSource::held_bytes_for_rows(int64_t rows) const {
  if (!variable_rows()) return rows * decoded_sample_bytes();
  const int64_t blocks = num_blocks();
  std::vector<int64_t> densest(static_cast<size_t>(blocks));
  std::iota(densest.begin(), densest.end(), int64_t{0});
  // Bytes per row compared exactly: a / r > b / s as a * s > b * r (128 bits: no overflow).
  std::sort(densest.begin(), densest.end(), [&](int64_t a, int64_t b) {
    return static_cast<__int128>(block_bytes(a)) * block_rows(b) > static_cast<__int128>(block_bytes(b)) * block_rows(a);
  });
  // A block may be held twice at once (a window's and the epoch's padding re-read of it), or more
  // often when the rows asked for exceed the set's: each densest block counts that many times.
  const int64_t total = size();
  const int64_t copies = std::max<int64_t>(2, total > 0 ? (rows + total - 1) / total : 1);
  int64_t bytes = 0;
  int64_t left = rows;
  for (const int64_t b : densest) {
    const int64_t block = block_rows(b);
    for (int64_t copy = 0; copy < copies && block > 0; ++copy) {
      if (left <= block) {  // the last rows: part of a block, rounded up
        return bytes + static_cast<int64_t>((static_cast<__int128>(block_bytes(b)) * left + block - 1) / block);
      }
      bytes += block_bytes(b);
      left -= block;
    }
  }
  return bytes;
}

ValueBytes FieldValues::value(int64_t i) const { return row_value(field, bytes.data(), ends.data(), i); }

std::span<const ValueRegion> BlockValues::block(const SampleSource& source, int64_t block_idx) {
  const std::span<const Field> fields = source.value_fields();
  values_.resize(fields.size());
  ends_.resize(fields.size());
  places_.resize(fields.size());
  for (size_t f = 0; f < fields.size(); ++f) {
    values_[f].resize(static_cast<size_t>(source.value_capacity(block_idx, f)));
    ends_[f].resize(is_sequence(fields[f]) ? static_cast<size_t>(source.block_rows(block_idx)) : 0);
    places_[f] = {values_[f].data(), static_cast<int64_t>(values_[f].size()), ends_[f].empty() ? nullptr : ends_[f].data()};
  }
  return places_;
}

std::vector<int64_t> read_group_starts(const SampleSource& source) {
  std::vector<int64_t> starts;
  for (int64_t b = 0; b < source.num_blocks(); ++b)
    if (b == 0 || source.read_group(b) != source.read_group(b - 1)) starts.push_back(b);
  starts.push_back(source.num_blocks());
  return starts;
}

int64_t SampleSource::region_bytes(int64_t block_idx, size_t field) const {
  const Field& f = schema().fields[field];
  const bool fixed = f.type != FieldType::kEncodedImage && !is_sequence(f);
  return fixed ? block_rows(block_idx) * field_bytes(f) : variable_bytes(block_idx, field);
}

int64_t SampleSource::block_bytes(int64_t block_idx) const {
  const std::vector<Field>& fields = schema().fields;
  constexpr auto kEnd = static_cast<int64_t>(sizeof(int64_t));
  const int64_t rows = block_rows(block_idx);
  int64_t bytes = labeled() ? 0 : rows * kEnd;  // the labels of an unlabeled set
  for (size_t f = 0; f < fields.size(); ++f) {
    bytes += region_bytes(block_idx, f);
    if (fields[f].type == FieldType::kEncodedImage || is_sequence(fields[f])) bytes += rows * kEnd;
  }
  return bytes;
}

bool SampleSource::has_sequences() const {
  const std::span<const Field> fields = value_fields();
  return std::any_of(fields.begin(), fields.end(), [](const Field& field) { return is_sequence(field); });
}

ImageShape SampleSource::shape() const {
  const Field& image = schema().fields.front();
  if (image.shape.size() != 3) return {0, 0, 0};
  return {image.shape[0], image.shape[1], image.shape[2]};
}

int64_t SampleSource::decoded_sample_bytes() const {
  // The image field's bytes: uint8 pixels, a float store's float32 values, none for encoded images.
  return field_bytes(schema().fields.front()) + static_cast<int64_t>(sizeof(int64_t)) + fields_bytes(value_fields());
}

InMemorySource::InMemorySource(std::shared_ptr<const ImageStore> store, std::string name,
                               std::vector<int64_t> block_starts, std::optional<uint64_t> fingerprint,
                               std::vector<FieldValues> values)
    : store_(std::move(store)), name_(std::move(name)), block_starts_(std::move(block_starts)), values_(std::move(values)) {
  if (!store_) throw OptionsError("InMemorySource needs an image store, got none");
  std::vector<Field> fields;
  for (const FieldValues& field : values_) {
    check_values(field, store_->size());
    fields.push_back(field.field);
  }
  schema_ = sample_schema(store_->shape(), false, store_->labeled(), fields, store_->pixel_type());
  if (block_starts_.empty()) block_starts_ = {0, store_->size()};
  if (block_starts_.front() != 0 || block_starts_.back() != store_->size() ||
      !std::is_sorted(block_starts_.begin(), block_starts_.end()))
    throw OptionsError("InMemorySource: block_starts must rise from 0 to the store's size");
  if (fingerprint) {
    std::call_once(fingerprint_once_, [&] { fingerprint_ = *fingerprint; });
  }
}

uint64_t InMemorySource::fingerprint() const {
  std::call_once(fingerprint_once_, [this] {
    XXH3_state_t* state = XXH3_createState();
    if (!state) throw std::bad_alloc();
    XXH3_64bits_reset(state);
    const int64_t header[] = {store_->shape().channels, store_->shape().height, store_->shape().width,
                              store_->size(), store_->labeled() ? 1 : 0};
    XXH3_64bits_update(state, header, sizeof(header));
    XXH3_64bits_update(state, store_->pixels().data(), store_->pixels().size());
    XXH3_64bits_update(state, store_->labels().data(), store_->labels().size_bytes());
    fingerprint_ = XXH3_64bits_digest(state);
    XXH3_freeState(state);
  });
  return fingerprint_;
}

void InMemorySource::read_blocks(std::span<const int64_t> blocks, std::vector<uint8_t>&,
                                 std::span<const BlockBuffers> out) const {
  // Blocks are read as uint8 pixels (streaming, read_into_memory); a float32 store is only gathered from.
  if (store_->pixel_type() != PixelType::kUint8)
    throw OptionsError(name_ + ": a float32 store is served from memory only, not read as blocks of uint8 pixels");
  for (size_t i = 0; i < blocks.size(); ++i) {
    const int64_t block_idx = blocks[i];
    if (block_idx < 0 || block_idx >= num_blocks())
      throw OptionsError(name_ + ": no block " + std::to_string(block_idx) + " (it has " + std::to_string(num_blocks()) + ")");
    const int64_t first = block_starts_[static_cast<size_t>(block_idx)];
    const int64_t rows = block_rows(block_idx);
    std::memcpy(out[i].payload, store_->image(first), static_cast<size_t>(rows * store_->image_bytes()));
    std::copy_n(store_->labels().begin() + first, rows, out[i].labels);
    for (size_t f = 0; f < values_.size(); ++f) copy_values(values_[f], first, rows, out[i].values[f]);
  }
}

int64_t InMemorySource::variable_bytes(int64_t block_idx, size_t field) const {
  if (field < value_index(0)) return 0;
  const FieldValues& values = values_[field - value_index(0)];
  if (!is_sequence(values.field)) return 0;
  const int64_t first = block_starts_[static_cast<size_t>(block_idx)];
  const int64_t last = block_starts_[static_cast<size_t>(block_idx) + 1];
  const auto end = [&](int64_t i) { return i > 0 ? values.ends[static_cast<size_t>(i) - 1] : 0; };
  return (end(last) - end(first)) * element_bytes(values.field.type);
}

std::shared_ptr<InMemorySource> read_into_memory(const SampleSource& source, int num_threads) {
  const int threads = resolve_num_threads(num_threads, "read_into_memory: num_threads");
  auto store = std::make_shared<ImageStore>(source.shape(), source.size(), source.labeled());
  HeldValues values(source);
  const auto starts = source.block_starts();
  // Read groups (runs of blocks sharing one), each read at once: the pieces of a row group read
  // one by one would decode its shared pages once per piece.
  const std::vector<int64_t> group_starts = read_group_starts(source);
  const auto num_groups = static_cast<int64_t>(group_starts.size()) - 1;
  // Contiguous ranges of groups, one per thread, each with its own read buffer.
  const int64_t num_ranges = std::max<int64_t>(1, std::min<int64_t>(threads, num_groups));
  parallel_for(num_ranges, static_cast<int>(num_ranges), [&](int64_t range) {
    std::vector<uint8_t> scratch;
    std::vector<int64_t> blocks;
    std::vector<BlockBuffers> out;
    // Per block of the group, its values' regions: out[i].values spans one (moving the outer vector
    // keeps the inner ones' memory).
    std::vector<std::vector<ValueRegion>> regions;
    for (int64_t g = num_groups * range / num_ranges; g < num_groups * (range + 1) / num_ranges; ++g) {
      blocks.clear();
      out.clear();
      regions.clear();
      for (int64_t b = group_starts[static_cast<size_t>(g)]; b < group_starts[static_cast<size_t>(g) + 1]; ++b) {
        const int64_t first = starts[static_cast<size_t>(b)];
        blocks.push_back(b);
        regions.push_back(values.regions(b));
        out.push_back({.payload = store->image(first),
                       .capacity = source.block_rows(b) * store->image_bytes(),
                       .labels = store->labels().data() + first,
                       .values = regions.back()});
      }
      source.read_blocks(blocks, scratch, out);
    }
  });
  return std::make_shared<InMemorySource>(std::move(store), source.name(),
                                          std::vector<int64_t>(starts.begin(), starts.end()), source.fingerprint(),
                                          values.take());
}

std::vector<int64_t> read_labels(const SampleSource& source, int num_threads) {
  if (!source.labeled()) return {};
  if (std::vector<int64_t> alone = source.labels_alone(); !alone.empty()) return alone;
  std::vector<int64_t> labels(static_cast<size_t>(source.size()));
  const int threads = resolve_num_threads(num_threads, "read_labels: num_threads");
  const int64_t num_blocks = source.num_blocks();
  const auto starts = source.block_starts();
  // Contiguous ranges of blocks, one per thread, each with its own buffers.
  const int64_t num_ranges = std::max<int64_t>(1, std::min<int64_t>(threads, num_blocks));
  parallel_for(num_ranges, static_cast<int>(num_ranges), [&](int64_t range) {
    std::vector<uint8_t> scratch, samples;
    std::vector<int64_t> ends;
    BlockValues values;  // dropped, as the samples are
    for (int64_t b = num_blocks * range / num_ranges; b < num_blocks * (range + 1) / num_ranges; ++b) {
      const auto rows = static_cast<size_t>(source.block_rows(b));
      samples.resize(source.encoded() ? static_cast<size_t>(source.block_bytes(b)) : rows * static_cast<size_t>(source.shape().num_pixels()));
      ends.resize(rows);
      source.read_block(b, scratch,
                        {.payload = samples.data(),
                         .capacity = static_cast<int64_t>(samples.size()),
                         .ends = source.encoded() ? ends.data() : nullptr,
                         .labels = labels.data() + starts[static_cast<size_t>(b)],
                         .values = values.block(source, b)});
    }
  });
  return labels;
}

}  // namespace feeder
