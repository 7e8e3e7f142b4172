#pragma once

// Internal: walks the pages of one column chunk, checking every header against the chunk's bytes,
// verifying CRCs when asked, decompressing, and splitting data pages into definition levels and
// values. Value decoding is left to the caller, so the generic reader and the image path share it.

#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "feeder/formats/parquet/metadata.h"

namespace feeder::parquet::detail {

struct ChunkLocation {
  std::span<const uint8_t> file_bytes;
  const std::string* file_name = nullptr;
  const ColumnSchema* column = nullptr;
  const ColumnChunkInfo* chunk = nullptr;
  int64_t row_group_idx = 0;
  int64_t num_row_groups = 1;
  int64_t num_rows = 0;  // rows of the row group; a flat chunk holds exactly this many values
  bool verify_checksums = false;
  // A part of a chunk (some of its pages, with its dictionary page first when it has one), decoded
  // as a chunk of its own: its first data page is the chunk's page `first_data_page`, holding row
  // `first_row` of the row group. Messages then give the chunk's page and row numbers.
  int64_t first_row = 0;
  int64_t first_data_page = 0;  // 0: the whole chunk
  bool has_dictionary_page = false;
  // Values each row holds: 1 for a flat column; n for a list column read as arrays of n values
  // (each page must then hold whole rows, its repetition levels 0 then n - 1 ones per row); 0 for a
  // list column read as sequences, each row its own number (the caller counts rows from each
  // page's repetition levels, DataPage::rep_levels; first_row is then not known and stays 0).
  int64_t values_per_row = 1;
};

struct DictionaryPage {
  int64_t page_idx = 0;
  int64_t num_values = 0;
  std::span<const uint8_t> values;  // PLAIN-encoded dictionary entries
};

struct DataPage {
  int64_t page_idx = 0;
  int64_t first_row = 0;   // row (within the row group) of the page's first value
  int64_t num_values = 0;  // values in the page, nulls included: its rows times values_per_row
  Encoding encoding = Encoding::kPlain;
  // Definition levels as RLE/bit-packed hybrid data without a length prefix; empty when the column
  // is REQUIRED (every value present).
  std::span<const uint8_t> def_levels;
  // A sequence's pages (values_per_row 0): its repetition levels, as def_levels.
  std::span<const uint8_t> rep_levels;
  std::span<const uint8_t> values;

  int64_t num_rows(const ChunkLocation& where) const { return num_values / where.values_per_row; }
};

// "<file>: column '<name>'" plus " row group <i>" when the file has several, plus " page <i>".
std::string page_context(const ChunkLocation& where, int64_t page_idx);
std::string chunk_context(const ChunkLocation& where);

// Decompression buffer reused across pages and chunks; grows without zero-filling (every byte
// is written by the codec before it is read). Owned by one thread at a time.
class PageBuffer {
 public:
  uint8_t* get(size_t size_bytes) {
    if (size_bytes > capacity_) {
      data_.reset(new uint8_t[size_bytes]);
      capacity_ = size_bytes;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_ = 0;
};

// Where the values of PLAIN pages of a REQUIRED fixed-width column may be decompressed straight
// to: row r's value at base + r * value_bytes. Saves copying each page out of the page buffer; a
// page whose declared size is not exactly its values' goes through the buffer as usual.
struct DirectValues {
  uint8_t* base = nullptr;
  int64_t value_bytes = 0;
};

// Calls on_dictionary / on_data for each page in file order. Spans are valid only during the
// call. Errors (including DecodeErrors thrown by the callbacks) become DataErrors prefixed with
// the page context. At the end, checks that the pages held exactly num_rows values. With
// `direct`, a data page whose values were decompressed in place has values.data() equal to
// direct->base + first_row * value_bytes.
void for_each_page(const ChunkLocation& where, const std::function<void(const DictionaryPage&)>& on_dictionary,
                   const std::function<void(const DataPage&)>& on_data, PageBuffer* buffer = nullptr,
                   const DirectValues* direct = nullptr);

// The values each row of column `column_idx` holds, from the footer: 1 for a flat column; for a list
// column n when every row group's chunk holds n values a row (an array of n, as DuckDB's FLOAT[n]
// is written); 0 when they do not (lists of varying length), or when the file has no rows.
int64_t list_values_per_row(const FileMetadata& meta, int64_t column_idx);

// One page of a column chunk, as its header places it.
struct PageSpan {
  int64_t offset = 0;      // file offset of the page header
  int64_t size_bytes = 0;  // header and body
  int64_t uncompressed_bytes = 0;  // the body decompressed
  int64_t page_idx = 0;    // in the chunk, every page counted
  int64_t first_row = 0;   // data pages: the row of the row group holding its first value
  // Data pages: the rows it holds (its values / values_per_row); for a sequence column, whose rows
  // the headers do not give, first_row and num_values count values.
  int64_t num_values = 0;
  // Data pages: the statistics' minimum and maximum as stored (PLAIN bytes), when the header has them.
  std::optional<std::string> min_bytes, max_bytes;
};
struct ChunkPages {
  std::optional<PageSpan> dictionary;
  std::vector<PageSpan> data;  // in file order
};

// Finds the pages of a chunk from their headers alone: read(offset, size) returns the file's
// bytes there (fewer only at the end of the file); a header is read in a small read, grown while it
// does not parse. Checks what for_each_page checks of the headers (sizes within the chunk, value
// counts adding up to the chunk's), so that a part of the chunk can be decoded on its own.
ChunkPages locate_pages(const ChunkLocation& where,
                        const std::function<std::span<const uint8_t>(int64_t offset, int64_t size_bytes)>& read);

// Counts pages by type without decompressing anything.
struct PageCounts {
  int64_t dictionary = 0, data_v1 = 0, data_v2 = 0, other = 0;
  std::vector<Encoding> data_encodings;
  bool has_crc = false;
};
PageCounts count_pages(const ChunkLocation& where);

}  // namespace feeder::parquet::detail
