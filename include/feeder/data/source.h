#pragma once

// Where the loader's samples come from: an in-memory ImageStore, or a streaming source that reads
// and decodes blocks (Parquet row groups) on demand. The loader, its workers and the LibTorch
// adapter work over either.
//
// Thread safety: every method is const and may be called from any number of threads at once.
// Ownership: the loader holds its source through a shared_ptr, so a source outlives every loader
// and batch that reads from it.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "feeder/data/sample_stage.h"
#include "feeder/data/schema.h"
#include "feeder/store/image_store.h"

namespace feeder {

// Where a block's read puts its samples, each region sized by the caller for the block's rows:
// pixels (rows x the shape's pixels, uint8 row-major) or, for an encoded source, the samples' bytes
// back to back in payload[0, capacity), sample r's ending at ends[r]; each row's label; and field
// f's values at values[f] for each of the source's value_fields().
struct BlockBuffers {
  uint8_t* payload = nullptr;
  int64_t capacity = 0;
  int64_t* ends = nullptr;  // encoded sources
  int64_t* labels = nullptr;
  std::span<const ValueRegion> values = {};
};

class SampleSource;

// Room for a block's values (BlockBuffers::values), for a caller reading blocks outside a loader
// (a summary, a conversion, read_labels), reused from block to block.
class BlockValues {
 public:
  // Places for block `block_idx`'s values of each of `source`'s value fields; valid until the next
  // call.
  std::span<const ValueRegion> block(const SampleSource& source, int64_t block_idx);

 private:
  std::vector<std::vector<uint8_t>> values_;
  std::vector<std::vector<int64_t>> ends_;
  std::vector<ValueRegion> places_;
};

// A set's samples as blocks (read_blocks): what every source is. A source that also holds every
// sample in memory is a RandomAccessSource (below); the loader picks how it assembles batches by
// which of the two a source is, once, when it is built.
class SampleSource {
 public:
  virtual ~SampleSource() = default;

  virtual int64_t size() const = 0;  // samples
  // What one sample holds, fixed for the source's life: the image field first ("image": pixels of
  // a fixed shape, float32 values of a float store, or encoded images of any length), then
  // "label" when the set is labeled, then the value fields (image_schema, sample_schema).
  virtual const Schema& schema() const = 0;
  // The image field's {C, H, W}; {0, 0, 0} for encoded images (the sample stage's output shape is
  // the batch's).
  ImageShape shape() const;
  // False for an unlabeled set: every label is kNoLabel.
  bool labeled() const { return schema().fields.size() > 1 && schema().fields[1].name == "label"; }
  // Encoded samples (an image file's bytes each, of any length): the loader runs
  // LoaderOptions::sample_stage on each. False for sources of fixed-size pixels.
  bool encoded() const { return schema().fields.front().type == FieldType::kEncodedImage; }
  // Identifies the data: equal for the same samples in the same order, different (with
  // overwhelming probability) otherwise. Loader states carry it so a resume on other data is refused.
  virtual uint64_t fingerprint() const = 0;
  // A path or a short description, for messages.
  virtual std::string name() const = 0;

  // The named values of each sample besides its image and label (a per-sample weight, a target, an
  // embedding, a sequence of tokens): the schema's fields after them; a batch carries them stacked
  // (Batch::value). Empty for a set of images and labels alone.
  std::span<const Field> value_fields() const {
    return std::span<const Field>(schema().fields).subspan(labeled() ? 2 : 1);
  }
  // The most bytes schema field `field`'s values take in block b, for a field of no fixed size
  // (an encoded image, whose field is the first; a sequence), known before reading it (from the
  // file's metadata or the files' sizes), for the budget and the block's room. Sources with such
  // fields say; 0 otherwise.
  virtual int64_t variable_bytes(int64_t block_idx, size_t field) const { return 0; }
  // The bytes schema field f's region of block b needs (ValueRegion::capacity): rows x field_bytes
  // for a fixed-size field, variable_bytes for one of no fixed size (which also has an int64 end
  // per row).
  int64_t region_bytes(int64_t block_idx, size_t field) const;
  // The same for value field f (value_fields()[f]).
  int64_t value_capacity(int64_t block_idx, size_t field) const { return region_bytes(block_idx, value_index(field)); }
  // The schema index of value field f.
  size_t value_index(size_t field) const { return field + (labeled() ? 2 : 1); }
  // Whether a value field is a sequence: blocks then differ in bytes per row.
  bool has_sequences() const;
  // Sample i in messages: a path, a tar member, a Parquet row.
  virtual std::string sample_name(int64_t i) const { return name() + ": sample " + std::to_string(i); }

  // Blocks are the unit of shuffling and holding: contiguous runs of samples (pieces of a Parquet
  // row group). Block b holds samples [block_starts()[b], block_starts()[b + 1]); there are
  // block_starts().size() - 1 blocks and the last entry is size().
  virtual std::span<const int64_t> block_starts() const = 0;
  // The largest read buffer a read needs (compressed pages and decoding scratch), for the budget.
  virtual int64_t max_read_bytes() const = 0;
  // Whether its reads wait on a network (s3://, http(s)://): the loader's readers then keep the
  // process's priority (LoaderOptions::background_readers), as the CPU they need is the transfer's,
  // taken in small slices as data arrives.
  virtual bool reads_over_network() const { return false; }
  // The bytes block b takes when read, known before reading it, for the budget: every field's
  // region (region_bytes), an int64 end per row of each field of no fixed size, and an int64 label
  // per row (kNoLabel for an unlabeled set: the loader's blocks and batches always carry labels).
  int64_t block_bytes(int64_t block_idx) const;
  // Of block_bytes, what the image field takes (BlockBuffers::payload): pixels, or the encoded
  // samples' bytes.
  int64_t payload_bytes(int64_t block_idx) const { return region_bytes(block_idx, 0); }
  // Blocks with the same read group are pieces of one larger unit of storage (a Parquet row group):
  // read together, they cost about what one costs, as pages shared by them are read and decoded
  // once. Consecutive blocks only; each block its own group by default.
  virtual int64_t read_group(int64_t block_idx) const { return block_idx; }
  // The most rows a block's read decodes whole to take its own, where blocks are parts of larger
  // pages (a Parquet row group written as one page per column, as DuckDB writes it); 0 when each
  // block is read on its own or nothing is known. Each window then decodes such pages again.
  virtual int64_t largest_page_rows() const { return 0; }
  // Reads and decodes blocks of one read group, in any order: block blocks[i] into out[i], sized by
  // the caller for the block (BlockBuffers). `scratch` is the caller's read buffer, reused between
  // calls (no whole-file reads). Different threads may read blocks at once, each with its own
  // scratch. Throws DataError naming the file and place (row group, member, row).
  virtual void read_blocks(std::span<const int64_t> blocks, std::vector<uint8_t>& scratch,
                           std::span<const BlockBuffers> out) const = 0;
  // Block b alone.
  void read_block(int64_t block_idx, std::vector<uint8_t>& scratch, const BlockBuffers& out) const {
    read_blocks(std::span(&block_idx, 1), scratch, std::span(&out, 1));
  }

  // Per block, the smallest and largest label it may hold, from statistics the source has without
  // reading samples (Parquet's per-row-group statistics of the label column): an upper bound of the
  // labels of each block. Empty when not known. For the loader's advice on how well a streamed
  // window mixes labels (Loader::shuffle_advice).
  virtual std::vector<std::pair<int64_t, int64_t>> block_label_ranges() const { return {}; }
  // Every sample's label, got without reading any sample's pixels or bytes (a set in memory, a
  // listed folder's class folders, a Parquet set's label column alone); empty when the source
  // cannot. For read_labels.
  virtual std::vector<int64_t> labels_alone() const { return {}; }
  // Said when a loader state of another dataset is refused: how the same data could have been
  // another set (an image folder is ordered one way held in memory, another way streamed). Empty
  // when nothing but other data can be the cause.
  virtual std::string other_dataset_note() const { return {}; }

  int64_t num_blocks() const { return static_cast<int64_t>(block_starts().size()) - 1; }
  int64_t block_rows(int64_t block_idx) const {
    return block_starts()[static_cast<size_t>(block_idx) + 1] - block_starts()[static_cast<size_t>(block_idx)];
  }
  // Decoded bytes per sample as the loader holds them: pixels, an int64 label and the fixed-size
  // values (a sequence's are counted per block: block_bytes).
  int64_t decoded_sample_bytes() const;
  int64_t decoded_bytes() const { return size() * decoded_sample_bytes(); }
  // Whether blocks differ in bytes per row: encoded samples, or sequences.
  bool variable_rows() const { return encoded() || has_sequences(); }
  // What holding every block at once would take: decoded_bytes() for pixels, the sum of
  // block_bytes where blocks differ in bytes per row.
  int64_t held_bytes() const {
    if (!variable_rows()) return decoded_bytes();
    int64_t total = 0;
    for (int64_t b = 0; b < num_blocks(); ++b) total += block_bytes(b);
    return total;
  }
  // The most bytes that blocks holding `rows` rows in all can take, for the memory budget: rows x
  // decoded_sample_bytes() for pixels. Where blocks differ in bytes per row (variable_rows),
  // the blocks densest in bytes per row first, each twice (a block may be held twice at once), the
  // last in part: a fractional knapsack, so an upper bound for any blocks of that many rows. A few
  // large photographs among small ones cost the budget their own bytes, not their density times
  // every row.
  int64_t held_bytes_for_rows(int64_t rows) const;
};

// A source holding every sample in memory, read one at a time: the loader gathers each batch's
// samples straight from it and reads no blocks (its blocks still order a shuffle as a stream's
// would). A store of pixels (InMemorySource) or of encoded images' bytes (EncodedImageSource).
class RandomAccessSource : public SampleSource {
 public:
  // Sample i: its stored bytes (pixels of shape(), or an image file's bytes) and its label.
  virtual SampleView sample(int64_t i) const = 0;
};

// The source as a random-access one, or nullptr for a stream (blocks read as batches need them).
inline const RandomAccessSource* random_access(const SampleSource& source) {
  return dynamic_cast<const RandomAccessSource*>(&source);
}

// Every sample's values of one field, back to back (field_bytes(field) each; a sequence's each of
// its own length, sample i's ending at element ends[i]): what a source in memory holds of a field
// besides the image and the label.
struct FieldValues {
  Field field;
  std::vector<uint8_t> bytes;
  std::vector<int64_t> ends;  // sequences

  // Sample i's value.
  ValueBytes value(int64_t i) const;
};

// An ImageStore as a source, every sample in memory. One block, unless it was read from a stream
// (read_into_memory below), whose blocks and fingerprint it keeps, so that the loader's order is the
// same in memory and streaming for the same shuffle window, and a loader state saved in one mode
// restores in the other.
class InMemorySource : public RandomAccessSource {
 public:
  // `values`: the samples' value fields, each with size() values.
  explicit InMemorySource(std::shared_ptr<const ImageStore> store, std::string name = "in-memory store",
                          std::vector<int64_t> block_starts = {}, std::optional<uint64_t> fingerprint = std::nullopt,
                          std::vector<FieldValues> values = {});

  int64_t size() const override { return store_->size(); }
  const Schema& schema() const override { return schema_; }
  // XXH3 of the shape, pixels and labels, computed on first use (~5 ms per 50 MB), then cached.
  uint64_t fingerprint() const override;
  std::string name() const override { return name_; }
  // Sample i's pixels (image_bytes() of them: uint8, or float32 values of a float store).
  SampleView sample(int64_t i) const override {
    return {std::span<const uint8_t>(store_->image(i), static_cast<size_t>(store_->image_bytes())), store_->label(i)};
  }
  std::vector<int64_t> labels_alone() const override {
    return labeled() ? std::vector<int64_t>(store_->labels().begin(), store_->labels().end()) : std::vector<int64_t>{};
  }
  std::span<const int64_t> block_starts() const override { return block_starts_; }
  int64_t max_read_bytes() const override { return 0; }
  // Copies blocks as a stream would read them: uint8 pixels (a float32 store is served from memory
  // only: OptionsError), labels and values.
  void read_blocks(std::span<const int64_t> blocks, std::vector<uint8_t>& scratch,
                   std::span<const BlockBuffers> out) const override;

  const std::shared_ptr<const ImageStore>& store() const { return store_; }
  // Sample i's value of field f.
  ValueBytes value(size_t f, int64_t i) const { return values_[f].value(i); }
  int64_t variable_bytes(int64_t block_idx, size_t field) const override;

 private:
  std::shared_ptr<const ImageStore> store_;
  std::string name_;
  std::vector<int64_t> block_starts_;
  std::vector<FieldValues> values_;
  Schema schema_;
  mutable std::once_flag fingerprint_once_;
  mutable uint64_t fingerprint_ = 0;
};

// Reads every block of `source` into one store (and its value fields beside it), on up to
// `num_threads` threads (0: one per core), as an InMemorySource with the source's name, blocks and
// fingerprint. What `feeder train` does when a sharded set fits the memory budget.
std::shared_ptr<InMemorySource> read_into_memory(const SampleSource& source, int num_threads = 0);

// The first block of each read group of `source` (runs of blocks sharing one), then num_blocks().
std::vector<int64_t> read_group_starts(const SampleSource& source);

// Every sample's label, in the source's order (torchvision's `dataset.targets`); empty for an
// unlabeled source. A source with labels_alone() gives those; any other (tar shards) is read once,
// a block at a time on up to `num_threads` threads (0: one per core), its pixels or encoded bytes
// dropped.
std::vector<int64_t> read_labels(const SampleSource& source, int num_threads = 0);

// The store of a source of pixels in memory (an InMemorySource), or nullptr.
inline const ImageStore* pixel_store(const SampleSource& source) {
  const auto* in_memory = dynamic_cast<const InMemorySource*>(&source);
  return in_memory ? in_memory->store().get() : nullptr;
}

}  // namespace feeder
