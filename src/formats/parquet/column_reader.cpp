#include "feeder/formats/parquet/column_reader.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <utility>

#include "feeder/error.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/util/byte_size.h"
#include "formats/parquet/detail/chunk_reader.h"
#include "formats/parquet/detail/footer.h"
#include "io/detail/request_abort.h"
#include "util/mutex.h"

namespace feeder::parquet {

namespace {

// The tail read when a file is opened: the footer of most image files fits (784 pixel columns take
// about 60 KiB per row group), so one read usually gets footer, length and magic together.
constexpr int64_t kTailReadBytes = int64_t{64} << 10;
// A footer larger than this is not read: a lying length must not make the reader allocate gigabytes.
constexpr int64_t kMaxFooterBytes = int64_t{1} << 30;

constexpr const char* kFooterRead = "its footer (truncated while opening?)";

// Opens `path` through the file system that holds it; its errors name the file as the caller does.
std::shared_ptr<const RandomAccessFile> open_file(const std::filesystem::path& path, const std::string& name) {
  try {
    return file_system_for(path).open(path);
  } catch (const DataError& error) {
    const std::string what = error.what();
    if (name == path.string() || what.rfind(path.string(), 0) != 0) throw;
    throw DataError(name + what.substr(path.string().size()));
  }
}

// Refuses a footer by its length, before it is read or parsed.
void check_footer_bytes(uint32_t footer_bytes, int64_t max_metadata_bytes, const std::string& name) {
  if (footer_bytes > kMaxFooterBytes) {
    throw DataError(name + ": footer of " + std::to_string(footer_bytes) + " bytes is larger than the " +
                    std::to_string(kMaxFooterBytes) + " bytes this reader accepts");
  }
  const int64_t footer_memory = int64_t{footer_bytes} * kFooterMemoryPerByte;
  // A footer read with the tail (most files') takes at most 1.5 MiB: never refused, whatever the
  // budget, so that a small budget given to a small set still opens it.
  if (max_metadata_bytes > 0 && footer_bytes > kTailReadBytes && footer_memory > max_metadata_bytes) {
    throw DataError(name + ": its footer of " + format_byte_size(footer_bytes) + " (" + std::to_string(footer_bytes) +
                    " bytes) takes up to " + format_byte_size(footer_memory) + " in memory once read, more than the " +
                    format_byte_size(max_metadata_bytes) + " memory budget: raise the budget, or write the "
                    "set in fewer, larger row groups (a footer grows with row groups times columns)");
  }
}

std::out_of_range no_row_group(const std::string& name, int64_t row_group_idx, int64_t num_row_groups) {
  return std::out_of_range(name + ": no row group " + std::to_string(row_group_idx) + " (the file has " +
                           std::to_string(num_row_groups) + ")");
}

// Calls on_page(p) for each of a chunk's data pages (in file order) holding rows of `rows` (sorted
// by begin, disjoint): each page once, however many of them it holds.
template <class OnPage>
void for_each_page_holding(const std::vector<detail::PageSpan>& pages,
                           std::span<const ParquetColumnReader::RowSpan> rows, const OnPage& on_page) {
  size_t r = 0;
  for (size_t p = 0; p < pages.size(); ++p) {
    const int64_t begin = pages[p].first_row;
    const int64_t end = begin + pages[p].num_values;
    while (r < rows.size() && rows[r].end <= begin) ++r;
    if (r == rows.size()) return;
    if (rows[r].begin < end) on_page(p);
  }
}

}  // namespace

struct ParquetColumnReader::PageMaps {
  feeder::detail::Mutex mutex;
  std::vector<std::shared_ptr<const RowGroupPages>> by_row_group GUARDED_BY(mutex);
  // Per row group: a thread is finding its pages; the others wait for it (finding them reads the
  // chunks' headers, over a network the whole chunks) rather than read them again each.
  std::vector<bool> finding GUARDED_BY(mutex);
  feeder::detail::CondVar found;  // a row group's pages were found, or their finder gave up
};

ParquetColumnReader ParquetColumnReader::open(const std::filesystem::path& path, const ColumnReaderOptions& options,
                                              std::string name) {
  ParquetColumnReader reader;
  reader.name_ = name.empty() ? path.string() : std::move(name);
  reader.file_ = open_file(path, reader.name_);
  reader.verify_checksums_ = options.verify_checksums;
  reader.read_run_bytes_ = options.read_run_bytes;
  reader.read_footer(options);
  std::vector<int64_t> every(reader.metadata_.columns.size());
  std::iota(every.begin(), every.end(), int64_t{0});
  reader.select_columns(std::move(every));
  return reader;
}

void ParquetColumnReader::read_footer(const ColumnReaderOptions& options) {
  const int64_t size = file_->size();
  // The tail, and the leading magic: from the same read when the file is small.
  const int64_t tail_bytes = std::min(size, kTailReadBytes);
  const std::vector<uint8_t> tail = file_->read_exactly(size - tail_bytes, tail_bytes, kFooterRead);
  const std::vector<uint8_t> head = size <= kTailReadBytes
                                        ? std::vector<uint8_t>(tail.begin(), tail.begin() + std::min<int64_t>(size, 4))
                                        : file_->read_exactly(0, 4, kFooterRead);
  const std::span<const uint8_t> tail_span(tail);
  const uint32_t footer_bytes = detail::check_file_ends(
      head, tail_span.last(std::min(tail_span.size(), detail::kFooterTailBytes)), static_cast<uint64_t>(size), name_);
  check_footer_bytes(footer_bytes, options.max_metadata_bytes, name_);
  const int64_t footer_start = size - static_cast<int64_t>(detail::kFooterTailBytes) - footer_bytes;
  if (static_cast<int64_t>(footer_bytes + detail::kFooterTailBytes) <= tail_bytes) {
    const auto begin = tail.end() - static_cast<std::ptrdiff_t>(footer_bytes + detail::kFooterTailBytes);
    footer_.assign(begin, begin + footer_bytes);
  } else {
    footer_ = file_->read_exactly(footer_start, footer_bytes, kFooterRead);
  }
  metadata_ = detail::parse_footer(footer_, static_cast<uint64_t>(footer_start), name_);
}

int64_t ParquetColumnReader::row_group_rows(int64_t row_group_idx) const {
  return metadata_.row_groups.at(static_cast<size_t>(row_group_idx)).num_rows;
}

void ParquetColumnReader::select_columns(std::vector<int64_t> column_idx) {
  const auto num_columns = static_cast<int64_t>(metadata_.columns.size());
  for (const int64_t idx : column_idx) {
    if (idx < 0 || idx >= num_columns) {
      throw std::out_of_range(name_ + ": no column " + std::to_string(idx) + " (the file has " +
                              std::to_string(num_columns) + ")");
    }
  }
  is_selected_.assign(metadata_.columns.size(), false);
  values_per_row_.assign(metadata_.columns.size(), 1);
  selected_.clear();
  for (const int64_t idx : column_idx) {
    if (is_selected_[static_cast<size_t>(idx)]) continue;
    is_selected_[static_cast<size_t>(idx)] = true;
    selected_.push_back(idx);
    // A list column of varying length (0) is read as sequences (read_chunk).
    values_per_row_[static_cast<size_t>(idx)] = detail::list_values_per_row(metadata_, idx);
  }
  spans_.clear();
  for (const RowGroupInfo& group : metadata_.row_groups) {
    Span span{INT64_MAX, 0};
    for (const int64_t idx : selected_) {
      const ColumnChunkInfo& chunk = group.columns[static_cast<size_t>(idx)];
      if (chunk.encrypted) continue;  // never decoded: reading it reports the encryption
      span.begin = std::min(span.begin, chunk.start_offset());
      span.end = std::max(span.end, chunk.start_offset() + chunk.total_compressed_size_bytes);
    }
    if (span.end == 0) span.begin = 0;
    spans_.push_back(span);
  }
  page_maps_ = std::make_shared<PageMaps>();
  feeder::detail::MutexLock lock(page_maps_->mutex);
  page_maps_->by_row_group.resize(metadata_.row_groups.size());
  page_maps_->finding.resize(metadata_.row_groups.size());
}

int64_t ParquetColumnReader::row_group_read_bytes(int64_t row_group_idx) const {
  const Span& span = spans_.at(static_cast<size_t>(row_group_idx));
  return span.end - span.begin;
}

int64_t ParquetColumnReader::max_row_group_read_bytes() const {
  int64_t largest = 0;
  for (const Span& span : spans_) largest = std::max(largest, span.end - span.begin);
  return largest;
}

void ParquetColumnReader::check_selected(int64_t column_idx) const {
  if (column_idx < 0 || column_idx >= static_cast<int64_t>(is_selected_.size()) ||
      !is_selected_[static_cast<size_t>(column_idx)]) {
    throw std::invalid_argument(name_ + ": column " + std::to_string(column_idx) + " is not one of the columns read");
  }
}

detail::ChunkLocation ParquetColumnReader::chunk_location(int64_t row_group_idx, int64_t column_idx) const {
  const RowGroupInfo& group = metadata_.row_groups[static_cast<size_t>(row_group_idx)];
  detail::ChunkLocation where;
  where.file_name = &name_;
  where.column = &metadata_.columns[static_cast<size_t>(column_idx)];
  where.chunk = &group.columns[static_cast<size_t>(column_idx)];
  where.row_group_idx = row_group_idx;
  where.num_row_groups = num_row_groups();
  where.num_rows = group.num_rows;
  where.verify_checksums = verify_checksums_;
  if (!values_per_row_.empty()) where.values_per_row = values_per_row_[static_cast<size_t>(column_idx)];
  return where;
}

ParquetColumnReader::RowGroupChunks ParquetColumnReader::read_row_group(int64_t row_group_idx,
                                                                        std::vector<uint8_t>& scratch) const {
  if (row_group_idx < 0 || row_group_idx >= num_row_groups()) throw no_row_group(name_, row_group_idx, num_row_groups());
  const Span& span = spans_[static_cast<size_t>(row_group_idx)];
  const int64_t span_bytes = span.end - span.begin;
  if (static_cast<int64_t>(scratch.size()) < span_bytes) scratch.resize(static_cast<size_t>(span_bytes));
  read_exactly(row_group_idx, span.begin, std::span<uint8_t>(scratch.data(), static_cast<size_t>(span_bytes)));
  RowGroupChunks read;
  read.reader_ = this;
  read.row_group_idx_ = row_group_idx;
  read.bytes_ = std::span<const uint8_t>(scratch.data(), static_cast<size_t>(span_bytes));
  // The chunks with offsets relative to the span, so the page walker reads them from `scratch`.
  read.chunks_ = metadata_.row_groups[static_cast<size_t>(row_group_idx)].columns;
  for (ColumnChunkInfo& chunk : read.chunks_) {
    chunk.data_page_offset -= span.begin;
    if (chunk.dictionary_page_offset) *chunk.dictionary_page_offset -= span.begin;
  }
  return read;
}

void ParquetColumnReader::read_exactly(int64_t row_group_idx, int64_t offset, std::span<uint8_t> out) const {
  const int64_t got = file_->read_at(offset, out);
  if (got == static_cast<int64_t>(out.size())) return;
  throw DataError(name_ + ": row group " + std::to_string(row_group_idx) + ": file truncated while open: bytes " +
                  std::to_string(offset) + ".." + std::to_string(offset + static_cast<int64_t>(out.size())) +
                  " needed, the file ends at " + std::to_string(file_->size_now()));
}

void ParquetColumnReader::read_chunk(int64_t row_group_idx, int64_t column_idx, std::vector<uint8_t>& scratch,
                                     const OnPages& on_chunk) const {
  if (row_group_idx < 0 || row_group_idx >= num_row_groups()) throw no_row_group(name_, row_group_idx, num_row_groups());
  check_selected(column_idx);
  // The chunk with offsets relative to its first byte, so the page walker reads it from `scratch`.
  ColumnChunkInfo chunk = metadata_.row_groups[static_cast<size_t>(row_group_idx)].columns[static_cast<size_t>(column_idx)];
  const int64_t begin = chunk.start_offset();
  const int64_t size_bytes = chunk.total_compressed_size_bytes;
  if (static_cast<int64_t>(scratch.size()) < size_bytes) scratch.resize(static_cast<size_t>(size_bytes));
  const std::span<uint8_t> bytes(scratch.data(), static_cast<size_t>(size_bytes));
  read_exactly(row_group_idx, begin, bytes);
  chunk.data_page_offset -= begin;
  if (chunk.dictionary_page_offset) *chunk.dictionary_page_offset -= begin;
  detail::ChunkLocation where = chunk_location(row_group_idx, column_idx);
  where.file_bytes = bytes;
  where.chunk = &chunk;
  on_chunk(where);
}

int64_t ParquetColumnReader::chunk_read_bytes(int64_t row_group_idx, int64_t column_idx) const {
  check_selected(column_idx);
  const ColumnChunkInfo& chunk =
      metadata_.row_groups.at(static_cast<size_t>(row_group_idx)).columns[static_cast<size_t>(column_idx)];
  return chunk.total_compressed_size_bytes;
}

detail::ChunkLocation ParquetColumnReader::RowGroupChunks::chunk(int64_t column_idx) const {
  reader_->check_selected(column_idx);
  detail::ChunkLocation where = reader_->chunk_location(row_group_idx_, column_idx);
  where.file_bytes = bytes_;
  where.chunk = &chunks_[static_cast<size_t>(column_idx)];
  return where;
}

void ParquetColumnReader::use_page_maps(std::shared_ptr<PageMaps> maps) {
  if (!maps) return;
  {
    feeder::detail::MutexLock lock(maps->mutex);
    if (maps->by_row_group.size() != static_cast<size_t>(num_row_groups())) return;
  }
  page_maps_ = std::move(maps);
}

std::shared_ptr<const ParquetColumnReader::RowGroupPages> ParquetColumnReader::row_group_pages(
    int64_t row_group_idx) const {
  if (row_group_idx < 0 || row_group_idx >= num_row_groups()) throw no_row_group(name_, row_group_idx, num_row_groups());
  PageMaps& maps = *page_maps_;
  const auto rg = static_cast<size_t>(row_group_idx);
  {
    feeder::detail::MutexLock lock(maps.mutex);
    // Another thread finding them: wait for it, or take over if it gives up (its read failed, or
    // was no longer wanted). A waiter whose own read is no longer wanted gives up within 100 ms.
    while (!maps.by_row_group[rg] && maps.finding[rg]) {
      maps.found.wait_until(maps.mutex, std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
      if (feeder::detail::request_abort_asked()) throw feeder::detail::RequestAborted();
    }
    if (auto found = maps.by_row_group[rg]) return found;
    maps.finding[rg] = true;
  }
  // Found outside the lock: threads reading other row groups do not wait on these reads.
  struct Finding {
    PageMaps& maps;
    size_t rg;
    ~Finding() {
      {
        feeder::detail::MutexLock lock(maps.mutex);
        maps.finding[rg] = false;
      }
      maps.found.notify_all();
    }
  } finding{maps, rg};
  auto found = std::make_shared<RowGroupPages>(metadata_.columns.size());
  // Headers are read from a window of the file: where each read is a round trip
  // (gather_read_bytes), the window spans many pages' headers.
  std::vector<uint8_t> window;
  int64_t window_begin = 0, window_got = 0;
  const int64_t gather = file_->gather_read_bytes();
  const auto read = [&](int64_t offset, int64_t size_bytes) {
    if (offset < window_begin || offset + size_bytes > window_begin + window_got) {
      window.resize(static_cast<size_t>(std::max(size_bytes, gather)));
      window_begin = offset;
      window_got = file_->read_at(offset, window);
    }
    const int64_t from = offset - window_begin;
    return std::span<const uint8_t>(window.data() + from, static_cast<size_t>(std::min(size_bytes, window_got - from)));
  };
  for (const int64_t column_idx : selected_) {
    (*found)[static_cast<size_t>(column_idx)] = detail::locate_pages(chunk_location(row_group_idx, column_idx), read);
  }
  feeder::detail::MutexLock lock(maps.mutex);
  auto& slot = maps.by_row_group[rg];
  if (!slot) slot = std::move(found);
  return slot;
}

int64_t ParquetColumnReader::max_page_read_bytes(int64_t row_group_idx, int64_t column_idx, int64_t bytes_per_row) const {
  check_selected(column_idx);
  const std::shared_ptr<const RowGroupPages> pages = row_group_pages(row_group_idx);
  const detail::ChunkPages& chunk = (*pages)[static_cast<size_t>(column_idx)];
  // The dictionary page stays read and decoded while the data pages after it are.
  const int64_t dictionary = chunk.dictionary ? chunk.dictionary->size_bytes + chunk.dictionary->uncompressed_bytes : 0;
  int64_t largest = 0;
  for (const detail::PageSpan& page : chunk.data) {
    largest = std::max(largest, dictionary + page.size_bytes + page.uncompressed_bytes + page.num_values * bytes_per_row);
  }
  return largest;
}

int64_t ParquetColumnReader::max_page_rows(int64_t row_group_idx, int64_t column_idx) const {
  check_selected(column_idx);
  const std::shared_ptr<const RowGroupPages> pages = row_group_pages(row_group_idx);
  int64_t largest = 0;
  for (const detail::PageSpan& page : (*pages)[static_cast<size_t>(column_idx)].data) {
    largest = std::max(largest, page.num_values);
  }
  return largest;
}

void ParquetColumnReader::read_pages(int64_t row_group_idx, int64_t column_idx, std::span<const RowSpan> rows,
                                     std::vector<uint8_t>& scratch, const OnPages& on_page) const {
  check_selected(column_idx);
  const std::shared_ptr<const RowGroupPages> pages = row_group_pages(row_group_idx);
  const detail::ChunkPages& chunk_pages = (*pages)[static_cast<size_t>(column_idx)];
  ColumnChunkInfo partial;
  // Where each read is a round trip (gather_read_bytes), neighbouring pages are read together,
  // up to that many bytes a read, or up to read_run_bytes_ where larger (a large piece's pages in
  // one request); on a local disk one page a read unless read_run_bytes_ is set.
  const int64_t gather = file_->gather_read_bytes();
  const int64_t run_bound = std::max(gather, read_run_bytes_);
  // The runs of pages to read: [first, last] each, in file order.
  std::vector<std::pair<size_t, size_t>> runs;
  for_each_page_holding(chunk_pages.data, rows, [&](size_t p) {
    const detail::PageSpan& page = chunk_pages.data[p];
    if (runs.empty() || p != runs.back().second + 1 ||
        page.offset + page.size_bytes - chunk_pages.data[runs.back().first].offset > run_bound)
      runs.emplace_back(p, p);
    else
      runs.back().second = p;
  });
  // A chunk of at most a round trip's worth of bytes whose rows asked lie in pages apart (a label
  // or value column of a row group's scattered pieces) is read whole where each read is a round
  // trip: one request instead of one a run (its other pages cost less than the trips, and the
  // buffer no more than neighbouring pages read together take).
  if (gather > 0 && runs.size() > 1) {
    const int64_t whole = (chunk_pages.dictionary ? chunk_pages.dictionary->size_bytes : 0) +
                          chunk_pages.data.back().offset + chunk_pages.data.back().size_bytes -
                          chunk_pages.data.front().offset;
    if (whole <= gather) runs = {{0, chunk_pages.data.size() - 1}};
  }
  for (const auto& [first, last] : runs)
    on_page(read_data_pages(row_group_idx, column_idx, chunk_pages, first, last, scratch, partial));
}

void ParquetColumnReader::read_page_run(int64_t row_group_idx, int64_t column_idx, RowSpan rows,
                                        std::vector<uint8_t>& scratch, const OnPages& on_pages) const {
  check_selected(column_idx);
  const std::shared_ptr<const RowGroupPages> pages = row_group_pages(row_group_idx);
  const detail::ChunkPages& chunk_pages = (*pages)[static_cast<size_t>(column_idx)];
  std::optional<size_t> first;
  size_t last = 0;
  for_each_page_holding(chunk_pages.data, std::span(&rows, 1), [&](size_t p) {
    if (!first) first = p;
    last = p;
  });
  if (!first) {
    throw std::invalid_argument(name_ + ": row group " + std::to_string(row_group_idx) + ": rows " +
                                std::to_string(rows.begin) + ".." + std::to_string(rows.end) + " are in no page of column '" +
                                metadata_.columns[static_cast<size_t>(column_idx)].name + "'");
  }
  ColumnChunkInfo partial;
  on_pages(read_data_pages(row_group_idx, column_idx, chunk_pages, *first, last, scratch, partial));
}

detail::ChunkLocation ParquetColumnReader::read_data_pages(int64_t row_group_idx, int64_t column_idx,
                                                           const detail::ChunkPages& chunk_pages, size_t first,
                                                           size_t last, std::vector<uint8_t>& scratch,
                                                           ColumnChunkInfo& partial) const {
  const detail::PageSpan& first_page = chunk_pages.data[first];
  const detail::PageSpan& last_page = chunk_pages.data[last];
  const int64_t dictionary_bytes = chunk_pages.dictionary ? chunk_pages.dictionary->size_bytes : 0;
  const int64_t run_bytes = last_page.offset + last_page.size_bytes - first_page.offset;
  if (static_cast<int64_t>(scratch.size()) < dictionary_bytes + run_bytes) {
    scratch.resize(static_cast<size_t>(dictionary_bytes + run_bytes));
  }
  if (chunk_pages.dictionary) {
    read_exactly(row_group_idx, chunk_pages.dictionary->offset,
                 std::span<uint8_t>(scratch.data(), static_cast<size_t>(dictionary_bytes)));
  }
  read_exactly(row_group_idx, first_page.offset,
               std::span<uint8_t>(scratch.data() + dictionary_bytes, static_cast<size_t>(run_bytes)));
  partial = metadata_.row_groups[static_cast<size_t>(row_group_idx)].columns[static_cast<size_t>(column_idx)];
  partial.dictionary_page_offset = chunk_pages.dictionary ? std::optional<int64_t>(0) : std::nullopt;
  partial.data_page_offset = dictionary_bytes;
  partial.total_compressed_size_bytes = dictionary_bytes + run_bytes;
  detail::ChunkLocation where = chunk_location(row_group_idx, column_idx);
  const int64_t rows = last_page.first_row + last_page.num_values - first_page.first_row;  // pages count rows
  partial.num_values = rows * where.values_per_row;
  where.file_bytes = std::span<const uint8_t>(scratch.data(), static_cast<size_t>(dictionary_bytes + run_bytes));
  where.chunk = &partial;
  where.num_rows = rows;
  where.first_row = first_page.first_row;
  where.first_data_page = first_page.page_idx;
  where.has_dictionary_page = chunk_pages.dictionary.has_value();
  return where;
}

}  // namespace feeder::parquet
