#include "feeder/formats/parquet/row_group_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "feeder/error.h"
#include "formats/parquet/detail/chunk_reader.h"
#include "formats/parquet/detail/footer.h"
#include "formats/parquet/detail/image_columns.h"
#include "formats/parquet/detail/image_decode.h"

namespace feeder::parquet {

namespace {

// The tail read when a file is opened: the footer of most image files fits (784 pixel columns take
// about 60 KiB per row group), so one pread usually gets footer, length and magic together.
constexpr int64_t kTailReadBytes = int64_t{64} << 10;
// A footer larger than this is not read: a lying length must not make the reader allocate gigabytes.
constexpr int64_t kMaxFooterBytes = int64_t{1} << 30;

// Reads [offset, offset + size_bytes) of fd into out, retrying short reads; returns the bytes read,
// fewer only at the end of the file. Throws DataError with the system error.
int64_t pread_fully(int fd, uint8_t* out, int64_t size_bytes, int64_t offset, const std::string& name) {
  int64_t done = 0;
  while (done < size_bytes) {
    const ssize_t got = ::pread(fd, out + done, static_cast<size_t>(size_bytes - done), static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw DataError(name + ": cannot read " + std::to_string(size_bytes) + " bytes at offset " + std::to_string(offset) +
                      ": " + std::strerror(errno));
    }
    if (got == 0) break;
    done += got;
  }
  return done;
}

std::vector<uint8_t> pread_exactly(int fd, int64_t size_bytes, int64_t offset, const std::string& name) {
  std::vector<uint8_t> bytes(static_cast<size_t>(size_bytes));
  const int64_t got = pread_fully(fd, bytes.data(), size_bytes, offset, name);
  if (got != size_bytes) {
    throw DataError(name + ": file ended after " + std::to_string(offset + got) + " bytes while reading its footer (truncated while opening?)");
  }
  return bytes;
}

}  // namespace

ParquetRowGroupReader ParquetRowGroupReader::open(const std::filesystem::path& path, const ParquetImageOptions& options,
                                                  std::string name) {
  ParquetRowGroupReader reader;
  reader.name_ = name.empty() ? path.string() : std::move(name);
  const std::string& n = reader.name_;
  reader.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (reader.fd_ < 0) throw DataError(n + ": cannot open: " + std::strerror(errno));
  struct stat info {};
  if (::fstat(reader.fd_, &info) != 0) throw DataError(n + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(info.st_mode)) throw DataError(n + ": not a regular file");
  const auto size = static_cast<int64_t>(info.st_size);
  reader.size_bytes_ = static_cast<uint64_t>(size);

  // The tail, and the leading magic: from the same read when the file is small.
  const int64_t tail_bytes = std::min(size, kTailReadBytes);
  const std::vector<uint8_t> tail = pread_exactly(reader.fd_, tail_bytes, size - tail_bytes, n);
  const std::vector<uint8_t> head = size <= kTailReadBytes
                                        ? std::vector<uint8_t>(tail.begin(), tail.begin() + std::min<int64_t>(size, 4))
                                        : pread_exactly(reader.fd_, 4, 0, n);
  const std::span<const uint8_t> tail_span(tail);
  const uint32_t footer_bytes = detail::check_file_ends(
      head, tail_span.last(std::min(tail_span.size(), detail::kFooterTailBytes)), static_cast<uint64_t>(size), n);
  if (footer_bytes > kMaxFooterBytes) {
    throw DataError(n + ": footer of " + std::to_string(footer_bytes) + " bytes is larger than the " +
                    std::to_string(kMaxFooterBytes) + " bytes this reader accepts");
  }
  const int64_t footer_start = size - static_cast<int64_t>(detail::kFooterTailBytes) - footer_bytes;
  if (static_cast<int64_t>(footer_bytes + detail::kFooterTailBytes) <= tail_bytes) {
    const auto begin = tail.end() - static_cast<std::ptrdiff_t>(footer_bytes + detail::kFooterTailBytes);
    reader.footer_.assign(begin, begin + footer_bytes);
  } else {
    reader.footer_ = pread_exactly(reader.fd_, footer_bytes, footer_start, n);
  }
  reader.metadata_ = detail::parse_footer(reader.footer_, static_cast<uint64_t>(footer_start), n);

  const detail::ImageColumns columns = detail::resolve_image_columns(reader.metadata_, n, options);
  reader.shape_ = columns.shape;
  reader.columns_ = detail::describe_image_columns(reader.metadata_, columns);
  reader.label_idx_ = columns.label_idx;
  reader.pixel_idx_ = columns.pixel_idx;
  reader.image_idx_ = columns.image_idx;
  reader.verify_checksums_ = options.verify_checksums;

  std::vector<int64_t> needed = columns.pixel_idx;
  if (columns.image_idx >= 0) needed.push_back(columns.image_idx);
  if (columns.label_idx >= 0) needed.push_back(columns.label_idx);
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
  return reader;
}

ParquetRowGroupReader::ParquetRowGroupReader(ParquetRowGroupReader&& other) noexcept { *this = std::move(other); }

ParquetRowGroupReader& ParquetRowGroupReader::operator=(ParquetRowGroupReader&& other) noexcept {
  if (this == &other) return *this;
  close();
  fd_ = std::exchange(other.fd_, -1);
  name_ = std::move(other.name_);
  size_bytes_ = other.size_bytes_;
  footer_ = std::move(other.footer_);
  metadata_ = std::move(other.metadata_);
  verify_checksums_ = other.verify_checksums_;
  shape_ = other.shape_;
  columns_ = std::move(other.columns_);
  label_idx_ = other.label_idx_;
  pixel_idx_ = std::move(other.pixel_idx_);
  image_idx_ = other.image_idx_;
  spans_ = std::move(other.spans_);
  return *this;
}

ParquetRowGroupReader::~ParquetRowGroupReader() { close(); }

void ParquetRowGroupReader::close() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
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

std::optional<std::pair<int64_t, int64_t>> ParquetRowGroupReader::label_range() const {
  if (label_idx_ < 0 || metadata_.row_groups.empty()) return std::nullopt;
  const ColumnSchema& column = metadata_.columns[static_cast<size_t>(label_idx_)];
  const bool is_int32 = column.physical_type == PhysicalType::kInt32;
  if ((!is_int32 && column.physical_type != PhysicalType::kInt64) || !column.int_signed) return std::nullopt;
  const size_t value_bytes = is_int32 ? 4 : 8;
  const auto value_of = [&](const std::string& bytes) -> int64_t {
    if (is_int32) {
      int32_t value = 0;
      std::memcpy(&value, bytes.data(), 4);
      return value;
    }
    int64_t value = 0;
    std::memcpy(&value, bytes.data(), 8);
    return value;
  };
  std::pair<int64_t, int64_t> range{INT64_MAX, INT64_MIN};
  for (const RowGroupInfo& group : metadata_.row_groups) {
    const ColumnChunkInfo& chunk = group.columns[static_cast<size_t>(label_idx_)];
    if (group.num_rows == 0) continue;
    if (!chunk.min_bytes || !chunk.max_bytes || chunk.min_bytes->size() != value_bytes ||
        chunk.max_bytes->size() != value_bytes) {
      return std::nullopt;
    }
    range.first = std::min(range.first, value_of(*chunk.min_bytes));
    range.second = std::max(range.second, value_of(*chunk.max_bytes));
  }
  if (range.first > range.second) return std::nullopt;
  return range;
}

void ParquetRowGroupReader::read_row_group(int64_t row_group_idx, std::vector<uint8_t>& scratch, uint8_t* pixels,
                                           int64_t* labels) const {
  if (row_group_idx < 0 || row_group_idx >= num_row_groups()) {
    throw std::out_of_range(name_ + ": no row group " + std::to_string(row_group_idx) + " (the file has " +
                            std::to_string(num_row_groups()) + ")");
  }
  const RowGroupInfo& group = metadata_.row_groups[static_cast<size_t>(row_group_idx)];
  const Span& span = spans_[static_cast<size_t>(row_group_idx)];
  const int64_t span_bytes = span.end - span.begin;
  if (static_cast<int64_t>(scratch.size()) < span_bytes) scratch.resize(static_cast<size_t>(span_bytes));
  const int64_t got = pread_fully(fd_, scratch.data(), span_bytes, span.begin, name_);
  if (got != span_bytes) {
    struct stat info {};
    const int64_t file_end = ::fstat(fd_, &info) == 0 ? static_cast<int64_t>(info.st_size) : span.begin + got;
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
  const auto locate = [&](int64_t column_idx) {
    detail::ChunkLocation where;
    where.file_bytes = std::span<const uint8_t>(scratch.data(), static_cast<size_t>(span_bytes));
    where.file_name = &name_;
    where.column = &metadata_.columns[static_cast<size_t>(column_idx)];
    where.chunk = &chunks[static_cast<size_t>(column_idx)];
    where.row_group_idx = row_group_idx;
    where.num_row_groups = num_row_groups();
    where.num_rows = group.num_rows;
    where.verify_checksums = verify_checksums_;
    return where;
  };

  detail::PixelScratch decode;
  if (label_idx_ >= 0) {
    detail::decode_label_chunk(locate(label_idx_), labels, decode.pages);
  } else {
    std::fill(labels, labels + group.num_rows, kNoLabel);
  }
  if (image_idx_ >= 0) {
    detail::decode_image_chunk(locate(image_idx_), pixels, shape_.num_pixels(), decode.pages);
  } else {
    detail::decode_pixel_columns(locate, pixel_idx_, 0, static_cast<int64_t>(pixel_idx_.size()), group.num_rows,
                                 shape_.num_pixels(), pixels, decode);
  }
}

}  // namespace feeder::parquet
