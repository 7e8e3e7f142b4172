#include "feeder/formats/parquet/row_group_reader.h"


#include <algorithm>
#include <limits>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "feeder/error.h"
#include "feeder/util/byte_size.h"
#include "formats/parquet/detail/chunk_reader.h"
#include "formats/parquet/detail/footer.h"
#include "formats/parquet/detail/image_columns.h"
#include "formats/parquet/detail/image_decode.h"
#include "formats/parquet/detail/value_columns.h"
#include "util/mutex.h"

namespace feeder::parquet {

namespace {

// The tail read when a file is opened: the footer of most image files fits (784 pixel columns take
// about 60 KiB per row group), so one read usually gets footer, length and magic together.
constexpr int64_t kTailReadBytes = int64_t{64} << 10;
// A footer larger than this is not read: a lying length must not make the reader allocate gigabytes.
constexpr int64_t kMaxFooterBytes = int64_t{1} << 30;

constexpr const char* kFooterRead = "its footer (truncated while opening?)";

}  // namespace

struct ParquetRowGroupReader::PageMaps {
  using RowGroupPages = std::vector<detail::ChunkPages>;  // per column of the file; only those read are filled
  feeder::detail::Mutex mutex;
  std::vector<std::shared_ptr<const RowGroupPages>> by_row_group GUARDED_BY(mutex);
};

ParquetRowGroupReader ParquetRowGroupReader::open(const std::filesystem::path& path, const ParquetImageOptions& options,
                                                  std::string name) {
  ParquetRowGroupReader reader;
  reader.name_ = name.empty() ? path.string() : std::move(name);
  const std::string& n = reader.name_;
  try {
    reader.file_ = file_system_for(path).open(path);
  } catch (const DataError& error) {  // named as the caller names the file
    const std::string what = error.what();
    if (n == path.string() || what.rfind(path.string(), 0) != 0) throw;
    throw DataError(n + what.substr(path.string().size()));
  }
  const int64_t size = reader.file_->size();

  // The tail, and the leading magic: from the same read when the file is small.
  const int64_t tail_bytes = std::min(size, kTailReadBytes);
  const RandomAccessFile& file = *reader.file_;
  const std::vector<uint8_t> tail = file.read_exactly(size - tail_bytes, tail_bytes, kFooterRead);
  const std::vector<uint8_t> head = size <= kTailReadBytes
                                        ? std::vector<uint8_t>(tail.begin(), tail.begin() + std::min<int64_t>(size, 4))
                                        : file.read_exactly(0, 4, kFooterRead);
  const std::span<const uint8_t> tail_span(tail);
  const uint32_t footer_bytes = detail::check_file_ends(
      head, tail_span.last(std::min(tail_span.size(), detail::kFooterTailBytes)), static_cast<uint64_t>(size), n);
  if (footer_bytes > kMaxFooterBytes) {
    throw DataError(n + ": footer of " + std::to_string(footer_bytes) + " bytes is larger than the " +
                    std::to_string(kMaxFooterBytes) + " bytes this reader accepts");
  }
  const int64_t footer_memory = int64_t{footer_bytes} * kFooterMemoryPerByte;
  // A footer read with the tail (most files') takes at most 1.5 MiB: never refused, whatever the
  // budget, so that a small budget given to a small set still opens it.
  if (options.max_metadata_bytes > 0 && footer_bytes > kTailReadBytes && footer_memory > options.max_metadata_bytes) {
    throw DataError(n + ": its footer of " + format_byte_size(footer_bytes) + " (" + std::to_string(footer_bytes) +
                    " bytes) takes up to " + format_byte_size(footer_memory) + " in memory once read, more than the " +
                    format_byte_size(options.max_metadata_bytes) + " memory budget: raise the budget, or write the "
                    "set in fewer, larger row groups (a footer grows with row groups times columns)");
  }
  const int64_t footer_start = size - static_cast<int64_t>(detail::kFooterTailBytes) - footer_bytes;
  if (static_cast<int64_t>(footer_bytes + detail::kFooterTailBytes) <= tail_bytes) {
    const auto begin = tail.end() - static_cast<std::ptrdiff_t>(footer_bytes + detail::kFooterTailBytes);
    reader.footer_.assign(begin, begin + footer_bytes);
  } else {
    reader.footer_ = file.read_exactly(footer_start, footer_bytes, kFooterRead);
  }
  reader.metadata_ = detail::parse_footer(reader.footer_, static_cast<uint64_t>(footer_start), n);

  const detail::ImageColumns columns = detail::resolve_image_columns(reader.metadata_, n, options);
  reader.shape_ = columns.shape;
  reader.columns_ = detail::describe_image_columns(reader.metadata_, columns);
  reader.label_idx_ = columns.label_idx;
  reader.pixel_idx_ = columns.pixel_idx;
  reader.image_idx_ = columns.image_idx;
  reader.verify_checksums_ = options.verify_checksums;

  reader.encoded_idx_ = columns.encoded_idx;
  reader.value_idx_ = columns.value_idx;
  for (const int64_t idx : columns.value_idx)
    reader.value_fields_.push_back(detail::value_field(reader.metadata_.columns[static_cast<size_t>(idx)], n));
  const std::vector<int64_t> needed = reader.needed_columns();
  for (int64_t rg = 0; rg < reader.num_row_groups(); ++rg) {
    const RowGroupInfo& group = reader.metadata_.row_groups[static_cast<size_t>(rg)];
    detail::check_decoded_size(group.num_rows, reader.shape_, options.max_decoded_bytes, n + ": row group " + std::to_string(rg));
    Span span{INT64_MAX, 0};
    for (const int64_t column_idx : needed) {
      const ColumnChunkInfo& chunk = group.columns[static_cast<size_t>(column_idx)];
      if (chunk.encrypted) continue;  // never decoded: reading it reports the encryption
      span.begin = std::min(span.begin, chunk.start_offset());
      span.end = std::max(span.end, chunk.start_offset() + chunk.total_compressed_size_bytes);
    }
    if (span.end == 0) span.begin = 0;
    reader.spans_.push_back(span);
  }
  reader.page_maps_ = std::make_shared<PageMaps>();
  feeder::detail::MutexLock lock(reader.page_maps_->mutex);
  reader.page_maps_->by_row_group.resize(static_cast<size_t>(reader.num_row_groups()));
  return reader;
}

int64_t ParquetRowGroupReader::row_group_rows(int64_t row_group_idx) const {
  return metadata_.row_groups.at(static_cast<size_t>(row_group_idx)).num_rows;
}

int64_t ParquetRowGroupReader::row_group_read_bytes(int64_t row_group_idx) const {
  const Span& span = spans_.at(static_cast<size_t>(row_group_idx));
  return span.end - span.begin;
}

int64_t ParquetRowGroupReader::max_row_group_read_bytes() const {
  int64_t largest = 0;
  for (const Span& span : spans_) largest = std::max(largest, span.end - span.begin);
  return largest;
}

namespace {

// A label statistic's PLAIN bytes as an int64, for a signed INT32 or INT64 column; nullopt otherwise.
std::optional<int64_t> label_value(const ColumnSchema& column, const std::optional<std::string>& bytes) {
  const bool is_int32 = column.physical_type == PhysicalType::kInt32;
  if ((!is_int32 && column.physical_type != PhysicalType::kInt64) || !column.int_signed || !bytes) return std::nullopt;
  if (bytes->size() != (is_int32 ? 4u : 8u)) return std::nullopt;
  if (is_int32) {
    int32_t value = 0;
    std::memcpy(&value, bytes->data(), 4);
    return value;
  }
  int64_t value = 0;
  std::memcpy(&value, bytes->data(), 8);
  return value;
}

}  // namespace

std::optional<std::pair<int64_t, int64_t>> ParquetRowGroupReader::row_group_label_range(int64_t row_group_idx) const {
  if (label_idx_ < 0) return std::nullopt;
  const ColumnSchema& column = metadata_.columns[static_cast<size_t>(label_idx_)];
  const ColumnChunkInfo& chunk = metadata_.row_groups.at(static_cast<size_t>(row_group_idx)).columns[static_cast<size_t>(label_idx_)];
  const std::optional<int64_t> low = label_value(column, chunk.min_bytes);
  const std::optional<int64_t> high = label_value(column, chunk.max_bytes);
  if (!low || !high) return std::nullopt;
  return std::pair{*low, *high};
}

std::optional<std::pair<int64_t, int64_t>> ParquetRowGroupReader::rows_label_range(int64_t row_group_idx, int64_t begin,
                                                                                   int64_t end) const {
  if (label_idx_ < 0) return std::nullopt;
  const ColumnSchema& column = metadata_.columns[static_cast<size_t>(label_idx_)];
  const auto pages = row_group_pages(row_group_idx);
  std::optional<std::pair<int64_t, int64_t>> range;
  for (const detail::PageSpan& page : (*pages)[static_cast<size_t>(label_idx_)].data) {
    if (page.first_row >= end || page.first_row + page.num_values <= begin) continue;
    const std::optional<int64_t> low = label_value(column, page.min_bytes);
    const std::optional<int64_t> high = label_value(column, page.max_bytes);
    if (!low || !high) return std::nullopt;
    range = range ? std::pair{std::min(range->first, *low), std::max(range->second, *high)} : std::pair{*low, *high};
  }
  return range;
}

std::optional<std::pair<int64_t, int64_t>> ParquetRowGroupReader::label_range() const {
  if (label_idx_ < 0 || metadata_.row_groups.empty()) return std::nullopt;
  std::pair<int64_t, int64_t> range{INT64_MAX, INT64_MIN};
  for (int64_t rg = 0; rg < num_row_groups(); ++rg) {
    if (row_group_rows(rg) == 0) continue;
    const auto group = row_group_label_range(rg);
    if (!group) return std::nullopt;
    range.first = std::min(range.first, group->first);
    range.second = std::max(range.second, group->second);
  }
  if (range.first > range.second) return std::nullopt;
  return range;
}

std::vector<ColumnChunkInfo> ParquetRowGroupReader::read_span(int64_t row_group_idx, std::vector<uint8_t>& scratch) const {
  if (row_group_idx < 0 || row_group_idx >= num_row_groups()) {
    throw std::out_of_range(name_ + ": no row group " + std::to_string(row_group_idx) + " (the file has " +
                            std::to_string(num_row_groups()) + ")");
  }
  const RowGroupInfo& group = metadata_.row_groups[static_cast<size_t>(row_group_idx)];
  const Span& span = spans_[static_cast<size_t>(row_group_idx)];
  const int64_t span_bytes = span.end - span.begin;
  if (static_cast<int64_t>(scratch.size()) < span_bytes) scratch.resize(static_cast<size_t>(span_bytes));
  const int64_t got = file_->read_at(span.begin, std::span<uint8_t>(scratch.data(), static_cast<size_t>(span_bytes)));
  if (got != span_bytes) {
    const int64_t file_end = file_->size_now();
    throw DataError(name_ + ": row group " + std::to_string(row_group_idx) + ": file truncated while open: bytes " +
                    std::to_string(span.begin) + ".." + std::to_string(span.end) + " needed, the file ends at " +
                    std::to_string(file_end));
  }
  // The chunks with offsets relative to the span, so the page walker reads them from `scratch`.
  std::vector<ColumnChunkInfo> chunks = group.columns;
  for (ColumnChunkInfo& chunk : chunks) {
    chunk.data_page_offset -= span.begin;
    if (chunk.dictionary_page_offset) *chunk.dictionary_page_offset -= span.begin;
  }
  return chunks;
}

detail::ChunkLocation ParquetRowGroupReader::span_location(int64_t row_group_idx, int64_t column_idx,
                                                           const std::vector<ColumnChunkInfo>& chunks,
                                                           const std::vector<uint8_t>& scratch) const {
  const Span& span = spans_[static_cast<size_t>(row_group_idx)];
  detail::ChunkLocation where = chunk_location(row_group_idx, column_idx);
  where.file_bytes = std::span<const uint8_t>(scratch.data(), static_cast<size_t>(span.end - span.begin));
  where.chunk = &chunks[static_cast<size_t>(column_idx)];
  return where;
}

void ParquetRowGroupReader::read_row_group(int64_t row_group_idx, std::vector<uint8_t>& scratch, uint8_t* pixels,
                                           int64_t* labels) const {
  if (encoded_idx_ >= 0) throw std::logic_error(name_ + ": holds encoded images: read them with read_encoded_row_group");
  const std::vector<ColumnChunkInfo> chunks = read_span(row_group_idx, scratch);
  const int64_t rows = row_group_rows(row_group_idx);
  const auto locate = [&](int64_t column_idx) { return span_location(row_group_idx, column_idx, chunks, scratch); };
  detail::PixelScratch decode;
  if (label_idx_ >= 0) {
    detail::decode_label_chunk(locate(label_idx_), labels, decode.pages);
  } else {
    std::fill(labels, labels + rows, kNoLabel);
  }
  if (image_idx_ >= 0) {
    detail::decode_image_chunk(locate(image_idx_), pixels, shape_.num_pixels(), decode.pages);
  } else {
    detail::decode_pixel_columns(locate, pixel_idx_, 0, static_cast<int64_t>(pixel_idx_.size()), rows,
                                 shape_.num_pixels(), pixels, decode);
  }
}

namespace {

// The most a codec's stream of `compressed` bytes can inflate to, for files of encoded images
// (already compressed: about 1x). The formats' own limits where they have one (a snappy copy of 64
// bytes takes 3, an lz4 sequence of 255 bytes 1, deflate's 258 about a quarter of a byte), a
// generous one for zstd and brotli, whose runs have none; page headers add a little.
int64_t inflated_bound(Codec codec, int64_t compressed) {
  constexpr int64_t kHeaderSlack = 1 << 16;
  int64_t ratio = 4096;  // zstd, brotli, lzo, unknown
  switch (codec) {
    case Codec::kUncompressed: ratio = 1; break;
    case Codec::kSnappy: ratio = 32; break;
    case Codec::kLz4: case Codec::kLz4Raw: ratio = 256; break;
    case Codec::kGzip: ratio = 1100; break;
    default: break;
  }
  return compressed > (std::numeric_limits<int64_t>::max() - kHeaderSlack) / ratio ? std::numeric_limits<int64_t>::max()
                                                                                   : compressed * ratio + kHeaderSlack;
}

}  // namespace

int64_t ParquetRowGroupReader::encoded_bytes_bound(int64_t row_group_idx) const {
  if (encoded_idx_ < 0) return 0;
  const RowGroupInfo& group = metadata_.row_groups.at(static_cast<size_t>(row_group_idx));
  const ColumnChunkInfo& chunk = group.columns[static_cast<size_t>(encoded_idx_)];
  // What the budget and the stream's buffers are sized by: a footer's claim, checked first.
  if (chunk.total_uncompressed_size_bytes > inflated_bound(chunk.codec, chunk.total_compressed_size_bytes))
    throw DataError(name_ + ": row group " + std::to_string(row_group_idx) + ": the image column claims " +
                    std::to_string(chunk.total_uncompressed_size_bytes) + " bytes uncompressed from " +
                    std::to_string(chunk.total_compressed_size_bytes) + " compressed (total_uncompressed_size), more "
                    "than its codec can inflate them to: a damaged or hostile footer");
  return chunk.total_uncompressed_size_bytes;
}

int64_t ParquetRowGroupReader::read_encoded_row_group(int64_t row_group_idx, std::vector<uint8_t>& scratch,
                                                      uint8_t* bytes, int64_t capacity, int64_t* ends,
                                                      int64_t* labels) const {
  if (encoded_idx_ < 0) throw std::logic_error(name_ + ": holds pixels, not encoded images: read them with read_row_group");
  const std::vector<ColumnChunkInfo> chunks = read_span(row_group_idx, scratch);
  const auto locate = [&](int64_t column_idx) { return span_location(row_group_idx, column_idx, chunks, scratch); };
  detail::PageBuffer pages;
  if (label_idx_ >= 0) {
    detail::decode_label_chunk(locate(label_idx_), labels, pages);
  } else {
    std::fill(labels, labels + row_group_rows(row_group_idx), kNoLabel);
  }
  return detail::decode_encoded_chunk(locate(encoded_idx_), bytes, capacity, ends, pages);
}

}  // namespace feeder::parquet

namespace feeder::parquet {

namespace {

// Which of a chunk's data pages hold rows of `ranges` (sorted by begin), as runs [first, last] of
// consecutive pages, each at most `max_pages` long.
std::vector<std::pair<size_t, size_t>> page_runs(const std::vector<detail::PageSpan>& pages,
                                                 std::span<const ParquetRowGroupReader::RowRange> ranges,
                                                 size_t max_pages) {
  std::vector<std::pair<size_t, size_t>> runs;
  size_t r = 0;
  for (size_t p = 0; p < pages.size(); ++p) {
    const int64_t begin = pages[p].first_row;
    const int64_t end = begin + pages[p].num_values;
    while (r < ranges.size() && ranges[r].end <= begin) ++r;
    if (r == ranges.size()) break;
    if (ranges[r].begin >= end) continue;
    if (!runs.empty() && runs.back().second + 1 == p && p - runs.back().first < max_pages) {
      runs.back().second = p;
    } else {
      runs.emplace_back(p, p);
    }
  }
  return runs;
}

}  // namespace

void ParquetRowGroupReader::use_page_maps(std::shared_ptr<PageMaps> maps) {
  if (!maps) return;
  {
    feeder::detail::MutexLock lock(maps->mutex);
    if (maps->by_row_group.size() != static_cast<size_t>(num_row_groups())) return;
  }
  page_maps_ = std::move(maps);
}

int64_t ParquetRowGroupReader::max_rows_read_bytes(int64_t min_rows) const {
  int64_t largest = 0;
  const int64_t image_bytes = shape_.num_pixels();
  for (int64_t rg = 0; rg < num_row_groups(); ++rg) {
    const int64_t rows = row_group_rows(rg);
    if (rows <= min_rows) continue;
    const std::shared_ptr<const PageMaps::RowGroupPages> pages = row_group_pages(rg);
    int64_t column_bytes = 0;
    for (const int64_t column_idx : needed_columns()) {
      const detail::ChunkPages& chunk = (*pages)[static_cast<size_t>(column_idx)];
      // A page's rows decoded: images, labels or values (8 bytes at most); pixel columns decode
      // into the tile (below).
      const bool eight_bytes = column_idx == label_idx_ || std::find(value_idx_.begin(), value_idx_.end(), column_idx) != value_idx_.end();
      const int64_t value_bytes = column_idx == image_idx_ ? image_bytes : eight_bytes ? int64_t{8} : 0;
      const int64_t dictionary = chunk.dictionary ? chunk.dictionary->size_bytes + chunk.dictionary->uncompressed_bytes : 0;
      for (const detail::PageSpan& page : chunk.data) {
        column_bytes = std::max(column_bytes, dictionary + page.size_bytes + page.uncompressed_bytes + page.num_values * value_bytes);
      }
    }
    const int64_t tile = pixel_idx_.empty() ? 0 : detail::tile_columns(rows) * rows;
    largest = std::max(largest, column_bytes + tile);
  }
  return largest;
}

int64_t ParquetRowGroupReader::largest_page_rows(int64_t min_rows) const {
  int64_t largest = 0;
  for (int64_t rg = 0; rg < num_row_groups(); ++rg) {
    if (row_group_rows(rg) <= min_rows) continue;
    const std::shared_ptr<const PageMaps::RowGroupPages> pages = row_group_pages(rg);
    for (const int64_t column_idx : needed_columns()) {
      for (const detail::PageSpan& page : (*pages)[static_cast<size_t>(column_idx)].data) {
        largest = std::max(largest, page.num_values);
      }
    }
  }
  return largest;
}

std::vector<int64_t> ParquetRowGroupReader::needed_columns() const {
  std::vector<int64_t> needed = pixel_idx_;
  if (image_idx_ >= 0) needed.push_back(image_idx_);
  if (encoded_idx_ >= 0) needed.push_back(encoded_idx_);
  if (label_idx_ >= 0) needed.push_back(label_idx_);
  needed.insert(needed.end(), value_idx_.begin(), value_idx_.end());
  return needed;
}

detail::ChunkLocation ParquetRowGroupReader::chunk_location(int64_t row_group_idx, int64_t column_idx) const {
  const RowGroupInfo& group = metadata_.row_groups[static_cast<size_t>(row_group_idx)];
  detail::ChunkLocation where;
  where.file_name = &name_;
  where.column = &metadata_.columns[static_cast<size_t>(column_idx)];
  where.chunk = &group.columns[static_cast<size_t>(column_idx)];
  where.row_group_idx = row_group_idx;
  where.num_row_groups = num_row_groups();
  where.num_rows = group.num_rows;
  where.verify_checksums = verify_checksums_;
  return where;
}

std::shared_ptr<const ParquetRowGroupReader::PageMaps::RowGroupPages> ParquetRowGroupReader::row_group_pages(
    int64_t row_group_idx) const {
  {
    feeder::detail::MutexLock lock(page_maps_->mutex);
    if (auto found = page_maps_->by_row_group[static_cast<size_t>(row_group_idx)]) return found;
  }
  // Found outside the lock: threads reading other row groups do not wait on these reads. Two
  // threads finding the same row group's pages both read them; the first to finish is kept.
  auto found = std::make_shared<PageMaps::RowGroupPages>(metadata_.columns.size());
  std::vector<uint8_t> header_bytes;
  const auto read = [&](int64_t offset, int64_t size_bytes) {
    header_bytes.resize(static_cast<size_t>(size_bytes));
    const int64_t got = file_->read_at(offset, header_bytes);
    return std::span<const uint8_t>(header_bytes.data(), static_cast<size_t>(got));
  };
  for (const int64_t column_idx : needed_columns()) {
    (*found)[static_cast<size_t>(column_idx)] = detail::locate_pages(chunk_location(row_group_idx, column_idx), read);
  }
  feeder::detail::MutexLock lock(page_maps_->mutex);
  auto& slot = page_maps_->by_row_group[static_cast<size_t>(row_group_idx)];
  if (!slot) slot = std::move(found);
  return slot;
}

detail::ChunkLocation ParquetRowGroupReader::read_page_run(int64_t row_group_idx, int64_t column_idx,
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
  const auto read_exactly = [&](uint8_t* out, int64_t size_bytes, int64_t offset) {
    const int64_t got = file_->read_at(offset, std::span<uint8_t>(out, static_cast<size_t>(size_bytes)));
    if (got != size_bytes) {
      throw DataError(name_ + ": row group " + std::to_string(row_group_idx) + ": file truncated while open: bytes " +
                      std::to_string(offset) + ".." + std::to_string(offset + size_bytes) + " needed");
    }
  };
  if (chunk_pages.dictionary) read_exactly(scratch.data(), dictionary_bytes, chunk_pages.dictionary->offset);
  read_exactly(scratch.data() + dictionary_bytes, run_bytes, first_page.offset);
  partial = metadata_.row_groups[static_cast<size_t>(row_group_idx)].columns[static_cast<size_t>(column_idx)];
  partial.dictionary_page_offset = chunk_pages.dictionary ? std::optional<int64_t>(0) : std::nullopt;
  partial.data_page_offset = dictionary_bytes;
  partial.total_compressed_size_bytes = dictionary_bytes + run_bytes;
  partial.num_values = last_page.first_row + last_page.num_values - first_page.first_row;
  detail::ChunkLocation where = chunk_location(row_group_idx, column_idx);
  where.file_bytes = std::span<const uint8_t>(scratch.data(), static_cast<size_t>(dictionary_bytes + run_bytes));
  where.chunk = &partial;
  where.num_rows = partial.num_values;
  where.first_row = first_page.first_row;
  where.first_data_page = first_page.page_idx;
  where.has_dictionary_page = chunk_pages.dictionary.has_value();
  return where;
}

void ParquetRowGroupReader::read_label_rows(int64_t row_group_idx, const std::vector<detail::ChunkPages>& pages,
                                            int64_t begin, int64_t end, int64_t* labels, std::vector<uint8_t>& scratch) const {
  if (label_idx_ < 0) {
    std::fill(labels, labels + (end - begin), kNoLabel);
    return;
  }
  const detail::ChunkPages& label_pages = pages[static_cast<size_t>(label_idx_)];
  const RowRange range{begin, end, nullptr, labels};
  detail::PageBuffer buffer;
  ColumnChunkInfo partial;
  std::vector<int64_t> decoded;
  for (const auto& [first, last] : page_runs(label_pages.data, std::span(&range, 1), 1)) {
    const detail::ChunkLocation where = read_page_run(row_group_idx, label_idx_, label_pages, first, last, scratch, partial);
    decoded.resize(static_cast<size_t>(where.num_rows));
    detail::decode_label_chunk(where, decoded.data(), buffer);
    const int64_t from = std::max(begin, where.first_row);
    const int64_t to = std::min(end, where.first_row + where.num_rows);
    std::copy(decoded.begin() + (from - where.first_row), decoded.begin() + (to - where.first_row), labels + (from - begin));
  }
}

void ParquetRowGroupReader::read_values(int64_t row_group_idx, int64_t begin, int64_t end,
                                        std::span<uint8_t* const> values, std::vector<uint8_t>& scratch) const {
  if (value_idx_.empty() || begin >= end) return;
  const std::shared_ptr<const PageMaps::RowGroupPages> pages = row_group_pages(row_group_idx);
  const RowRange range{begin, end, nullptr, nullptr};
  detail::PageBuffer buffer;
  ColumnChunkInfo partial;
  std::vector<uint8_t> decoded;
  for (size_t f = 0; f < value_idx_.size(); ++f) {
    const int64_t column_idx = value_idx_[f];
    const auto bytes = static_cast<size_t>(field_bytes(value_fields_[f]));
    const detail::ChunkPages& chunk_pages = (*pages)[static_cast<size_t>(column_idx)];
    for (const auto& [first, last] : page_runs(chunk_pages.data, std::span(&range, 1), 1)) {
      const detail::ChunkLocation where = read_page_run(row_group_idx, column_idx, chunk_pages, first, last, scratch, partial);
      decoded.resize(static_cast<size_t>(where.num_rows) * bytes);
      detail::decode_value_chunk(where, value_fields_[f], decoded.data(), buffer);
      const int64_t from = std::max(begin, where.first_row);
      const int64_t to = std::min(end, where.first_row + where.num_rows);
      std::memcpy(values[f] + static_cast<size_t>(from - begin) * bytes,
                  decoded.data() + static_cast<size_t>(from - where.first_row) * bytes, static_cast<size_t>(to - from) * bytes);
    }
  }
}

std::vector<int64_t> ParquetRowGroupReader::row_group_labels(int64_t row_group_idx) const {
  if (row_group_idx < 0 || row_group_idx >= num_row_groups())
    throw std::out_of_range(name_ + ": no row group " + std::to_string(row_group_idx));
  const int64_t rows = row_group_rows(row_group_idx);
  std::vector<int64_t> labels(static_cast<size_t>(rows));
  std::vector<uint8_t> scratch;
  read_label_rows(row_group_idx, *row_group_pages(row_group_idx), 0, rows, labels.data(), scratch);
  return labels;
}

ParquetRowGroupReader::EncodedPieces ParquetRowGroupReader::encoded_pieces(int64_t row_group_idx, int64_t max_rows,
                                                                           int64_t max_bytes) const {
  if (encoded_idx_ < 0) throw std::logic_error(name_ + ": holds pixels, not encoded images");
  if (row_group_idx < 0 || row_group_idx >= num_row_groups())
    throw std::out_of_range(name_ + ": no row group " + std::to_string(row_group_idx));
  const std::shared_ptr<const PageMaps::RowGroupPages> pages = row_group_pages(row_group_idx);
  const detail::ChunkPages& images = (*pages)[static_cast<size_t>(encoded_idx_)];
  const int64_t dictionary =
      images.dictionary ? images.dictionary->size_bytes + images.dictionary->uncompressed_bytes : 0;
  // Labels are read a page at a time into the same scratch, and decoded.
  int64_t label_bytes = 0;
  if (label_idx_ >= 0) {
    const detail::ChunkPages& labels = (*pages)[static_cast<size_t>(label_idx_)];
    const int64_t label_dictionary = labels.dictionary ? labels.dictionary->size_bytes + labels.dictionary->uncompressed_bytes : 0;
    for (const detail::PageSpan& page : labels.data)
      label_bytes = std::max(label_bytes, label_dictionary + page.size_bytes + page.uncompressed_bytes +
                                              page.num_values * static_cast<int64_t>(sizeof(int64_t)));
  }
  EncodedPieces pieces;
  int64_t run_compressed = 0, run_uncompressed = 0, largest_page = 0;
  // A piece's images are its PLAIN pages' values, or values of the dictionary its pages index (any
  // of them, as far as is known before reading): its pages' and the dictionary's sizes bound them.
  const int64_t dictionary_values = images.dictionary ? images.dictionary->uncompressed_bytes : 0;
  const auto close_piece = [&](int64_t end_row) {
    pieces.bytes_bound.push_back(run_uncompressed + dictionary_values);
    pieces.max_read_bytes = std::max(pieces.max_read_bytes, std::max(dictionary + run_compressed, label_bytes) + largest_page);
    pieces.starts.push_back(end_row);
    run_compressed = run_uncompressed = largest_page = 0;
  };
  pieces.starts.push_back(0);
  for (const detail::PageSpan& page : images.data) {
    const int64_t rows_so_far = page.first_row - pieces.starts.back();
    if (rows_so_far > 0 &&
        (rows_so_far + page.num_values > max_rows || run_uncompressed + page.uncompressed_bytes > max_bytes))
      close_piece(page.first_row);
    run_compressed += page.size_bytes;
    run_uncompressed += page.uncompressed_bytes;
    largest_page = std::max(largest_page, page.uncompressed_bytes);
  }
  close_piece(row_group_rows(row_group_idx));
  return pieces;
}

int64_t ParquetRowGroupReader::read_encoded_rows(int64_t row_group_idx, int64_t begin, int64_t end,
                                                 std::vector<uint8_t>& scratch, uint8_t* bytes, int64_t capacity,
                                                 int64_t* ends, int64_t* labels) const {
  if (encoded_idx_ < 0) throw std::logic_error(name_ + ": holds pixels, not encoded images");
  if (row_group_idx < 0 || row_group_idx >= num_row_groups())
    throw std::out_of_range(name_ + ": no row group " + std::to_string(row_group_idx));
  const std::shared_ptr<const PageMaps::RowGroupPages> pages = row_group_pages(row_group_idx);
  const std::vector<detail::PageSpan>& image_pages = (*pages)[static_cast<size_t>(encoded_idx_)].data;
  const auto first = std::find_if(image_pages.begin(), image_pages.end(),
                                  [&](const detail::PageSpan& page) { return page.first_row == begin; });
  const auto last = std::find_if(image_pages.begin(), image_pages.end(),
                                 [&](const detail::PageSpan& page) { return page.first_row + page.num_values == end; });
  if (begin >= end || first == image_pages.end() || last == image_pages.end() || last < first)
    throw std::invalid_argument(name_ + ": row group " + std::to_string(row_group_idx) + ": rows " +
                                std::to_string(begin) + ".." + std::to_string(end) + " are not whole image pages");
  read_label_rows(row_group_idx, *pages, begin, end, labels, scratch);
  detail::PageBuffer buffer;
  ColumnChunkInfo partial;
  const detail::ChunkLocation where =
      read_page_run(row_group_idx, encoded_idx_, (*pages)[static_cast<size_t>(encoded_idx_)],
                    static_cast<size_t>(first - image_pages.begin()), static_cast<size_t>(last - image_pages.begin()),
                    scratch, partial);
  return detail::decode_encoded_chunk(where, bytes, capacity, ends, buffer);
}

void ParquetRowGroupReader::read_rows(int64_t row_group_idx, std::span<const RowRange> ranges,
                                      std::vector<uint8_t>& scratch) const {
  if (row_group_idx < 0 || row_group_idx >= num_row_groups()) {
    throw std::out_of_range(name_ + ": no row group " + std::to_string(row_group_idx) + " (the file has " +
                            std::to_string(num_row_groups()) + ")");
  }
  const RowGroupInfo& group = metadata_.row_groups[static_cast<size_t>(row_group_idx)];
  std::vector<RowRange> sorted(ranges.begin(), ranges.end());
  std::sort(sorted.begin(), sorted.end(), [](const RowRange& a, const RowRange& b) { return a.begin < b.begin; });
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i].begin < 0 || sorted[i].end > group.num_rows || sorted[i].begin >= sorted[i].end ||
        (i > 0 && sorted[i].begin < sorted[i - 1].end)) {
      throw std::out_of_range(name_ + ": row group " + std::to_string(row_group_idx) + ": rows " +
                              std::to_string(sorted[i].begin) + ".." + std::to_string(sorted[i].end) +
                              " are not a part of its " + std::to_string(group.num_rows) + " rows apart from the others");
    }
  }
  if (sorted.empty()) return;
  if (sorted.size() == 1 && sorted[0].begin == 0 && sorted[0].end == group.num_rows) {
    read_row_group(row_group_idx, scratch, sorted[0].pixels, sorted[0].labels);
    return;
  }

  const std::shared_ptr<const PageMaps::RowGroupPages> pages = row_group_pages(row_group_idx);

  // Data pages [first, last] of a column read into `scratch`, located as a chunk of their own.
  ColumnChunkInfo partial;
  const auto read_run = [&](int64_t column_idx, size_t first, size_t last) {
    return read_page_run(row_group_idx, column_idx, (*pages)[static_cast<size_t>(column_idx)], first, last, scratch,
                         partial);
  };
  const auto data_pages = [&](int64_t column_idx) -> const std::vector<detail::PageSpan>& {
    return (*pages)[static_cast<size_t>(column_idx)].data;
  };
  // Copies rows [run_first, run_first + run_rows) of a decoded run, `width` items each, into the
  // ranges they overlap.
  const auto scatter = [&](int64_t run_first, int64_t run_rows, const auto* decoded, int64_t width, auto destination) {
    for (const RowRange& range : sorted) {
      const int64_t begin = std::max(range.begin, run_first);
      const int64_t end = std::min(range.end, run_first + run_rows);
      if (begin >= end) continue;
      std::copy_n(decoded + (begin - run_first) * width, (end - begin) * width,
                  destination(range) + (begin - range.begin) * width);
    }
  };

  detail::PixelScratch decode;
  if (label_idx_ >= 0) {
    std::vector<int64_t> labels;
    for (const auto& [first, last] : page_runs(data_pages(label_idx_), sorted, 1)) {
      const detail::ChunkLocation where = read_run(label_idx_, first, last);
      labels.resize(static_cast<size_t>(where.num_rows));
      detail::decode_label_chunk(where, labels.data(), decode.pages);
      scatter(where.first_row, where.num_rows, labels.data(), 1, [](const RowRange& range) { return range.labels; });
    }
  } else {
    for (const RowRange& range : sorted) std::fill(range.labels, range.labels + (range.end - range.begin), kNoLabel);
  }
  const int64_t image_bytes = shape_.num_pixels();
  if (image_idx_ >= 0) {
    // A page at a time: a page that is exactly one range decodes straight into it.
    std::vector<uint8_t> images;
    for (const auto& [first, last] : page_runs(data_pages(image_idx_), sorted, 1)) {
      const detail::ChunkLocation where = read_run(image_idx_, first, last);
      const auto exact = std::find_if(sorted.begin(), sorted.end(), [&](const RowRange& range) {
        return range.begin == where.first_row && range.end == where.first_row + where.num_rows;
      });
      if (exact != sorted.end()) {
        detail::decode_image_chunk(where, exact->pixels, image_bytes, decode.pages);
        continue;
      }
      images.resize(static_cast<size_t>(where.num_rows * image_bytes));
      detail::decode_image_chunk(where, images.data(), image_bytes, decode.pages);
      scatter(where.first_row, where.num_rows, images.data(), image_bytes, [](const RowRange& range) { return range.pixels; });
    }
    return;
  }
  // Numeric pixel columns: the ranges' rows of each column decoded into a tile (one column's rows
  // after another's, the ranges' rows back to back), then transposed into their images. Only the
  // pages holding the ranges are read, and of those only the ranges' values are decoded.
  std::vector<detail::ImageRows> rows;
  for (const RowRange& range : sorted) rows.push_back(detail::ImageRows{range.begin, range.end, range.pixels});
  std::vector<detail::RowSelection> selected;
  detail::decode_pixel_column_rows(
      [&](int64_t column_idx, uint8_t* out) {
        for (const auto& [first, last] : page_runs(data_pages(column_idx), sorted, 1)) {
          const detail::ChunkLocation where = read_run(column_idx, first, last);
          selected.clear();
          int64_t tile_row = 0;
          for (const RowRange& range : sorted) {
            const int64_t begin = std::max(range.begin, where.first_row);
            const int64_t end = std::min(range.end, where.first_row + where.num_rows);
            if (begin < end)
              selected.push_back({begin - where.first_row, end - where.first_row, tile_row + (begin - range.begin)});
            tile_row += range.end - range.begin;
          }
          detail::decode_pixel_chunk_rows(where, selected, out, decode.pages);
        }
      },
      pixel_idx_, rows, image_bytes, decode);
}

}  // namespace feeder::parquet
