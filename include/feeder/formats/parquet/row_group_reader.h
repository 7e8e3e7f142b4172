#pragma once

// Reading an image set from a Parquet file one row group at a time, for sets larger than memory:
// what the columns mean (pixels, a whole image, an encoded image, a label, value fields), on top of
// ParquetColumnReader (column_reader.h), which opens the file by its footer and reads the columns'
// bytes, a row group's chunks with one read or only the pages that hold some rows, into a buffer
// the caller owns and reuses. This reader picks the columns and decodes what it is handed.
//
// Columns are chosen as read_parquet_images chooses them (ParquetImageOptions). Pixel columns may be
// INT32, INT64, FLOAT or DOUBLE, with or without an integer logical type (INT(8,false), UINT_8, ...);
// the label column too. The store is uint8 only: a pixel must be an integer in 0..255 and a label an
// integral value that fits int64 (unsigned annotations are read as unsigned). A fractional value,
// NaN, a value out of range or a null is not rounded, clamped or skipped: it throws DataError naming
// the file, column, row group (when the file has several), row within the row group and the value:
//   part-00003.parquet: column 'pixel12' row group 2 row 517: value 300 out of range 0..255
// Sets of float images (0..1 normalised, say) are out of scope: convert them to uint8 first.
//
// Thread safety: a ParquetRowGroupReader's methods are const and may be called from any number of
// threads at once. Ownership: it owns its column reader (and so the open file); the caller owns the
// buffers it reads into.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "feeder/data/schema.h"
#include "feeder/formats/parquet/column_reader.h"
#include "feeder/formats/parquet/metadata.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/store/image_store.h"

namespace feeder::parquet {

namespace detail {
class PageBuffer;
struct PixelScratch;
}  // namespace detail

// One open Parquet file of an image set: its column reader and the columns' meaning. Move-only.
// Thread safety: read_row_group and every accessor are const and may be called from any number of
// threads at once (pread has no file position; each call decodes with its own buffers).
// A file replaced by rename after open keeps reading the old file; one truncated in place makes
// read_row_group fail with a DataError.
class ParquetRowGroupReader {
 public:
  // Opens `path` and reads its footer: one fstat and one pread of the tail (two for footers over
  // 64 KiB, plus one of the leading magic for files over that). Validates it as ParquetFile::open
  // does, resolves the columns and the shape, and checks every row group against
  // options.max_decoded_bytes. Throws DataError naming the file. `name` prefixes error messages
  // (default: the path).
  static ParquetRowGroupReader open(const std::filesystem::path& path, const ParquetImageOptions& options = {},
                                    std::string name = {});

  ParquetRowGroupReader(ParquetRowGroupReader&& other) noexcept = default;
  ParquetRowGroupReader& operator=(ParquetRowGroupReader&& other) noexcept = default;
  ParquetRowGroupReader(const ParquetRowGroupReader&) = delete;
  ParquetRowGroupReader& operator=(const ParquetRowGroupReader&) = delete;
  ~ParquetRowGroupReader() = default;

  const std::string& name() const { return file_.name(); }
  const FileMetadata& metadata() const { return file_.metadata(); }
  uint64_t size_bytes() const { return file_.size_bytes(); }
  std::string file_version() const { return file_.file_version(); }  // RandomAccessFile::version
  // The footer as stored (the Thrift bytes), for fingerprints.
  std::span<const uint8_t> footer_bytes() const { return file_.footer_bytes(); }

  const ImageShape& shape() const { return shape_; }
  bool labeled() const { return label_idx_ >= 0; }
  // The columns read, for comparing the files of one set:
  // "label INT64, 784 pixel columns pixel1..pixel784 INT32 INT(8,false)".
  const std::string& columns() const { return columns_; }

  // The columns read as named values (ParquetImageOptions::value_columns), as fields, in order.
  const std::vector<Field>& value_fields() const { return value_fields_; }
  // Rows [begin, end) of a row group's value columns: field f's values into values[f] (a
  // ValueRegion: field_bytes of it a row; a sequence's values back to back with their ends),
  // reading only the pages that hold them, a page at a time, into `scratch` (a sequence's chunk
  // whole: its rows are placed by its levels). Errors name the file, column, row group and row.
  // Nothing for begin >= end.
  void read_values(int64_t row_group_idx, int64_t begin, int64_t end, std::span<const ValueRegion> values,
                   std::vector<uint8_t>& scratch) const;
  // The most bytes sequence field f's values take in a row group (its chunk's values, from the
  // footer, at element_bytes each): what a region for any of its rows needs. 0 for another field.
  int64_t sequence_bytes(int64_t row_group_idx, size_t field) const;

  // The label column's smallest and largest value from its chunk statistics, when every row group
  // has them and the column is a signed INT32 or INT64; otherwise (or unlabeled) nullopt.
  std::optional<std::pair<int64_t, int64_t>> label_range() const;
  // The same for one row group.
  std::optional<std::pair<int64_t, int64_t>> row_group_label_range(int64_t row_group_idx) const;
  // The same for rows [begin, end) of a row group, from the statistics of the label pages that hold
  // them (finding the row group's pages as read_rows does); nullopt when a page has none.
  std::optional<std::pair<int64_t, int64_t>> rows_label_range(int64_t row_group_idx, int64_t begin, int64_t end) const;

  // The labels of a row group, from its label column alone (a page at a time); kNoLabel for each row
  // of an unlabeled file. What the shuffle advice reads when pages carry no statistics.
  std::vector<int64_t> row_group_labels(int64_t row_group_idx) const;

  int64_t num_rows() const { return file_.num_rows(); }
  int64_t num_row_groups() const { return file_.num_row_groups(); }
  int64_t row_group_rows(int64_t row_group_idx) const { return file_.row_group_rows(row_group_idx); }
  // Bytes read_row_group reads for the row group: from the first to the end of the last column
  // chunk it needs (columns it does not need that lie in between are read too).
  int64_t row_group_read_bytes(int64_t row_group_idx) const { return file_.row_group_read_bytes(row_group_idx); }
  // The largest row_group_read_bytes of the file; 0 without row groups.
  int64_t max_row_group_read_bytes() const { return file_.max_row_group_read_bytes(); }

  // Reads row group `row_group_idx` with one pread into `scratch` (resized as needed, reused by
  // the caller between calls) and decodes it: pixels (rows, C*H*W) uint8 row-major into `pixels`,
  // labels (rows) into `labels` (kNoLabel when the file has no label column), both sized by the
  // caller for row_group_rows(row_group_idx). Throws DataError naming the file (and row group, and
  // column and row for a bad value); std::out_of_range for an index outside the file.
  void read_row_group(int64_t row_group_idx, std::vector<uint8_t>& scratch, uint8_t* pixels, int64_t* labels) const;

  // Files of encoded images (a BYTE_ARRAY column of JPEG, PNG or WebP files, as Hugging Face
  // datasets writes `image.bytes`; see ParquetImageOptions::image_column): shape() is {0, 0, 0}.
  bool encoded() const { return encoded_idx_ >= 0; }
  // The most bytes a row group's images take back to back: its image column's uncompressed size
  // (page headers and length prefixes included), so a bound known before reading. 0 for pixels.
  int64_t encoded_bytes_bound(int64_t row_group_idx) const;
  // Reads a row group of an encoded file with one pread into `scratch` and copies its images back
  // to back into `bytes` (room for `capacity`, at least encoded_bytes_bound), row r's ending at
  // ends[r], and its labels into `labels`. Returns the bytes written. A null image, or images
  // decoding to more than `capacity` (possible only with repeated images in a dictionary), throw
  // DataError naming the file, row group and row.
  int64_t read_encoded_row_group(int64_t row_group_idx, std::vector<uint8_t>& scratch, uint8_t* bytes,
                                 int64_t capacity, int64_t* ends, int64_t* labels) const;

  // The pieces an encoded row group streams in: runs of whole data pages of its image column of at
  // most `max_rows` rows and `max_bytes` uncompressed (a page of more is a piece of its own). `starts` holds each piece's
  // first row, then the row group's row count; `bytes_bound` each piece's images back to back (its
  // pages' uncompressed sizes, plus the dictionary's when the column has one); `max_read_bytes` the most memory read_encoded_rows uses for any of
  // them besides what it fills. Finds the row group's pages (a small read per page) on first use.
  struct EncodedPieces {
    std::vector<int64_t> starts;
    std::vector<int64_t> bytes_bound;
    int64_t max_read_bytes = 0;
  };
  EncodedPieces encoded_pieces(int64_t row_group_idx, int64_t max_rows, int64_t max_bytes) const;
  // Rows [begin, end) of a row group of an encoded file, as read_encoded_row_group reads a whole
  // one, reading only the image pages that hold them and the label pages that overlap them. `begin`
  // and `end` must be page boundaries of the image column (a piece of encoded_pieces): else
  // std::invalid_argument.
  int64_t read_encoded_rows(int64_t row_group_idx, int64_t begin, int64_t end, std::vector<uint8_t>& scratch,
                            uint8_t* bytes, int64_t capacity, int64_t* ends, int64_t* labels) const;

  // Rows [begin, end) of a row group, decoded into `pixels` ((end - begin), C*H*W) and `labels`.
  struct RowRange {
    int64_t begin = 0;
    int64_t end = 0;
    uint8_t* pixels = nullptr;
    int64_t* labels = nullptr;
    std::span<const ValueRegion> values = {};  // read_values: field f's rows at values[f]
  };
  // The value columns' rows of `ranges` (disjoint, in any order) of one row group, as read_values
  // reads one range: each page that holds some of them read and decoded once, however many ranges
  // it holds (the pieces of a row group written as one page per column share it).
  void read_values(int64_t row_group_idx, std::span<const RowRange> ranges, std::vector<uint8_t>& scratch) const;
  // Reads the rows of `ranges` (disjoint, in any order) of one row group, reading and decoding only
  // the pages that hold them, one page at a time, each once however many ranges it holds: a part of
  // a large row group costs about its share of it when its pages are small, and all of its pages
  // when they are not (DuckDB's, one page per column chunk). The pages are found from their headers
  // on the first read of the row group, then kept. Errors as read_row_group, with the page and row
  // numbers of the whole chunk.
  void read_rows(int64_t row_group_idx, std::span<const RowRange> ranges, std::vector<uint8_t>& scratch) const;
  // The most memory read_rows uses besides the rows it fills, over the row groups of more than
  // `min_rows` rows (0 when there are none): per column read, a dictionary page and a data page
  // compressed and decompressed and the page's rows decoded, and for numeric pixel columns a tile of
  // 32 bytes per row of the row group. Finds the pages of those row groups (a small read per page).
  int64_t max_rows_read_bytes(int64_t min_rows = 0) const;
  // The most rows in one data page of the columns read_rows reads, over the row groups of more than
  // `min_rows` rows (0 when there are none): what reading any part of such a page decodes.
  int64_t largest_page_rows(int64_t min_rows = 0) const;

  // The pages of each row group that read_rows has found (ParquetColumnReader::PageMaps). A reader
  // opened again on the same file may take over another's, so that they are not found again: a
  // sharded source closes shards it has not read lately and opens them again later.
  using PageMaps = ParquetColumnReader::PageMaps;
  std::shared_ptr<PageMaps> page_maps() const { return file_.page_maps(); }
  // Takes over `maps` from a reader of the same file; ignored when they are of another row group count.
  void use_page_maps(std::shared_ptr<PageMaps> maps) { file_.use_page_maps(std::move(maps)); }

 private:
  using RowSpan = ParquetColumnReader::RowSpan;

  explicit ParquetRowGroupReader(ParquetColumnReader file) : file_(std::move(file)) {}

  ParquetColumnReader file_;  // reads the columns' bytes and finds their pages
  ImageShape shape_;
  std::string columns_;
  int64_t label_idx_ = -1;
  std::vector<int64_t> pixel_idx_;  // numeric pixel columns in pixel order; or
  int64_t image_idx_ = -1;          // the FIXED_LEN_BYTE_ARRAY column of whole images; or
  int64_t encoded_idx_ = -1;        // the BYTE_ARRAY column of encoded images
  std::vector<int64_t> value_idx_;  // the value columns, and the fields they are read as
  std::vector<Field> value_fields_;

  // Resolves the columns as `options` names them and selects them for reading.
  void resolve_columns(const ParquetImageOptions& options);
  std::vector<int64_t> needed_columns() const;
  void check_row_group(int64_t row_group_idx) const;
  // The bytes a page's rows decode into per row before they are copied out: images, labels or
  // values (8 bytes at most); 0 for pixel columns, which decode into the tile.
  int64_t decoded_row_bytes(int64_t column_idx) const;
  // Whether the column is read as a sequence field (its chunk whole: read_sequences).
  bool is_sequence_column(int64_t column_idx) const;
  // Sequence field `field`'s rows of `sorted` ranges of a row group, from its chunk read whole.
  void read_sequences(int64_t row_group_idx, size_t field, std::span<const RowRange> sorted,
                      std::vector<uint8_t>& scratch, detail::PageBuffer& buffer) const;
  // A whole row group's labels (kNoLabel without a label column).
  void decode_labels(const ParquetColumnReader::RowGroupChunks& chunks, int64_t rows, int64_t* labels,
                     detail::PageBuffer& buffer) const;
  // `ranges` sorted by begin, checked to be disjoint parts of the row group.
  std::vector<RowRange> sorted_ranges(int64_t row_group_idx, std::span<const RowRange> ranges) const;
  // The labels of `ranges` (sorted) into their `labels` (kNoLabel without a label column), from the
  // label pages that hold them, read a page at a time into `scratch`.
  void read_range_labels(int64_t row_group_idx, std::span<const RowRange> ranges, std::vector<uint8_t>& scratch,
                         detail::PageBuffer& buffer) const;
  // The images of `ranges` (sorted) from the pages of the image column or of the pixel columns.
  void read_range_images(int64_t row_group_idx, std::span<const RowRange> ranges, std::vector<uint8_t>& scratch,
                         detail::PageBuffer& buffer) const;
  void read_range_pixels(int64_t row_group_idx, std::span<const RowRange> ranges, std::vector<uint8_t>& scratch,
                         detail::PixelScratch& decode) const;
  // The labels of rows [begin, end) of a row group into `labels`, as read_range_labels.
  void read_label_rows(int64_t row_group_idx, int64_t begin, int64_t end, int64_t* labels,
                       std::vector<uint8_t>& scratch) const;
};

}  // namespace feeder::parquet
