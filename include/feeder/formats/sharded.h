#pragma once

// Image datasets split over many Parquet files ("shards"): written by `feeder convert IN OUTDIR/
// --shard-rows N`, or by any other tool (DuckDB, pyarrow, polars, Spark). A set is named by a
// directory, a glob ("data/part-*.parquet") or a single file, and streamed one row group at a time
// under a memory budget (feeder/data/loader.h).
//
// feeder's own sets carry an index, `index.json`, written last and atomically: rows per shard and per
// row group, shape, label range, sizes and XXH3 content hashes. Sets without one are described from
// their footers, read once when opened.
//
// Thread safety: ShardedDataset is a plain value; opening and writing keep no state between calls.
// The source open_parquet_source returns may be read from any number of threads (source.h).
// Ownership: the source owns its open files and is shared (shared_ptr) by the loaders reading it.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "feeder/data/schema.h"
#include "feeder/data/source.h"
#include "feeder/formats/parquet/column_reader.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/formats/parquet/writer.h"
#include "feeder/store/image_store.h"

namespace feeder {

class EncodedRowReader;  // feeder/image/encoded_rows.h

inline constexpr std::string_view kShardIndexName = "index.json";
// In OUTDIR while feeder convert writes a sharded set there, removed when the set is complete: a
// set it marks was cut short (the process killed), and opening it is an error that says so.
inline constexpr std::string_view kUnfinishedMarker = ".feeder-convert-unfinished";

struct ShardInfo {
  std::filesystem::path path;
  int64_t num_rows = 0;
  std::vector<int64_t> row_group_rows;
  // The largest row group's read: the bytes from its first to the end of its last column chunk
  // that is read, on disk (ParquetRowGroupReader::row_group_read_bytes).
  int64_t row_group_max_compressed_bytes = 0;
  // The most a read of part of a row group needs (ParquetRowGroupReader::max_rows_read_bytes);
  // 0 when not known (an index written before it was recorded): the source then assumes a column
  // chunk as large as the row group's read and a decoded row group besides.
  int64_t piece_read_bytes = 0;
  // The most rows in one data page of a row group larger than the smallest pieces
  // (ParquetRowGroupReader::largest_page_rows), found with piece_read_bytes when the footers are
  // read; 0 when not known (not kept in an index: feeder writes pages of a piece each).
  int64_t largest_page_rows = 0;
  // Encoded sets: per row group, the most bytes its images take (the image column's uncompressed
  // size, ParquetRowGroupReader::encoded_bytes_bound).
  std::vector<int64_t> row_group_encoded_bytes;
  uint64_t size_bytes = 0;                     // file size
  std::optional<uint64_t> content_hash;        // XXH3-64 of the file; only from an index
  std::string version;  // the file's version when the set was opened (an object's ETag); else empty
  // The pages found while its footer was read (piece_read_bytes needs them: a row group larger
  // than a piece has its chunks' page headers read, over a network the whole chunks), which the
  // source takes over instead of finding them again; null when none were found.
  std::shared_ptr<parquet::ParquetColumnReader::PageMaps> page_maps;
};

// What is known about a set without reading its data pages.
struct ShardedDataset {
  std::filesystem::path root;  // the directory, or the file's directory
  std::string name;            // as it was opened (a directory, a file, a glob), for messages
  std::vector<ShardInfo> shards;  // in sample order: sorted by file name
  ImageShape shape;
  bool labeled = false;
  // Encoded images (a BYTE_ARRAY column of JPEG, PNG or WebP files, as Hugging Face datasets writes
  // them): shape is then {0, 0, 0}, and a loader needs an image stage (feeder/image/image_stage.h).
  bool encoded = false;
  // The columns read, as ParquetRowGroupReader::columns() describes them; every shard must match:
  // "label INT64, 784 pixel columns pixel1..pixel784 INT32 INT(8,false)".
  std::string columns;
  // The columns read as named values of each sample (ParquetImageOptions::value_columns), as fields.
  std::vector<Field> values;
  bool indexed = false;  // described by index.json rather than by the footers
  std::optional<int64_t> label_min, label_max;  // from the index or the label statistics, when known
  // The seed the rows were shuffled with when written (`feeder convert --shuffle-on-write SEED`),
  // from the index; unset when they are in the order they came in.
  std::optional<uint64_t> shuffled_on_write;
  int64_t num_rows = 0;
  // From the content hashes (indexed) or the footers and sizes (not indexed).
  uint64_t fingerprint = 0;

  int64_t num_row_groups() const;
  // Decoded size in memory: pixels, an int64 label and the values of each sample.
  int64_t decoded_bytes() const { return num_rows * (shape.num_pixels() + 8 + fields_bytes(values)); }
};

// Opens `spec`: a directory (its index.json when present, else every *.parquet in it sorted by
// name, except names starting with '.' or '_', which Spark and Hive keep for their own files), a glob
// (`*`, `?`, `[...]` in the last path component, matched with fnmatch(3); a leading '.' must be
// matched explicitly; index.json is never a shard), or one Parquet file. Globs and single files are
// described from their footers, read once here.
// Without an index, checks every shard has the same shape, label presence and column types as the
// first; with one, reads the first shard's footer to resolve its columns and checks it and every
// listed file's size against the index. Throws DataError naming the file and what differs
// ("data/part-00001.parquet: images are 1x14x14, but part-00000.parquet has 1x28x28"), or when
// nothing matches.
ShardedDataset open_sharded_dataset(const std::string& spec, const parquet::ParquetImageOptions& options = {});

struct ShardWriteOptions {
  parquet::ParquetWriteOptions parquet;
  // Exactly one of the two is positive.
  int64_t shard_rows = 0;  // rows per shard; or
  // Target encoded bytes per shard. The rows per shard are found on the first shard, by encoding
  // it a few times, and every shard but the last then gets the same rows, so later shards land
  // near the target as far as their rows compress like the first ones. A shard larger than one row
  // group holds whole row groups: as many as a line through the sizes of one and two row groups
  // keeps within the target, fewer while the encoded shard is over it, so shards land within one
  // row group under the target. A smaller shard is found by secant steps on its rows (at most
  // four), aiming at 90..100% of the target. Costs two to six encodes of the first shard.
  int64_t shard_size_bytes = 0;
  // When set, the rows are written in the order epoch_order(N, true, seed, 0) (feeder/data/sampler.h)
  // instead of the store's, and the index records the seed: a set sorted by label streams with
  // every piece a mix of labels.
  std::optional<uint64_t> shuffle_seed;
};

// Writes `store` as OUTDIR/part-00000.parquet ... plus index.json (written last, atomically). Each
// shard is written through a temp file and renamed; OUTDIR is created when missing. Refuses an
// OUTDIR that holds Parquet files or an index already (OptionsError), so nothing is mixed or lost.
// Shard numbers have 5 digits, more when there are over 100000 shards, so names sort in order.
// On failure the shards written so far are removed and no index is written, then the error is
// rethrown. `progress(shards_done, num_shards)` is called after each shard when given.
ShardedDataset write_sharded(const ImageStore& store, const std::filesystem::path& out_dir,
                             const ShardWriteOptions& options,
                             const std::function<void(int64_t, int64_t)>& progress = nullptr);

// Writes the encoded images `reader` gives (encoded_rows.h: an image folder, tar shards) as
// OUTDIR/part-00000.parquet ... (parquet::write_encoded_parquet: the files' bytes as they are, in
// row groups of options.parquet.row_group_size), in their order or, with options.shuffle_seed, in
// the order epoch_order(N, true, seed, 0): a folder is sorted by class, and streamed in that order
// a window would hold few classes. options.shard_rows rows per shard, or as many as make
// options.shard_size_bytes of images on average. One shard's images are held at a time. Then
// index.json, last: the shards, their rows, sizes and content hashes (a directory URL over plain
// HTTP, which has no listing, is read through it); the rest is read from the footers, as for any
// writer's set. OUTDIR as write_sharded takes it; on failure the shards written are removed and no
// index is written.
ShardedDataset write_encoded_sharded(EncodedRowReader& reader, const std::filesystem::path& out_dir,
                                     const ShardWriteOptions& options,
                                     const std::function<void(int64_t, int64_t)>& progress = nullptr);
// Encoded images stream in whole row groups up to these sizes (Hugging Face datasets and feeder
// convert write 100 images a row group). A larger row group (DuckDB's and pyarrow's defaults put
// a whole set in one) streams in pieces of whole data pages of its image column of at most
// kEncodedPieceRows rows and kEncodedPieceBytes (a page of more is a piece of its own), so that a
// window mixes many of them; finding its pages costs a small read per page when the set is opened.
inline constexpr int64_t kEncodedWholeRows = 128;
inline constexpr int64_t kEncodedWholeBytes = int64_t{16} << 20;
inline constexpr int64_t kEncodedPieceRows = 32;
inline constexpr int64_t kEncodedPieceBytes = int64_t{4} << 20;

// The unit a set of `num_rows` samples is shuffled in when it streams: pieces of a row group of at
// most this many rows, a 4096th of the set, but no less than 16 KiB of decoded samples (at least
// one) and no more than 1 MiB. A shuffle window then mixes many pieces of many row groups, whatever
// the row groups' size, while a piece stays large enough to read at the disk's and the codec's
// pace. `feeder convert` writes pages of as many rows (every column), so that each piece is a page.
int64_t stream_piece_rows(const ImageShape& shape, int64_t num_rows);
// The rows of a piece of `piece_bytes` decoded bytes (pixels and label, as stream_piece_rows
// counts them): whole samples, at least one.
int64_t piece_rows_of_bytes(const ImageShape& shape, int64_t piece_bytes);

// A streaming source over a sharded set: blocks are pieces of row groups of `piece_rows` rows (0:
// stream_piece_rows; the last piece of a row group may be shorter; a piece of over a megabyte of
// pixels has its pages read together, the read counted in max_read_bytes), or for encoded images whole
// row groups and pieces of whole image pages (kEncodedPieceRows, kEncodedPieceBytes; `piece_rows`
// does not apply), read with pread into the caller's
// buffer (never mapped, so the page cache does not count against the process) and decoded with
// the same checks as read_parquet_images; `options` must be those the set was opened with. The
// footers of the most recently used shards stay open (at most 16 file descriptors). A shard that
// changed since the set was opened is reported by read_block as DataError naming file and row
// group, one text per kind ("truncated" when the file no longer reads and is shorter; "size
// changed" when it reads, or grew):
//   data/part-00002.parquet: row group 1: file vanished after the set was opened
//   data/part-00002.parquet: row group 1: file truncated to 812 bytes (index.json records 4096)
//   data/part-00002.parquet: row group 1: file size changed to 5120 bytes (4096 when the set was opened)
//   data/part-00002.parquet: row group 1: images are 1x14x14, the set's are 1x28x28 (file changed after the set was opened)
//   data/part-00002.parquet: row group 1: columns changed after the set was opened: no label, ... (the set's: label INT64, ...)
//   data/part-00002.parquet: row group 1: row groups changed after the set was opened: rows [500 500] (the set's: [1000])
// A file truncated while its footer is open: "...: row group 1: file truncated while open: bytes
// 4..9000 needed, the file ends at 812". Bad values: as ParquetRowGroupReader reports them. Other
// footer errors of a changed file keep their text behind "<file>: row group <g>: ".
// name() is the set's root directory.
std::shared_ptr<SampleSource> open_parquet_source(const ShardedDataset& dataset,
                                                  const parquet::ParquetImageOptions& options = {},
                                                  int64_t piece_rows = 0);

// `feeder inspect DIR`: a summary of a sharded set (shards, rows, row groups, shape, labels, sizes,
// whether indexed), a few lines of text.
std::string describe_sharded_dataset(const ShardedDataset& dataset);

}  // namespace feeder
