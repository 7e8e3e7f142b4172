// The streaming SampleSource over a sharded Parquet set: blocks are the row groups of every shard,
// in order; each read opens (or finds open) the shard's footer, checks the shard is still the one
// the set was opened with, and reads one row group with pread.

#include <algorithm>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>

#include "feeder/error.h"
#include "feeder/io/file_system.h"
#include "feeder/io/object_storage.h"
#include "feeder/formats/parquet/row_group_reader.h"
#include "feeder/formats/sharded.h"
#include "util/mutex.h"

namespace feeder {

namespace {

namespace fs = std::filesystem;

using parquet::ParquetImageOptions;
using parquet::ParquetRowGroupReader;

// Footers (and file descriptors) of the most recently read shards kept open. A loader reads a few
// shards at a time (its prefetch window), so a handful suffices; 16 bounds descriptors and memory.
constexpr size_t kMaxOpenShards = 16;
// A remote shard holds no descriptor, and opening it again costs round trips (its size and ETag,
// its footer): more stay open.
constexpr size_t kMaxOpenRemoteShards = 256;

std::string row_groups_text(const std::vector<int64_t>& rows) {
  std::string text;
  for (size_t i = 0; i < rows.size(); ++i) text += (i ? " " : "") + std::to_string(rows[i]);
  return "[" + text + "]";
}

class ParquetShardSource final : public SampleSource {
 public:
  ParquetShardSource(ShardedDataset dataset, ParquetImageOptions options, int64_t piece_rows)
      : dataset_(std::move(dataset)), options_(with_values(std::move(options), dataset_.values)) {
    if (piece_rows < 0) throw OptionsError("piece_rows must be positive (or 0 for the default), got " + std::to_string(piece_rows));
    piece_rows_ = piece_rows > 0 ? piece_rows : stream_piece_rows(dataset_.shape, dataset_.num_rows);
    // Pieces larger than stream_piece_rows makes (piece_rows given) have their pages read together:
    // over a network one request a piece instead of one a megabyte, on a local disk one pread.
    if (!dataset_.encoded && piece_rows_ * dataset_.shape.num_pixels() > kOneReadBytes)
      run_bytes_ = piece_rows_ * dataset_.shape.num_pixels();
    options_.read_run_bytes = run_bytes_;
    block_starts_.push_back(0);
    for (size_t shard_idx = 0; shard_idx < dataset_.shards.size(); ++shard_idx) {
      const ShardInfo& shard = dataset_.shards[shard_idx];
      if (shard.page_maps) page_maps_[shard_idx] = shard.page_maps;  // found when the footers were read
      shard_first_row_group_.push_back(static_cast<int64_t>(row_group_starts_.size()));
      if (dataset_.encoded) {
        add_encoded_blocks(shard_idx);
        continue;
      }
      bool split = false;
      bool whole = false;
      for (const int64_t rows : shard.row_group_rows) {
        const auto row_group = static_cast<int64_t>(row_group_starts_.size());
        row_group_starts_.push_back(block_starts_.back());
        split = split || rows > piece_rows_;
        whole = whole || rows <= piece_rows_;
        for (int64_t first = 0; first < rows; first += piece_rows_) {
          block_starts_.push_back(block_starts_.back() + std::min(piece_rows_, rows - first));
          block_row_group_.push_back(row_group);
        }
      }
      // Whole row groups are read with one pread of their columns (the largest row group's read
      // bounds theirs); split ones a page at a time.
      if (whole) max_read_bytes_ = std::max(max_read_bytes_, shard.row_group_max_compressed_bytes);
      if (split) {
        // Recorded over the row groups larger than the smallest pieces, so for any pieces at least as
        // large; for smaller ones (or an index without it) the shard's pages are found now.
        const bool recorded = shard.piece_read_bytes > 0 && piece_rows_ >= stream_piece_rows(dataset_.shape, 0);
        int64_t piece_bytes = shard.piece_read_bytes;
        largest_page_rows_ = std::max(largest_page_rows_, shard.largest_page_rows);
        if (!recorded) {
          const std::shared_ptr<const ParquetRowGroupReader> reader = open_shard(shard_idx, 0);
          piece_bytes = reader->max_rows_read_bytes(piece_rows_);
          largest_page_rows_ = std::max(largest_page_rows_, reader->largest_page_rows(piece_rows_));
        }
        // The run of a piece's pages read at once stays in the buffer while its pages are decoded.
        max_read_bytes_ = std::max(max_read_bytes_, piece_bytes + run_bytes_);
      }
    }
    shard_first_row_group_.push_back(static_cast<int64_t>(row_group_starts_.size()));
    row_group_starts_.push_back(block_starts_.back());
    if (has_sequences()) find_sequence_bytes();
  }

  int64_t size() const override { return block_starts_.back(); }
  const Schema& schema() const override { return schema_; }
  // Encoded images: the most bytes a block's images take (the image column's uncompressed size, of
  // the row group or of the piece's pages). A sequence: a piece of a row group may hold any of its
  // values, so the row group's count them all.
  int64_t variable_bytes(int64_t block_idx, size_t field) const override {
    if (field == 0) return dataset_.encoded ? encoded_bytes_.at(static_cast<size_t>(block_idx)) : 0;
    if (field < value_index(0)) return 0;
    const size_t value = field - value_index(0);
    const auto row_group = static_cast<size_t>(read_group(block_idx));
    return sequence_bytes_.at(row_group * dataset_.values.size() + value);
  }
  // "<shard>: row group <g> row <r>", counted within the shard and the row group.
  std::string sample_name(int64_t sample) const override {
    const auto row_group = static_cast<int64_t>(
        std::upper_bound(row_group_starts_.begin(), row_group_starts_.end(), sample) - row_group_starts_.begin() - 1);
    const auto it = std::upper_bound(shard_first_row_group_.begin(), shard_first_row_group_.end(), row_group) - 1;
    const ShardInfo& shard = dataset_.shards[static_cast<size_t>(it - shard_first_row_group_.begin())];
    return shard.path.string() + ": row group " + std::to_string(row_group - *it) + " row " +
           std::to_string(sample - row_group_starts_[static_cast<size_t>(row_group)]);
  }
  uint64_t fingerprint() const override { return dataset_.fingerprint; }
  std::string name() const override { return dataset_.name.empty() ? dataset_.root.string() : dataset_.name; }
  std::span<const int64_t> block_starts() const override { return block_starts_; }
  int64_t max_read_bytes() const override { return max_read_bytes_; }
  bool reads_over_network() const override { return is_remote_path(dataset_.root.string()); }
  int64_t largest_page_rows() const override { return largest_page_rows_; }
  int64_t read_group(int64_t block_idx) const override { return block_row_group_.at(static_cast<size_t>(block_idx)); }

  // From each row group's label statistics (every shard's footer is read, opened as reads do), and
  // for a row group split into pieces, from its label pages' statistics (as feeder convert writes
  // them; finding them reads the page headers, as the first read would) or its labels.
  std::vector<std::pair<int64_t, int64_t>> block_label_ranges() const override {
    if (!dataset_.labeled) return {};
    std::vector<std::pair<int64_t, int64_t>> blocks;
    for (size_t shard_idx = 0; shard_idx < dataset_.shards.size(); ++shard_idx) {
      const std::shared_ptr<const ParquetRowGroupReader> reader = open_shard(shard_idx, 0);
      for (int64_t rg = 0; rg < reader->num_row_groups(); ++rg) {
        const auto whole = reader->row_group_label_range(rg);
        if (!whole) return {};
        const auto row_group = static_cast<size_t>(shard_first_row_group_[shard_idx] + rg);
        const int64_t first_row = row_group_starts_[row_group];
        const int64_t rows = row_group_starts_[row_group + 1] - first_row;
        // The row group's blocks: the first whose rows start at first_row, up to the next row group.
        // A piece's range comes from its label pages' statistics or, without them, from the labels
        // themselves (the label column alone is read: the pieces of a sorted row group without
        // page statistics, DuckDB's or arrow-rs's, would otherwise each look like the whole).
        std::vector<int64_t> labels;
        auto block = std::lower_bound(block_starts_.begin(), block_starts_.end(), first_row);
        for (; block + 1 < block_starts_.end() && *block < first_row + rows; ++block) {
          const int64_t begin = *block - first_row;
          const int64_t end = *(block + 1) - first_row;
          if (end - begin == rows) {
            blocks.push_back(*whole);
            continue;
          }
          if (const auto part = reader->rows_label_range(rg, begin, end)) {
            blocks.push_back(*part);
            continue;
          }
          if (labels.empty()) labels = reader->row_group_labels(rg);
          const auto [low, high] = std::minmax_element(labels.begin() + begin, labels.begin() + end);
          blocks.emplace_back(*low, *high);
        }
      }
    }
    return blocks;
  }

  // The label column of every row group, in order.
  std::vector<int64_t> labels_alone() const override {
    if (!dataset_.labeled) return {};
    std::vector<int64_t> labels;
    labels.reserve(static_cast<size_t>(dataset_.num_rows));
    for (size_t shard_idx = 0; shard_idx < dataset_.shards.size(); ++shard_idx) {
      const std::shared_ptr<const ParquetRowGroupReader> reader = open_shard(shard_idx, 0);
      for (int64_t rg = 0; rg < reader->num_row_groups(); ++rg) {
        const std::vector<int64_t> group = reader->row_group_labels(rg);
        labels.insert(labels.end(), group.begin(), group.end());
      }
    }
    return labels;
  }

  // Pixels: the blocks of a row group with one read (a whole row group) or a page at a time (its
  // pieces); encoded images: each block's image pages. Then each block's values.
  void read_blocks(std::span<const int64_t> blocks, std::vector<uint8_t>& scratch,
                   std::span<const BlockBuffers> out) const override {
    if (blocks.empty()) return;
    if (dataset_.encoded) {
      for (size_t i = 0; i < blocks.size(); ++i) read_encoded(blocks[i], scratch, out[i]);
    } else {
      read_pixels(blocks, scratch, out);
    }
    if (!dataset_.values.empty()) read_values(blocks, scratch, out);
  }

 private:
  // The value fields of blocks, the blocks of one row group read together (a value page that holds
  // several of them is decoded once).
  void read_values(std::span<const int64_t> blocks, std::vector<uint8_t>& scratch, std::span<const BlockBuffers> out) const {
    std::vector<ParquetRowGroupReader::RowRange> ranges;
    for (size_t i = 0; i < blocks.size();) {
      const Place place = place_of(blocks[i]);
      const int64_t row_group = read_group(blocks[i]);
      ranges.clear();
      for (; i < blocks.size() && read_group(blocks[i]) == row_group; ++i) {
        const int64_t begin = block_starts_[static_cast<size_t>(blocks[i])] - place.first_row;
        ranges.push_back({.begin = begin, .end = begin + block_rows(blocks[i]), .values = out[i].values});
      }
      place.reader->read_values(place.row_group_idx, ranges, scratch);
    }
  }

  // Pixel blocks of one row group.
  void read_pixels(std::span<const int64_t> blocks, std::vector<uint8_t>& scratch, std::span<const BlockBuffers> out) const {
    const Place place = place_of(blocks[0]);
    const int64_t row_group = read_group(blocks[0]);
    const int64_t rows = row_group_starts_[static_cast<size_t>(row_group) + 1] - place.first_row;
    if (rows <= piece_rows_) {
      place.reader->read_row_group(place.row_group_idx, scratch, out[0].payload, out[0].labels);
      return;
    }
    std::vector<ParquetRowGroupReader::RowRange> ranges;
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (read_group(blocks[i]) != row_group) {
        throw std::invalid_argument(name() + ": blocks " + std::to_string(blocks[0]) + " and " +
                                    std::to_string(blocks[i]) + " are in different row groups");
      }
      const int64_t begin = block_starts_[static_cast<size_t>(blocks[i])] - place.first_row;
      ranges.push_back({begin, begin + block_rows(blocks[i]), out[i].payload, out[i].labels});
    }
    place.reader->read_rows(place.row_group_idx, ranges, scratch);
  }

  // An encoded block: its row group whole, or a piece of whole image pages.
  void read_encoded(int64_t block_idx, std::vector<uint8_t>& scratch, const BlockBuffers& out) const {
    const Place place = place_of(block_idx);
    const ParquetRowGroupReader* reader = place.reader.get();
    const int64_t row_group_idx = place.row_group_idx;
    const int64_t begin = block_starts_[static_cast<size_t>(block_idx)] - place.first_row;
    const int64_t rows = block_rows(block_idx);
    if (begin == 0 && rows == reader->row_group_rows(row_group_idx)) {
      reader->read_encoded_row_group(row_group_idx, scratch, out.payload, out.capacity, out.ends, out.labels);
    } else {  // a piece: whole image pages
      reader->read_encoded_rows(row_group_idx, begin, begin + rows, scratch, out.payload, out.capacity, out.ends,
                                out.labels);
    }
  }
  // The blocks of an encoded shard: each row group whole, or, over kEncodedWholeRows rows or
  // kEncodedWholeBytes of images, in pieces of whole image pages (ParquetRowGroupReader::
  // encoded_pieces), so that a writer's large row groups (DuckDB's, pyarrow's) stream in a budget
  // smaller than them and a window mixes many pieces of them.
  void add_encoded_blocks(size_t shard_idx) {
    const ShardInfo& shard = dataset_.shards[shard_idx];
    // A row group's read: its columns' bytes, and its image pages decompressed (at most the image
    // column's uncompressed size).
    if (shard.row_group_encoded_bytes.size() != shard.row_group_rows.size())
      throw DataError(shard.path.string() + ": the sizes of its encoded images are not known");
    for (size_t rg = 0; rg < shard.row_group_rows.size(); ++rg) {
      const int64_t rows = shard.row_group_rows[rg];
      const int64_t bound = shard.row_group_encoded_bytes[rg];
      const auto row_group = static_cast<int64_t>(row_group_starts_.size());
      row_group_starts_.push_back(block_starts_.back());
      if (rows == 0) continue;  // no block, as for pixels
      std::optional<ParquetRowGroupReader::EncodedPieces> pieces;
      if (rows > kEncodedWholeRows || bound > kEncodedWholeBytes) {
        pieces = open_shard(shard_idx, static_cast<int64_t>(rg))
                     ->encoded_pieces(static_cast<int64_t>(rg), kEncodedPieceRows, kEncodedPieceBytes);
        if (pieces->starts.size() <= 2) pieces.reset();  // one page: read whole, as a row group
      }
      if (!pieces) {
        block_starts_.push_back(block_starts_.back() + rows);
        block_row_group_.push_back(row_group);
        encoded_bytes_.push_back(bound);
        max_read_bytes_ = std::max(max_read_bytes_, shard.row_group_max_compressed_bytes + bound);
        continue;
      }
      const int64_t first_row = block_starts_.back();
      for (size_t p = 0; p + 1 < pieces->starts.size(); ++p) {
        block_starts_.push_back(first_row + pieces->starts[p + 1]);
        block_row_group_.push_back(row_group);
        encoded_bytes_.push_back(pieces->bytes_bound[p]);
      }
      max_read_bytes_ = std::max(max_read_bytes_, pieces->max_read_bytes);
    }
  }

  // sequence_bytes_, from every shard's footer.
  void find_sequence_bytes() {
    for (size_t shard_idx = 0; shard_idx < dataset_.shards.size(); ++shard_idx) {
      const std::shared_ptr<const ParquetRowGroupReader> reader = open_shard(shard_idx, 0);
      for (int64_t rg = 0; rg < reader->num_row_groups(); ++rg)
        for (size_t f = 0; f < dataset_.values.size(); ++f) sequence_bytes_.push_back(reader->sequence_bytes(rg, f));
    }
  }

  // `options` reading the set's value columns too.
  static ParquetImageOptions with_values(ParquetImageOptions options, const std::vector<Field>& values) {
    options.value_columns.clear();
    for (const Field& field : values) options.value_columns.push_back(field.name);
    return options;
  }

  // Where a block is: its shard's reader, its row group in the shard, the row group's first row.
  struct Place {
    std::shared_ptr<const ParquetRowGroupReader> reader;
    int64_t row_group_idx = 0;
    int64_t first_row = 0;
  };
  Place place_of(int64_t block_idx) const {
    if (block_idx < 0 || block_idx >= num_blocks()) {
      throw std::out_of_range(name() + ": no block " + std::to_string(block_idx) + " (the set has " +
                              std::to_string(num_blocks()) + ")");
    }
    const int64_t row_group = read_group(block_idx);
    // The shard holding the row group: the last whose first row group is not after it.
    const auto it = std::upper_bound(shard_first_row_group_.begin(), shard_first_row_group_.end(), row_group) - 1;
    const auto shard_idx = static_cast<size_t>(it - shard_first_row_group_.begin());
    const int64_t row_group_idx = row_group - *it;
    return {open_shard(shard_idx, row_group_idx), row_group_idx, row_group_starts_[static_cast<size_t>(row_group)]};
  }

  // The open reader of a shard: from the cache, else opened and checked against the set.
  std::shared_ptr<const ParquetRowGroupReader> open_shard(size_t shard_idx, int64_t row_group_idx) const {
    {
      detail::MutexLock lock(mutex_);
      const auto it = std::find_if(open_.begin(), open_.end(), [&](const auto& entry) { return entry.first == shard_idx; });
      if (it != open_.end()) {
        open_.splice(open_.begin(), open_, it);  // most recently used first
        return it->second;
      }
    }
    // Opened outside the lock, so threads reading other shards do not wait on this one's I/O. Two
    // threads missing the same shard both open it; the second to finish keeps the first's reader.
    ParquetRowGroupReader opened = open_and_check(shard_idx, row_group_idx);
    detail::MutexLock lock(mutex_);
    // The pages found while the shard was open before are found no more.
    auto& maps = page_maps_[shard_idx];
    if (maps) opened.use_page_maps(maps);
    maps = opened.page_maps();
    auto reader = std::make_shared<const ParquetRowGroupReader>(std::move(opened));
    const auto it = std::find_if(open_.begin(), open_.end(), [&](const auto& entry) { return entry.first == shard_idx; });
    if (it != open_.end()) return it->second;
    open_.emplace_front(shard_idx, reader);
    // Readers still in use live on in their shared_ptr.
    if (open_.size() > (reads_over_network() ? kMaxOpenRemoteShards : kMaxOpenShards)) open_.pop_back();
    return reader;
  }

  ParquetRowGroupReader open_and_check(size_t shard_idx, int64_t row_group_idx) const {
    const ShardInfo& shard = dataset_.shards[shard_idx];
    const std::string where = shard.path.string() + ": row group " + std::to_string(row_group_idx);
    const std::string recorded = dataset_.indexed ? "index.json records " + std::to_string(shard.size_bytes)
                                                  : std::to_string(shard.size_bytes) + " when the set was opened";
    // A file that no longer reads and is shorter was truncated; one that reads, or grew, changed.
    const auto size_changed = [&](uint64_t size_bytes, bool readable) {
      const bool truncated = !readable && size_bytes < shard.size_bytes;
      return DataError(where + (truncated ? ": file truncated to " : ": file size changed to ") +
                       std::to_string(size_bytes) + " bytes (" + recorded + ")");
    };
    std::optional<ParquetRowGroupReader> opened;
    try {
      opened.emplace(ParquetRowGroupReader::open(shard.path, options_));
    } catch (const UnreachableError&) {
      throw;  // asking the storage what became of the file would wait out its retries again
    } catch (const DataError& error) {
      // Say what happened to the file rather than what its remains look like.
      const FileEntry now = file_system_for(shard.path).stat(shard.path);
      if (now.kind == FileKind::kMissing) throw DataError(where + ": file vanished after the set was opened");
      if (now.file() && static_cast<uint64_t>(now.size) != shard.size_bytes) throw size_changed(now.size, false);
      std::string what = error.what();
      const std::string prefix = shard.path.string() + ": ";
      if (what.starts_with(prefix)) what.erase(0, prefix.size());
      throw DataError(where + ": " + what);
    }
    const ParquetRowGroupReader& reader = *opened;
    const std::string changed = "after the set was opened";
    if (!shard.version.empty() && reader.file_version() != shard.version)
      throw DataError(where + ": changed since it was opened (its ETag was " + shard.version + ", is " +
                      reader.file_version() + "): the object was replaced " + changed);
    if (reader.shape() != dataset_.shape) {
      throw DataError(where + ": images are " + to_string(reader.shape()) + ", the set's are " + to_string(dataset_.shape) +
                      " (file changed " + changed + ")");
    }
    if (!dataset_.columns.empty() && reader.columns() != dataset_.columns) {
      throw DataError(where + ": columns changed " + changed + ": " + reader.columns() + " (the set's: " +
                      dataset_.columns + ")");
    }
    std::vector<int64_t> row_group_rows;
    for (int64_t rg = 0; rg < reader.num_row_groups(); ++rg) row_group_rows.push_back(reader.row_group_rows(rg));
    if (row_group_rows != shard.row_group_rows) {
      throw DataError(where + ": row groups changed " + changed + ": rows " + row_groups_text(row_group_rows) +
                      " (the set's: " + row_groups_text(shard.row_group_rows) + ")");
    }
    if (reader.size_bytes() != shard.size_bytes) throw size_changed(reader.size_bytes(), true);
    return std::move(*opened);
  }

  const ShardedDataset dataset_;
  ParquetImageOptions options_;  // as the set was opened with, and its pieces' read_run_bytes (set by the constructor)
  const Schema schema_ = sample_schema(dataset_.shape, dataset_.encoded, dataset_.labeled, dataset_.values);
  int64_t piece_rows_ = 0;
  std::vector<int64_t> block_starts_;      // (num_blocks + 1) first sample of each block, then size()
  std::vector<int64_t> block_row_group_;   // per block, its row group counted over the whole set
  std::vector<int64_t> row_group_starts_;  // (row groups + 1) first sample of each, then size()
  std::vector<int64_t> shard_first_row_group_;  // (num_shards + 1) first row group of each shard, then their number
  int64_t max_read_bytes_ = 0;
  // Bytes of a piece's pages read at once (ParquetImageOptions::read_run_bytes): pieces of over a
  // megabyte of pixels, else 0 (a page a read; neighbouring pages up to a megabyte over a network).
  static constexpr int64_t kOneReadBytes = int64_t{1} << 20;
  int64_t run_bytes_ = 0;
  int64_t largest_page_rows_ = 0;  // of the row groups split into pieces, where it is known (ShardInfo)
  std::vector<int64_t> encoded_bytes_;  // encoded sets: per block, the most bytes its images take
  // Sets with sequence fields: per row group of the set and value field, its bytes (0 for a
  // fixed-size field), from each shard's footer.
  std::vector<int64_t> sequence_bytes_;

  mutable detail::Mutex mutex_;  // the stream's reader threads open shards at once
  // Open shards, most recently used first, at most kMaxOpenShards: (shard index, reader).
  mutable std::list<std::pair<size_t, std::shared_ptr<const ParquetRowGroupReader>>> open_ GUARDED_BY(mutex_);
  // Per shard, the pages its readers have found, kept while the shard is closed.
  mutable std::map<size_t, std::shared_ptr<ParquetRowGroupReader::PageMaps>> page_maps_ GUARDED_BY(mutex_);
};

}  // namespace

int64_t stream_piece_rows(const ImageShape& shape, int64_t num_rows) {
  constexpr int64_t kMinPieceBytes = int64_t{16} << 10;
  constexpr int64_t kMaxPieceBytes = int64_t{1} << 20;
  constexpr int64_t kPiecesPerSet = 4096;
  const int64_t smallest = piece_rows_of_bytes(shape, kMinPieceBytes);
  const int64_t largest = std::max<int64_t>(smallest, piece_rows_of_bytes(shape, kMaxPieceBytes));
  return std::clamp((num_rows + kPiecesPerSet - 1) / kPiecesPerSet, smallest, largest);
}

int64_t piece_rows_of_bytes(const ImageShape& shape, int64_t piece_bytes) {
  const int64_t sample_bytes = shape.num_pixels() + static_cast<int64_t>(sizeof(int64_t));
  return std::max<int64_t>(1, piece_bytes / sample_bytes);
}

std::shared_ptr<SampleSource> open_parquet_source(const ShardedDataset& dataset, const ParquetImageOptions& options,
                                                  int64_t piece_rows) {
  return std::make_shared<ParquetShardSource>(dataset, options, piece_rows);
}

}  // namespace feeder
