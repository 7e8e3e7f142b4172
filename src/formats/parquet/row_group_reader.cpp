#include "feeder/formats/parquet/row_group_reader.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include "feeder/error.h"
#include "formats/parquet/detail/chunk_reader.h"
#include "formats/parquet/detail/image_columns.h"
#include "formats/parquet/detail/image_decode.h"
#include "formats/parquet/detail/sequence_columns.h"
#include "formats/parquet/detail/value_columns.h"

namespace feeder::parquet {

namespace {

using RowRange = ParquetRowGroupReader::RowRange;
using RowSpan = ParquetColumnReader::RowSpan;

std::out_of_range no_row_group(const std::string& name, int64_t row_group_idx) {
  return std::out_of_range(name + ": no row group " + std::to_string(row_group_idx));
}

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

// The rows of [begin, end) that pages handed over by the column reader hold (begin >= end: none).
RowSpan overlap(const detail::ChunkLocation& where, int64_t begin, int64_t end) {
  return {std::max(begin, where.first_row), std::min(end, where.first_row + where.num_rows)};
}

std::vector<RowSpan> spans_of(std::span<const RowRange> ranges) {
  std::vector<RowSpan> spans;
  spans.reserve(ranges.size());
  for (const RowRange& range : ranges) spans.push_back({range.begin, range.end});
  return spans;
}

// Copies the rows of decoded pages, `width` items each, into the ranges they overlap, at
// range.*destination.
template <class T>
void scatter(std::span<const RowRange> ranges, const detail::ChunkLocation& where, const T* decoded, int64_t width,
             T* RowRange::*destination) {
  for (const RowRange& range : ranges) {
    const RowSpan rows = overlap(where, range.begin, range.end);
    if (rows.begin >= rows.end) continue;
    std::copy_n(decoded + (rows.begin - where.first_row) * width, (rows.end - rows.begin) * width,
                range.*destination + (rows.begin - range.begin) * width);
  }
}

// The range that is exactly the rows of decoded pages, if one is.
const RowRange* range_of_pages(std::span<const RowRange> ranges, const detail::ChunkLocation& where) {
  const auto exact = std::find_if(ranges.begin(), ranges.end(), [&](const RowRange& range) {
    return range.begin == where.first_row && range.end == where.first_row + where.num_rows;
  });
  return exact == ranges.end() ? nullptr : &*exact;
}

// The rows of `ranges` (sorted) that decoded pages hold, as selections of the pages' rows, each
// going to its place in the tile, where the ranges' rows lie back to back.
void select_rows(std::span<const RowRange> ranges, const detail::ChunkLocation& where,
                 std::vector<detail::RowSelection>& selected) {
  selected.clear();
  int64_t tile_row = 0;
  for (const RowRange& range : ranges) {
    const RowSpan rows = overlap(where, range.begin, range.end);
    if (rows.begin < rows.end)
      selected.push_back({rows.begin - where.first_row, rows.end - where.first_row, tile_row + (rows.begin - range.begin)});
    tile_row += range.end - range.begin;
  }
}

}  // namespace

// --- Opening: which columns mean what ---

ParquetRowGroupReader ParquetRowGroupReader::open(const std::filesystem::path& path, const ParquetImageOptions& options,
                                                  std::string name) {
  const ColumnReaderOptions column_options{.verify_checksums = options.verify_checksums,
                                           .max_metadata_bytes = options.max_metadata_bytes,
                                           .read_run_bytes = options.read_run_bytes};
  ParquetRowGroupReader reader(ParquetColumnReader::open(path, column_options, std::move(name)));
  reader.resolve_columns(options);
  return reader;
}

void ParquetRowGroupReader::resolve_columns(const ParquetImageOptions& options) {
  const std::string& n = name();
  const detail::ImageColumns columns = detail::resolve_image_columns(metadata(), n, options);
  shape_ = columns.shape;
  columns_ = detail::describe_image_columns(metadata(), columns);
  label_idx_ = columns.label_idx;
  pixel_idx_ = columns.pixel_idx;
  image_idx_ = columns.image_idx;
  encoded_idx_ = columns.encoded_idx;
  value_idx_ = columns.value_idx;
  for (const int64_t idx : columns.value_idx)
    value_fields_.push_back(detail::value_field(metadata(), idx, n));
  for (int64_t rg = 0; rg < num_row_groups(); ++rg)
    detail::check_decoded_size(row_group_rows(rg), shape_, options.max_decoded_bytes, n + ": row group " + std::to_string(rg));
  file_.select_columns(needed_columns());
}

std::vector<int64_t> ParquetRowGroupReader::needed_columns() const {
  std::vector<int64_t> needed = pixel_idx_;
  if (image_idx_ >= 0) needed.push_back(image_idx_);
  if (encoded_idx_ >= 0) needed.push_back(encoded_idx_);
  if (label_idx_ >= 0) needed.push_back(label_idx_);
  needed.insert(needed.end(), value_idx_.begin(), value_idx_.end());
  return needed;
}

void ParquetRowGroupReader::check_row_group(int64_t row_group_idx) const {
  if (row_group_idx < 0 || row_group_idx >= num_row_groups()) throw no_row_group(name(), row_group_idx);
}

// --- Labels: statistics, and decoded ---

std::optional<std::pair<int64_t, int64_t>> ParquetRowGroupReader::row_group_label_range(int64_t row_group_idx) const {
  if (label_idx_ < 0) return std::nullopt;
  const ColumnSchema& column = metadata().columns[static_cast<size_t>(label_idx_)];
  const ColumnChunkInfo& chunk =
      metadata().row_groups.at(static_cast<size_t>(row_group_idx)).columns[static_cast<size_t>(label_idx_)];
  const std::optional<int64_t> low = label_value(column, chunk.min_bytes);
  const std::optional<int64_t> high = label_value(column, chunk.max_bytes);
  if (!low || !high) return std::nullopt;
  return std::pair{*low, *high};
}

std::optional<std::pair<int64_t, int64_t>> ParquetRowGroupReader::rows_label_range(int64_t row_group_idx, int64_t begin,
                                                                                   int64_t end) const {
  if (label_idx_ < 0) return std::nullopt;
  const ColumnSchema& column = metadata().columns[static_cast<size_t>(label_idx_)];
  const auto pages = file_.row_group_pages(row_group_idx);
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
  if (label_idx_ < 0 || metadata().row_groups.empty()) return std::nullopt;
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

void ParquetRowGroupReader::decode_labels(const ParquetColumnReader::RowGroupChunks& chunks, int64_t rows,
                                          int64_t* labels, detail::PageBuffer& buffer) const {
  if (label_idx_ >= 0) {
    detail::decode_label_chunk(chunks.chunk(label_idx_), labels, buffer);
  } else {
    std::fill(labels, labels + rows, kNoLabel);
  }
}

void ParquetRowGroupReader::read_range_labels(int64_t row_group_idx, std::span<const RowRange> ranges,
                                              std::vector<uint8_t>& scratch, detail::PageBuffer& buffer) const {
  if (label_idx_ < 0) {
    for (const RowRange& range : ranges) std::fill(range.labels, range.labels + (range.end - range.begin), kNoLabel);
    return;
  }
  std::vector<int64_t> decoded;
  file_.read_pages(row_group_idx, label_idx_, spans_of(ranges), scratch, [&](const detail::ChunkLocation& where) {
    decoded.resize(static_cast<size_t>(where.num_rows));
    detail::decode_label_chunk(where, decoded.data(), buffer);
    scatter(ranges, where, decoded.data(), 1, &RowRange::labels);
  });
}

void ParquetRowGroupReader::read_label_rows(int64_t row_group_idx, int64_t begin, int64_t end, int64_t* labels,
                                            std::vector<uint8_t>& scratch) const {
  const RowRange range{begin, end, nullptr, labels};
  detail::PageBuffer buffer;
  read_range_labels(row_group_idx, std::span(&range, 1), scratch, buffer);
}

std::vector<int64_t> ParquetRowGroupReader::row_group_labels(int64_t row_group_idx) const {
  check_row_group(row_group_idx);
  const int64_t rows = row_group_rows(row_group_idx);
  std::vector<int64_t> labels(static_cast<size_t>(rows));
  std::vector<uint8_t> scratch;
  read_label_rows(row_group_idx, 0, rows, labels.data(), scratch);
  return labels;
}

// --- Value fields ---

void ParquetRowGroupReader::read_values(int64_t row_group_idx, int64_t begin, int64_t end,
                                        std::span<const ValueRegion> values, std::vector<uint8_t>& scratch) const {
  if (begin >= end) return;
  const RowRange range{.begin = begin, .end = end, .values = values};
  read_values(row_group_idx, std::span(&range, 1), scratch);
}

void ParquetRowGroupReader::read_values(int64_t row_group_idx, std::span<const RowRange> ranges,
                                        std::vector<uint8_t>& scratch) const {
  if (value_idx_.empty()) return;
  const std::vector<RowRange> sorted = sorted_ranges(row_group_idx, ranges);
  const std::vector<RowSpan> spans = spans_of(sorted);
  detail::PageBuffer buffer;
  std::vector<uint8_t> decoded;
  for (size_t f = 0; f < value_idx_.size(); ++f) {
    const Field& field = value_fields_[f];
    if (is_sequence(field)) {
      read_sequences(row_group_idx, f, sorted, scratch, buffer);
      continue;
    }
    const auto bytes = static_cast<size_t>(field_bytes(field));
    file_.read_pages(row_group_idx, value_idx_[f], spans, scratch, [&](const detail::ChunkLocation& where) {
      decoded.resize(static_cast<size_t>(where.num_rows) * bytes);
      detail::decode_value_chunk(where, field, decoded.data(), buffer);
      for (const RowRange& range : sorted) {
        const RowSpan rows = overlap(where, range.begin, range.end);
        if (rows.begin >= rows.end) continue;
        std::memcpy(range.values[f].data + static_cast<size_t>(rows.begin - range.begin) * bytes,
                    decoded.data() + static_cast<size_t>(rows.begin - where.first_row) * bytes,
                    static_cast<size_t>(rows.end - rows.begin) * bytes);
      }
    });
  }
}

void ParquetRowGroupReader::read_sequences(int64_t row_group_idx, size_t field, std::span<const RowRange> sorted,
                                           std::vector<uint8_t>& scratch, detail::PageBuffer& buffer) const {
  std::vector<detail::SequenceRows> rows;
  for (const RowRange& range : sorted) rows.push_back({range.begin, range.end, &range.values[field]});
  file_.read_chunk(row_group_idx, value_idx_[field], scratch, [&](const detail::ChunkLocation& where) {
    detail::decode_sequence_chunk(where, value_fields_[field], rows, buffer);
  });
}

int64_t ParquetRowGroupReader::sequence_bytes(int64_t row_group_idx, size_t field) const {
  const Field& f = value_fields_.at(field);
  if (!is_sequence(f)) return 0;
  const RowGroupInfo& group = metadata().row_groups.at(static_cast<size_t>(row_group_idx));
  // Every entry of the chunk (values, empty lists and nulls) bounds its values.
  return group.columns[static_cast<size_t>(value_idx_[field])].num_values * element_bytes(f.type);
}

// --- Images and pixels: whole row groups, and parts of them ---

void ParquetRowGroupReader::read_row_group(int64_t row_group_idx, std::vector<uint8_t>& scratch, uint8_t* pixels,
                                           int64_t* labels) const {
  if (encoded_idx_ >= 0) throw std::logic_error(name() + ": holds encoded images: read them with read_encoded_row_group");
  const ParquetColumnReader::RowGroupChunks chunks = file_.read_row_group(row_group_idx, scratch);
  const int64_t rows = row_group_rows(row_group_idx);
  detail::PixelScratch decode;
  decode_labels(chunks, rows, labels, decode.pages);
  if (image_idx_ >= 0) {
    detail::decode_image_chunk(chunks.chunk(image_idx_), pixels, shape_.num_pixels(), decode.pages);
  } else {
    detail::decode_pixel_columns([&](int64_t column_idx) { return chunks.chunk(column_idx); }, pixel_idx_, 0,
                                 static_cast<int64_t>(pixel_idx_.size()), rows, shape_.num_pixels(), pixels, decode);
  }
}

std::vector<RowRange> ParquetRowGroupReader::sorted_ranges(int64_t row_group_idx, std::span<const RowRange> ranges) const {
  if (row_group_idx < 0 || row_group_idx >= num_row_groups()) {
    throw std::out_of_range(name() + ": no row group " + std::to_string(row_group_idx) + " (the file has " +
                            std::to_string(num_row_groups()) + ")");
  }
  const int64_t rows = row_group_rows(row_group_idx);
  std::vector<RowRange> sorted(ranges.begin(), ranges.end());
  std::sort(sorted.begin(), sorted.end(), [](const RowRange& a, const RowRange& b) { return a.begin < b.begin; });
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i].begin < 0 || sorted[i].end > rows || sorted[i].begin >= sorted[i].end ||
        (i > 0 && sorted[i].begin < sorted[i - 1].end)) {
      throw std::out_of_range(name() + ": row group " + std::to_string(row_group_idx) + ": rows " +
                              std::to_string(sorted[i].begin) + ".." + std::to_string(sorted[i].end) +
                              " are not a part of its " + std::to_string(rows) + " rows apart from the others");
    }
  }
  return sorted;
}

void ParquetRowGroupReader::read_rows(int64_t row_group_idx, std::span<const RowRange> ranges,
                                      std::vector<uint8_t>& scratch) const {
  const std::vector<RowRange> sorted = sorted_ranges(row_group_idx, ranges);
  if (sorted.empty()) return;
  if (sorted.size() == 1 && sorted[0].begin == 0 && sorted[0].end == row_group_rows(row_group_idx)) {
    read_row_group(row_group_idx, scratch, sorted[0].pixels, sorted[0].labels);
    return;
  }
  detail::PixelScratch decode;
  read_range_labels(row_group_idx, sorted, scratch, decode.pages);
  if (image_idx_ >= 0) {
    read_range_images(row_group_idx, sorted, scratch, decode.pages);
  } else {
    read_range_pixels(row_group_idx, sorted, scratch, decode);
  }
}

void ParquetRowGroupReader::read_range_images(int64_t row_group_idx, std::span<const RowRange> ranges,
                                              std::vector<uint8_t>& scratch, detail::PageBuffer& buffer) const {
  const int64_t image_bytes = shape_.num_pixels();
  std::vector<uint8_t> images;
  file_.read_pages(row_group_idx, image_idx_, spans_of(ranges), scratch, [&](const detail::ChunkLocation& where) {
    // A page that is exactly one range decodes straight into it.
    if (const RowRange* exact = range_of_pages(ranges, where)) {
      detail::decode_image_chunk(where, exact->pixels, image_bytes, buffer);
      return;
    }
    images.resize(static_cast<size_t>(where.num_rows * image_bytes));
    detail::decode_image_chunk(where, images.data(), image_bytes, buffer);
    scatter(ranges, where, images.data(), image_bytes, &RowRange::pixels);
  });
}

void ParquetRowGroupReader::read_range_pixels(int64_t row_group_idx, std::span<const RowRange> ranges,
                                              std::vector<uint8_t>& scratch, detail::PixelScratch& decode) const {
  // The ranges' rows of each column decoded into a tile (one column's rows after another's, the
  // ranges' rows back to back), then transposed into their images. Of the pages holding the
  // ranges, only the ranges' values are decoded.
  std::vector<detail::ImageRows> rows;
  for (const RowRange& range : ranges) rows.push_back(detail::ImageRows{range.begin, range.end, range.pixels});
  const std::vector<RowSpan> spans = spans_of(ranges);
  std::vector<detail::RowSelection> selected;
  const auto decode_column = [&](int64_t column_idx, uint8_t* out) {
    file_.read_pages(row_group_idx, column_idx, spans, scratch, [&](const detail::ChunkLocation& where) {
      select_rows(ranges, where, selected);
      detail::decode_pixel_chunk_rows(where, selected, out, decode.pages);
    });
  };
  detail::decode_pixel_column_rows(decode_column, pixel_idx_, rows, shape_.num_pixels(), decode);
}

// --- Memory bounds of reading parts ---

int64_t ParquetRowGroupReader::decoded_row_bytes(int64_t column_idx) const {
  if (column_idx == image_idx_) return shape_.num_pixels();
  if (column_idx == label_idx_) return 8;
  const auto value = std::find(value_idx_.begin(), value_idx_.end(), column_idx);
  if (value == value_idx_.end()) return 0;
  // A value page's rows decoded (up to 8 bytes a value, n values a row of a list), then as the field.
  // A sequence's page counts values (PageSpan), each decoded with its two levels.
  const Field& field = value_fields_[static_cast<size_t>(value - value_idx_.begin())];
  if (is_sequence(field)) return 8 + 2;
  return 8 * std::max<int64_t>(1, field_bytes(field) / element_bytes(field.type)) + field_bytes(field);
}

bool ParquetRowGroupReader::is_sequence_column(int64_t column_idx) const {
  const auto value = std::find(value_idx_.begin(), value_idx_.end(), column_idx);
  return value != value_idx_.end() && is_sequence(value_fields_[static_cast<size_t>(value - value_idx_.begin())]);
}

int64_t ParquetRowGroupReader::max_rows_read_bytes(int64_t min_rows) const {
  int64_t largest = 0;
  for (int64_t rg = 0; rg < num_row_groups(); ++rg) {
    const int64_t rows = row_group_rows(rg);
    if (rows <= min_rows) continue;
    int64_t column_bytes = 0;
    for (const int64_t column_idx : file_.selected_columns()) {
      // A sequence's chunk is read whole, then decoded a page at a time.
      const int64_t chunk = is_sequence_column(column_idx) ? file_.chunk_read_bytes(rg, column_idx) : 0;
      column_bytes =
          std::max(column_bytes, chunk + file_.max_page_read_bytes(rg, column_idx, decoded_row_bytes(column_idx)));
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
    for (const int64_t column_idx : file_.selected_columns())
      if (!is_sequence_column(column_idx)) largest = std::max(largest, file_.max_page_rows(rg, column_idx));
  }
  return largest;
}

// --- Encoded images: whole row groups, and pieces of whole image pages ---

int64_t ParquetRowGroupReader::encoded_bytes_bound(int64_t row_group_idx) const {
  if (encoded_idx_ < 0) return 0;
  const RowGroupInfo& group = metadata().row_groups.at(static_cast<size_t>(row_group_idx));
  const ColumnChunkInfo& chunk = group.columns[static_cast<size_t>(encoded_idx_)];
  // What the budget and the stream's buffers are sized by: a footer's claim, checked first.
  if (chunk.total_uncompressed_size_bytes > inflated_bound(chunk.codec, chunk.total_compressed_size_bytes))
    throw DataError(name() + ": row group " + std::to_string(row_group_idx) + ": the image column claims " +
                    std::to_string(chunk.total_uncompressed_size_bytes) + " bytes uncompressed from " +
                    std::to_string(chunk.total_compressed_size_bytes) + " compressed (total_uncompressed_size), more "
                    "than its codec can inflate them to: a damaged or hostile footer");
  return chunk.total_uncompressed_size_bytes;
}

int64_t ParquetRowGroupReader::read_encoded_row_group(int64_t row_group_idx, std::vector<uint8_t>& scratch,
                                                      uint8_t* bytes, int64_t capacity, int64_t* ends,
                                                      int64_t* labels) const {
  if (encoded_idx_ < 0) throw std::logic_error(name() + ": holds pixels, not encoded images: read them with read_row_group");
  const ParquetColumnReader::RowGroupChunks chunks = file_.read_row_group(row_group_idx, scratch);
  detail::PageBuffer buffer;
  decode_labels(chunks, row_group_rows(row_group_idx), labels, buffer);
  return detail::decode_encoded_chunk(chunks.chunk(encoded_idx_), bytes, capacity, ends, buffer);
}

ParquetRowGroupReader::EncodedPieces ParquetRowGroupReader::encoded_pieces(int64_t row_group_idx, int64_t max_rows,
                                                                           int64_t max_bytes) const {
  if (encoded_idx_ < 0) throw std::logic_error(name() + ": holds pixels, not encoded images");
  check_row_group(row_group_idx);
  const std::shared_ptr<const ParquetColumnReader::RowGroupPages> pages = file_.row_group_pages(row_group_idx);
  const detail::ChunkPages& images = (*pages)[static_cast<size_t>(encoded_idx_)];
  const int64_t dictionary = images.dictionary ? images.dictionary->size_bytes + images.dictionary->uncompressed_bytes : 0;
  // Labels are read a page at a time into the same scratch, and decoded.
  const int64_t label_bytes = label_idx_ < 0 ? 0 : file_.max_page_read_bytes(row_group_idx, label_idx_, int64_t{8});
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
  if (encoded_idx_ < 0) throw std::logic_error(name() + ": holds pixels, not encoded images");
  check_row_group(row_group_idx);
  const std::shared_ptr<const ParquetColumnReader::RowGroupPages> pages = file_.row_group_pages(row_group_idx);
  const std::vector<detail::PageSpan>& image_pages = (*pages)[static_cast<size_t>(encoded_idx_)].data;
  const auto first = std::find_if(image_pages.begin(), image_pages.end(),
                                  [&](const detail::PageSpan& page) { return page.first_row == begin; });
  const auto last = std::find_if(image_pages.begin(), image_pages.end(),
                                 [&](const detail::PageSpan& page) { return page.first_row + page.num_values == end; });
  if (begin >= end || first == image_pages.end() || last == image_pages.end() || last < first)
    throw std::invalid_argument(name() + ": row group " + std::to_string(row_group_idx) + ": rows " +
                                std::to_string(begin) + ".." + std::to_string(end) + " are not whole image pages");
  read_label_rows(row_group_idx, begin, end, labels, scratch);
  detail::PageBuffer buffer;
  int64_t written = 0;
  file_.read_page_run(row_group_idx, encoded_idx_, {begin, end}, scratch, [&](const detail::ChunkLocation& where) {
    written = detail::decode_encoded_chunk(where, bytes, capacity, ends, buffer);
  });
  return written;
}

}  // namespace feeder::parquet
