#pragma once

// Writing image sets as Parquet files that pandas, DuckDB, polars and Spark read.
//
// Thread safety: no state is kept between calls: any thread may write, concurrently to different
// paths. A write uses threads of its own and joins them before returning. Ownership: the store is
// only read; the file is written through a temporary file and renamed into place.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "feeder/data/source.h"
#include "feeder/formats/parquet/metadata.h"
#include "feeder/store/image_store.h"

namespace feeder::parquet {

// How images map onto Parquet columns.
enum class ParquetLayout {
  // `label` + `pixel1..pixelK`, one INT32 column per pixel annotated INT(8,false) (UINT_8), so
  // pandas and DuckDB read uint8 pixels: the article's CSV layout, dictionary + RLE/bit-packed.
  kColumns,
  // `label` + one FIXED_LEN_BYTE_ARRAY(C*H*W) column `image` holding each image row-major: one
  // memcpy per page to load.
  kImage,
};

std::string to_string(ParquetLayout layout);

// Key of the key-value metadata entry that records the image shape as "CxHxW", so a reader can
// restore (N,C,H,W) from either layout.
inline constexpr std::string_view kImageShapeKey = "feeder.image_shape";

struct ParquetWriteOptions {
  ParquetLayout layout = ParquetLayout::kColumns;
  // kLz4 (the deprecated Hadoop framing) is not written; "lz4" means kLz4Raw.
  Codec codec = Codec::kZstd;
  // Codec level; 0 picks feeder's default for the codec (ZSTD: 1, GZIP: 6, BROTLI: 5).
  int compression_level = 0;
  // Rows per row group. One FashionMNIST train set (60,000 rows) fits in one group by default;
  // memory while writing is bounded by one encoded row group.
  int64_t row_group_size = 65536;
  // Target uncompressed size of one data page; a page always holds at least one value.
  int64_t page_size_bytes = 1 << 20;
  // When positive, every column's data pages hold this many rows (the last of a row group fewer),
  // whatever their size, so that a part of a row group is whole pages of every column (a streamed
  // set's pieces, feeder/formats/sharded.h). The label column's pages then carry statistics.
  int64_t page_rows = 0;
  // Encoding threads; 0 = one per core. Must not be negative. When the system refuses a thread, the
  // write fails with ThreadStartError (feeder/util/parallel_for.h).
  int num_threads = 0;
  // Encoded images (write_encoded_parquet): the names of labels 0, 1, ..., written in the footer's
  // `huggingface` metadata as the datasets library writes a ClassLabel of `label`, where
  // class_label_names (class_labels.h) reads them. None when empty.
  std::vector<std::string> class_names;
};

// Parses the names used on the command line; throws OptionsError listing the accepted names.
ParquetLayout parse_parquet_layout(std::string_view name);
Codec parse_parquet_codec(std::string_view name);

// Writes `store` as a Parquet file (data page v1, REQUIRED columns, min/max/null_count statistics
// per column chunk, created_by "feeder version ..."). An unlabeled store gets no label column.
// Output goes to a temporary file renamed onto `path` only when complete, so a failure leaves any
// existing file untouched. Throws OptionsError on invalid options, DataError on I/O errors.
void write_parquet(const ImageStore& store, const std::filesystem::path& path, const ParquetWriteOptions& options = {});

// The same for rows [first_row, first_row + num_rows) of `store` only: one shard of a larger set
// (feeder/formats/sharded.h). Throws OptionsError when the rows are not inside the store.
void write_parquet(const ImageStore& store, int64_t first_row, int64_t num_rows, const std::filesystem::path& path,
                   const ParquetWriteOptions& options = {});

// Writes samples `rows` of `source`, a set of encoded images held in memory (an image folder), in
// that order, as they are (no re-encoding): `label` INT64 (when labeled, with statistics per chunk)
// and `image` BYTE_ARRAY, each row an image file's bytes, in PLAIN pages of up to page_size_bytes,
// uncompressed (the images are compressed already; `codec` applies to the labels), in row groups of
// row_group_size rows, with class_names as a ClassLabel. The file reads back as a set of encoded
// images (sharded.h), and DuckDB, pyarrow and polars read `image` as binary. Through a temporary
// file renamed into place.
void write_encoded_parquet(const SampleSource& source, std::span<const int64_t> rows, const std::filesystem::path& path,
                           const ParquetWriteOptions& options = {});

}  // namespace feeder::parquet
