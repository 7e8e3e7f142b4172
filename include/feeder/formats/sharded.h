#pragma once

// Image datasets split over many Parquet files ("shards"): written by `feeder convert IN OUTDIR/
// --shard-rows N`, or by any other tool (DuckDB, pyarrow, polars, Spark). A set is named by a
// directory, a glob ("data/part-*.parquet") or a single file, and streamed one row group at a time
// under a memory budget (feeder/data/loader.h).
//
// feeder's own sets carry an index, `index.json`, written last and atomically: rows per shard and per
// row group, shape, label range, sizes and XXH3 content hashes. Sets without one are described from
// their footers, read once when opened.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "feeder/data/source.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/formats/parquet/writer.h"
#include "feeder/store/image_store.h"

namespace feeder {

inline constexpr std::string_view kShardIndexName = "index.json";

struct ShardInfo {
  std::filesystem::path path;
  int64_t num_rows = 0;
  std::vector<int64_t> row_group_rows;
  int64_t row_group_max_compressed_bytes = 0;  // the largest row group's column chunks, on disk
  uint64_t size_bytes = 0;                     // file size
  std::optional<uint64_t> content_hash;        // XXH3-64 of the file; only from an index
};

// What is known about a set without reading its data pages.
struct ShardedDataset {
  std::filesystem::path root;  // the directory, or the file's directory
  std::vector<ShardInfo> shards;  // in sample order: sorted by file name
  ImageShape shape;
  bool labeled = false;
  bool indexed = false;  // described by index.json rather than by the footers
  std::optional<int64_t> label_min, label_max;  // from the index or the label statistics, when known
  int64_t num_rows = 0;
  // From the content hashes (indexed) or the footers and sizes (not indexed).
  uint64_t fingerprint = 0;

  int64_t num_row_groups() const;
  // Decoded size in memory: pixels plus an int64 label per sample.
  int64_t decoded_bytes() const { return num_rows * (shape.num_pixels() + 8); }
};

// True when `spec` names more than one file or a directory or glob: the streaming path applies.
bool is_sharded_spec(const std::string& spec);

// Opens `spec`: a directory (its index.json when present, else every *.parquet in it sorted by
// name), a glob of Parquet files (`*`, `?`, `[...]` in the last path component), or one Parquet file.
// Checks every shard has the same shape, label presence and column types. Throws DataError naming
// the file (and what differs) otherwise, or when nothing matches.
ShardedDataset open_sharded_dataset(const std::string& spec, const parquet::ParquetImageOptions& options = {});

struct ShardWriteOptions {
  parquet::ParquetWriteOptions parquet;
  int64_t shard_rows = 0;        // rows per shard; or
  int64_t shard_size_bytes = 0;  // target encoded bytes per shard (estimated from the first shard)
};

// Writes `store` as OUTDIR/part-00000.parquet ... plus index.json (written last, atomically). Each
// shard is written through a temp file and renamed; OUTDIR is created when missing. Refuses an
// OUTDIR that holds other Parquet files or an index already, so nothing is mixed or lost.
// `progress(shards_done, num_shards)` is called after each shard when given.
ShardedDataset write_sharded(const ImageStore& store, const std::filesystem::path& out_dir,
                             const ShardWriteOptions& options,
                             const std::function<void(int64_t, int64_t)>& progress = nullptr);

// A streaming source over a sharded set: blocks are row groups, read with pread into the caller's
// buffer (never mapped, so the page cache does not count against the process) and decoded with
// the same checks as read_parquet_images. A shard that vanished, was truncated, or whose schema
// or shape differs from the set's is reported by read_block as DataError naming file and row group.
std::shared_ptr<SampleSource> open_parquet_source(const ShardedDataset& dataset,
                                                  const parquet::ParquetImageOptions& options = {});

// `feeder inspect DIR`: a summary of a sharded set (shards, rows, row groups, shape, labels, sizes,
// whether indexed), a few lines of text.
std::string describe_sharded_dataset(const ShardedDataset& dataset);

}  // namespace feeder
