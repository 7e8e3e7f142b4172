#pragma once

// Reading the columns of a Parquet file through the file system, apart from what they mean: the
// file is opened by reading its footer only (never mapped, never read whole), and a row group's
// columns are read either whole, with one read of the bytes that cover their chunks, or a data
// page at a time, reading only the pages that hold some rows. Decoding values is the caller's: a
// read hands over each chunk or page located in the caller's buffer (a detail::ChunkLocation, for
// the decoders of src/formats/parquet/detail). ParquetRowGroupReader (row_group_reader.h) gives
// the columns their meaning (images, labels, value fields) on top of this.
//
// Thread safety: select_columns and use_page_maps set a reader up before it is shared; every other
// method is const and may be called from any number of threads at once (reads have no file
// position, and each call reads into the caller's buffer). Ownership: the reader owns its open file
// and its footer; the caller owns the buffers it reads into; the found pages are shared (PageMaps).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "feeder/formats/parquet/metadata.h"
#include "feeder/io/file_system.h"

namespace feeder::parquet {

namespace detail {
struct ChunkLocation;
struct ChunkPages;
}  // namespace detail

struct ColumnReaderOptions {
  // Check each page's CRC32 (when the writer stored one) as it is decoded.
  bool verify_checksums = true;
  // The most memory the footer may take once parsed (kFooterMemoryPerByte times its bytes),
  // checked for footers over 64 KiB (smaller ones always open); 0: no limit.
  int64_t max_metadata_bytes = 0;
  // The most bytes of neighbouring data pages read_pages reads with one read (a piece's pages);
  // the file's gather_read_bytes where larger. 0: a page a read on a local disk.
  int64_t read_run_bytes = 0;
};

// One open Parquet file, read a column chunk or a data page at a time. Move-only.
// A file replaced by rename after open keeps reading the old file; one truncated in place makes a
// read fail with a DataError naming the row group and the bytes it needed.
class ParquetColumnReader {
 public:
  // Opens `path` and reads its footer: one fstat and one read of the tail (two for footers over
  // 64 KiB, plus one of the leading magic for files over that), checked as ParquetFile::open checks
  // it. Every column is selected. Throws DataError naming the file: `name` (default: the path)
  // prefixes every error message.
  static ParquetColumnReader open(const std::filesystem::path& path, const ColumnReaderOptions& options = {},
                                  std::string name = {});

  ParquetColumnReader(ParquetColumnReader&& other) noexcept = default;
  ParquetColumnReader& operator=(ParquetColumnReader&& other) noexcept = default;
  ParquetColumnReader(const ParquetColumnReader&) = delete;
  ParquetColumnReader& operator=(const ParquetColumnReader&) = delete;
  ~ParquetColumnReader() = default;

  const std::string& name() const { return name_; }
  const FileMetadata& metadata() const { return metadata_; }
  uint64_t size_bytes() const { return static_cast<uint64_t>(file_->size()); }
  std::string file_version() const { return file_->version(); }
  // The footer as stored (the Thrift bytes), for fingerprints.
  std::span<const uint8_t> footer_bytes() const { return footer_; }
  bool verify_checksums() const { return verify_checksums_; }

  int64_t num_rows() const { return metadata_.num_rows; }
  int64_t num_row_groups() const { return static_cast<int64_t>(metadata_.row_groups.size()); }
  // std::out_of_range for an index outside the file.
  int64_t row_group_rows(int64_t row_group_idx) const;

  // The columns read (indices into metadata().columns, each at most once): the only ones whose
  // chunks a row group's read covers and whose pages are found. Before the reader is shared or
  // reads anything: it forgets the pages found so far. std::out_of_range for a column outside the file.
  void select_columns(std::vector<int64_t> column_idx);
  const std::vector<int64_t>& selected_columns() const { return selected_; }

  // Bytes read_row_group reads for a row group: from the first to the end of the last selected
  // chunk (chunks not selected that lie in between are read too; encrypted ones are left out).
  int64_t row_group_read_bytes(int64_t row_group_idx) const;
  // The largest row_group_read_bytes of the file; 0 without row groups.
  int64_t max_row_group_read_bytes() const;

  // A row group read whole: its selected chunks located in the buffer it was read into. Valid while
  // that buffer is unchanged and the reader lives.
  class RowGroupChunks {
   public:
    // The chunk of selected column `column_idx`, for a decoder of detail/; std::invalid_argument
    // for a column not selected.
    detail::ChunkLocation chunk(int64_t column_idx) const;

   private:
    friend class ParquetColumnReader;
    const ParquetColumnReader* reader_ = nullptr;
    int64_t row_group_idx_ = 0;
    std::span<const uint8_t> bytes_;
    std::vector<ColumnChunkInfo> chunks_;  // the row group's, offsets relative to bytes_
  };
  // Reads a row group's selected chunks with one read into `scratch` (resized as needed, reused by
  // the caller between calls). std::out_of_range for an index outside the file; DataError for a
  // file truncated while open.
  RowGroupChunks read_row_group(int64_t row_group_idx, std::vector<uint8_t>& scratch) const;

  // Rows [begin, end) of a row group.
  struct RowSpan {
    int64_t begin = 0;
    int64_t end = 0;
  };
  // Pages handed to the caller: located as a chunk of their own in the caller's buffer, valid during
  // the call only. where.first_row and where.num_rows say which rows of the row group they hold;
  // errors while decoding them give the page and row numbers of the whole chunk.
  using OnPages = std::function<void(const detail::ChunkLocation& where)>;
  // Each data page of selected column `column_idx` that holds rows of `rows` (sorted by begin,
  // disjoint), in file order, read into `scratch` (after the chunk's dictionary page, when it has
  // one) and handed to `on_page`: once, however many spans it holds. A page a read on a local disk;
  // neighbouring pages together up to the file's gather_read_bytes or read_run_bytes, whichever is
  // larger, and then handed over as one chunk. Finds the row group's pages on first use.
  // std::invalid_argument for a column not selected.
  void read_pages(int64_t row_group_idx, int64_t column_idx, std::span<const RowSpan> rows,
                  std::vector<uint8_t>& scratch, const OnPages& on_page) const;
  // The data pages of selected column `column_idx` that hold rows `rows`, read together with one
  // read into `scratch` (after the dictionary page, one read more) and handed to `on_pages` as one
  // chunk. std::invalid_argument when no page holds them.
  void read_page_run(int64_t row_group_idx, int64_t column_idx, RowSpan rows, std::vector<uint8_t>& scratch,
                     const OnPages& on_pages) const;

  // Selected column `column_idx`'s chunk of a row group read whole with one read into `scratch`
  // and handed to `on_chunk`: how a list column of varying length (a sequence, whose rows the page
  // headers do not place) is read. std::invalid_argument for a column not selected.
  void read_chunk(int64_t row_group_idx, int64_t column_idx, std::vector<uint8_t>& scratch,
                  const OnPages& on_chunk) const;
  // The bytes read_chunk reads.
  int64_t chunk_read_bytes(int64_t row_group_idx, int64_t column_idx) const;

  // A row group's pages, per column of the file (only the selected ones found), with their sizes,
  // rows and statistics: found from their headers on first use (a small read per page), then kept.
  using RowGroupPages = std::vector<detail::ChunkPages>;
  std::shared_ptr<const RowGroupPages> row_group_pages(int64_t row_group_idx) const;
  // The most memory read_pages takes for one data page of a selected column: the page and the
  // chunk's dictionary page as read and decompressed, plus `bytes_per_row` for each of the page's
  // rows (what the caller decodes them into). 0 for a chunk without data pages.
  int64_t max_page_read_bytes(int64_t row_group_idx, int64_t column_idx, int64_t bytes_per_row) const;
  // The most rows one data page of a selected column holds.
  int64_t max_page_rows(int64_t row_group_idx, int64_t column_idx) const;

  // The pages found so far, per row group (guarded inside). A reader opened again on the same file,
  // with the same columns selected, may take over another's so that they are not found again: a
  // sharded source closes shards it has not read lately and opens them again later.
  struct PageMaps;
  std::shared_ptr<PageMaps> page_maps() const { return page_maps_; }
  // Takes over `maps` from a reader of the same file; ignored when they are of another row group count.
  void use_page_maps(std::shared_ptr<PageMaps> maps);

 private:
  ParquetColumnReader() = default;

  struct Span {
    int64_t begin = 0;  // file offset
    int64_t end = 0;
  };

  std::shared_ptr<const RandomAccessFile> file_;  // through the file system that holds it
  std::string name_;
  std::vector<uint8_t> footer_;
  FileMetadata metadata_;
  bool verify_checksums_ = true;
  int64_t read_run_bytes_ = 0;
  std::vector<int64_t> selected_;
  std::vector<bool> is_selected_;  // per column of the file
  std::vector<int64_t> values_per_row_;  // per column: 1, n for a list column of n values a row, 0 for a sequence
  std::vector<Span> spans_;        // per row group, the bytes read_row_group reads
  std::shared_ptr<PageMaps> page_maps_;

  void read_footer(const ColumnReaderOptions& options);
  // Reads out.size() bytes at `offset`; DataError "file truncated while open" naming the row group
  // and the bytes when the file ends before them.
  void read_exactly(int64_t row_group_idx, int64_t offset, std::span<uint8_t> out) const;
  void check_selected(int64_t column_idx) const;
  detail::ChunkLocation chunk_location(int64_t row_group_idx, int64_t column_idx) const;
  // Data pages [first, last] of a chunk (after its dictionary page) read into `scratch`, located as
  // a chunk of their own whose metadata `partial` holds.
  detail::ChunkLocation read_data_pages(int64_t row_group_idx, int64_t column_idx, const detail::ChunkPages& chunk_pages,
                                        size_t first, size_t last, std::vector<uint8_t>& scratch,
                                        ColumnChunkInfo& partial) const;
};

}  // namespace feeder::parquet
