#pragma once

// Reading Parquet files of flat schemas (top-level primitive columns): a generic column API for
// tools and tests, and a direct path into the ImageStore for image datasets.
//
// Thread safety: the free functions keep no state between calls; a ParquetFile's methods are const
// and may be called from several threads. Ownership: ParquetFile owns the file's bytes; what is read
// from it (metadata, columns, image stores) owns its data (see ParquetFile below).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "feeder/formats/parquet/metadata.h"
#include "feeder/io/file.h"
#include "feeder/store/image_store.h"

namespace feeder::parquet {

struct ReaderOptions {
  // Check each page's CRC32 (when the writer stored one) against the page bytes.
  bool verify_checksums = false;
  // Upper bound on the memory a read may allocate for decoded values, checked against the row
  // counts the footer declares before anything is allocated, so a lying footer cannot make the
  // reader allocate huge buffers.
  int64_t max_decoded_bytes = int64_t{8} << 30;
};

// Dense values of one column: element i belongs to row i. Null rows hold a zero value (or an
// empty string) and have valid[i] == 0.
struct ColumnData {
  using Values = std::variant<std::vector<uint8_t>,       // BOOLEAN, 0 or 1
                              std::vector<int32_t>,       // INT32
                              std::vector<int64_t>,       // INT64
                              std::vector<float>,         // FLOAT
                              std::vector<double>,        // DOUBLE
                              std::vector<std::string>>;  // BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY
  PhysicalType physical_type = PhysicalType::kInt32;
  Values values;
  std::vector<uint8_t> valid;  // (num_rows) 1 = present, 0 = null

  int64_t num_rows() const { return static_cast<int64_t>(valid.size()); }
  int64_t null_count() const;
};

// Pages of one column chunk, as `feeder inspect` shows them.
struct ChunkPageSummary {
  int64_t num_dictionary_pages = 0;
  int64_t num_data_pages_v1 = 0;
  int64_t num_data_pages_v2 = 0;
  int64_t num_other_pages = 0;
  std::vector<Encoding> data_encodings;  // distinct value encodings of the data pages, in order seen
  bool has_crc = false;
};

// An open Parquet file held in memory: a read-only mapping of a regular file, or a buffer. Methods
// are const and may be called from several threads. Move-only. bytes() is a view that must not
// outlive it; everything read from it (metadata, columns, image stores) owns its data.
class ParquetFile {
 public:
  // Maps the file (pipes and other files that cannot be mapped are read into memory) and validates
  // magic, footer and metadata. Throws DataError naming the file.
  static ParquetFile open(const std::filesystem::path& path, const ReaderOptions& options = {});
  // The same for bytes already in memory; `name` prefixes error messages.
  static ParquetFile from_buffer(std::vector<uint8_t> bytes, std::string name, const ReaderOptions& options = {});

  const FileMetadata& metadata() const { return metadata_; }
  const std::string& name() const { return name_; }
  const ReaderOptions& options() const { return options_; }
  std::span<const uint8_t> bytes() const { return bytes_.bytes(); }

  // Decodes a whole column across row groups. Nested columns, encrypted columns, INT96 and
  // unsupported encodings throw DataError naming the file, column (and page).
  ColumnData read_column(int64_t column_idx) const;
  ColumnData read_column(std::string_view column_name) const;

  // Walks the page headers of one chunk without decoding values.
  ChunkPageSummary summarize_pages(int64_t row_group_idx, int64_t column_idx) const;

  // Throws DataError if the schema is not flat (groups or repeated fields).
  void require_flat_schema() const;

 private:
  ParquetFile() = default;
  static ParquetFile from_bytes(FileBytes bytes, std::string name, const ReaderOptions& options);
  // Checks magic and footer of bytes() and parses the metadata.
  void parse_footer();

  std::string name_;
  FileBytes bytes_;
  FileMetadata metadata_;
  ReaderOptions options_;
};

struct ParquetImageOptions {
  // Image shape; unset: 784 pixels -> 1x28x28, S*S -> 1xSxS, else an error asking for a shape.
  std::optional<ImageShape> shape;
  std::string label_column = "label";
  // Pixel columns in pixel order; empty: every number column (INT32, INT64, FLOAT or DOUBLE, without
  // a logical type or with an integer one) other than the label, in file order.
  std::vector<std::string> pixel_columns;
  // Image column (FIXED_LEN_BYTE_ARRAY of C*H*W bytes); unset: use it when it is the only
  // non-label column of that type.
  std::optional<std::string> image_column;
  // Columns read as named values of each sample besides the image and the label (a per-sample
  // weight, a target; see SampleSource::value_fields): FLOAT, DOUBLE, INT32 or INT64, one value
  // per row or a list of one length in every row (a field of shape {n}), never null. They are never
  // taken as pixels. A name the file lacks throws DataError.
  std::vector<std::string> value_columns;
  bool verify_checksums = true;
  // Threads decoding column chunks in parallel; 0 = one per core. Must not be negative. When the
  // system refuses a thread, the read fails with ThreadStartError (feeder/util/parallel_for.h).
  int num_threads = 0;
  int64_t max_decoded_bytes = int64_t{8} << 30;
  // The most memory one file's footer may take once parsed (kFooterMemoryPerByte times its bytes),
  // checked before it is parsed for footers over 64 KiB (smaller ones always open); 0: no limit. A loader's memory budget, so that a file of 200,000
  // row groups (a 27 MB footer, 600 MB parsed) is refused by name instead of overrunning it.
  int64_t max_metadata_bytes = 0;
  // Reading parts of row groups: the most bytes of neighbouring pages read at once
  // (ColumnReaderOptions::read_run_bytes). Not part of what the set is: any value reads the same rows.
  int64_t read_run_bytes = 0;
};

// What a parsed footer takes in memory per byte of footer, at most (measured: a 27 MB footer of
// 200,000 row groups of two columns peaks at 560 MB while parsed).
inline constexpr int64_t kFooterMemoryPerByte = 24;

// Loads an image dataset: `label` (optional: without it the set is unlabeled, labels kNoLabel) plus
// either every other number column in file order as pixels (pixel column k of row r -> image r byte k)
// or one FIXED_LEN_BYTE_ARRAY image column. The store is uint8: pixels must be integers in 0..255
// and labels integers that fit int64, never null, whatever the column type (INT32, INT64, FLOAT or
// DOUBLE); anything else throws DataError naming file, column, row group (when the file has
// several), the row within it and the value, as ParquetRowGroupReader does (row_group_reader.h):
//   train.parquet: column 'pixel12' row group 2 row 517: value 300 out of range 0..255
ImageStore read_parquet_images(const std::filesystem::path& path, const ParquetImageOptions& options = {});
ImageStore read_parquet_images(const ParquetFile& file, const ParquetImageOptions& options = {});

}  // namespace feeder::parquet
