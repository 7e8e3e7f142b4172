#include "formats/parquet/detail/image_decode.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "feeder/error.h"
#include "formats/parquet/decoder/decoder.h"
#include "formats/parquet/detail/column_values.h"

namespace feeder::parquet::detail {

namespace {

// An integer column annotated unsigned (UINT_32, INT(64,false)) stores values above the signed
// maximum as negative numbers; they are read back as the unsigned values they are.
bool is_unsigned(const ColumnSchema& column) { return column.int_bit_width > 0 && !column.int_signed; }

// The value as the column means it: "300", "4294967295" (UINT_32 -1), "2.5", "1e+19", "NaN", "inf".
template <class T>
std::string value_text(T value, bool as_unsigned) {
  if constexpr (std::is_integral_v<T>) {
    if (as_unsigned) return std::to_string(static_cast<std::make_unsigned_t<T>>(value));
    return std::to_string(value);
  } else {
    if (std::isnan(value)) return "NaN";
    char text[64];
    const auto result = std::to_chars(text, text + sizeof(text), value);
    return std::string(text, result.ptr);
  }
}

// What is wrong with a value that did not convert: NaN, a fraction, or `range` (out of range).
template <class T>
std::string value_problem(T value, bool as_unsigned, const char* range) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(value)) return "value NaN is not a number";
    if (std::isfinite(value) && value != std::trunc(value)) return "value " + value_text(value, false) + " is not an integer";
  }
  return "value " + value_text(value, as_unsigned) + " " + range;
}

constexpr const char* kPixelRange = "out of range 0..255";
constexpr const char* kLabelRange = "out of range for an int64 label";

// The pixel a value stands for, or -1 when it is not an integer in 0..255 (NaN fails every comparison).
template <class T>
int16_t pixel_of(T value) {
  if constexpr (std::is_integral_v<T>) {
    return value >= 0 && value <= 255 ? static_cast<int16_t>(value) : int16_t{-1};
  } else {
    return value >= 0 && value <= 255 && value == std::trunc(value) ? static_cast<int16_t>(value) : int16_t{-1};
  }
}

// The label a value stands for; false when it is not an integer that fits int64.
template <class T>
bool label_of(T value, bool as_unsigned, int64_t& label) {
  if constexpr (std::is_same_v<T, int32_t>) {
    label = as_unsigned ? static_cast<int64_t>(static_cast<uint32_t>(value)) : value;
    return true;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    label = value;
    return !(as_unsigned && value < 0);
  } else {
    // [-2^63, 2^63) holds exactly the doubles that convert to int64 without overflow.
    if (!(value == std::trunc(value) && value >= static_cast<T>(-9223372036854775808.0) &&
          value < static_cast<T>(9223372036854775808.0))) {
      return false;
    }
    label = static_cast<int64_t>(value);
    return true;
  }
}

bool is_dictionary_encoded(const DataPage& page) {
  return page.encoding == Encoding::kRleDictionary || page.encoding == Encoding::kPlainDictionary;
}

// T is the column's physical value type: int32_t, int64_t, float or double. Decodes the rows of
// `selected` (sorted, disjoint, counted from the chunk's first row) to their places in `pixels`;
// the pages' other rows are passed over unconverted (dictionary indices a run at a time).
template <class T>
void decode_pixels(const ChunkLocation& where, std::span<const RowSelection> selected, uint8_t* pixels,
                   PageBuffer& buffer) {
  const ColumnSchema& column = *where.column;
  const bool as_unsigned = is_unsigned(column);
  std::vector<T> dictionary;
  // Dictionary entries mapped to pixels once per chunk; -1 marks an entry that is no pixel, which
  // is an error only if a row actually uses it.
  std::vector<int16_t> lut;
  std::vector<T> values;
  std::vector<uint8_t> valid;
  decoder::ValueSource<T> source;
  size_t next = 0;  // the first selection not wholly before the page
  // Calls take(begin, end, out) for each part of a selection within the page's rows [begin, end),
  // in row order, with rows counted from the page's first.
  const auto for_each_selected = [&](const DataPage& page, const auto& take) {
    const int64_t page_end = page.first_row + page.num_values;
    while (next < selected.size() && selected[next].end <= page.first_row) ++next;
    for (size_t i = next; i < selected.size() && selected[i].begin < page_end; ++i) {
      const RowSelection& part = selected[i];
      const int64_t begin = std::max(part.begin, page.first_row);
      const int64_t end = std::min(part.end, page_end);
      take(begin - page.first_row, end - page.first_row, pixels + part.out + (begin - part.begin));
    }
  };
  for_each_page(
      where,
      [&](const DictionaryPage& page) {
        load_dictionary(page, column, dictionary, source);
        lut.resize(dictionary.size());
        for (size_t i = 0; i < dictionary.size(); ++i) lut[i] = pixel_of(dictionary[i]);
      },
      [&](const DataPage& page) {
        require_no_nulls(where, page, valid, "null pixel value (pixel columns must not have nulls)");
        if (is_dictionary_encoded(page) && source.has_dictionary) {
          // Fast path: indices go through the pixel LUT straight into the output, no typed copy.
          decoder::DictionaryIndexDecoder indices(page.values, page.num_values);
          int64_t at = 0;
          for_each_selected(page, [&](int64_t begin, int64_t end, uint8_t* out) {
            indices.skip(begin - at);
            const int64_t bad = indices.get_mapped(out, end - begin, lut);
            at = end;
            if (bad < 0) return;
            // Find the dictionary entry again to name the value.
            std::vector<uint32_t> idx(static_cast<size_t>(begin + bad + 1));
            decoder::DictionaryIndexDecoder again(page.values, page.num_values);
            again.get(idx.data(), begin + bad + 1, lut.size());
            throw_at_row(where, page.first_row + begin + bad, value_problem(dictionary[idx.back()], as_unsigned, kPixelRange));
          });
          return;
        }
        values.resize(static_cast<size_t>(page.num_values));
        decoder::decode_values(page.encoding, page.values, page.num_values, values.data(), source);
        for_each_selected(page, [&](int64_t begin, int64_t end, uint8_t* out) {
          for (int64_t i = begin; i < end; ++i) {
            const int16_t pixel = pixel_of(values[static_cast<size_t>(i)]);
            if (pixel < 0) throw_at_row(where, page.first_row + i, value_problem(values[static_cast<size_t>(i)], as_unsigned, kPixelRange));
            out[i - begin] = static_cast<uint8_t>(pixel);
          }
        });
      },
      &buffer);
}

template <class T>
void decode_labels(const ChunkLocation& where, int64_t* labels, PageBuffer& buffer) {
  const bool as_unsigned = is_unsigned(*where.column);
  for_each_page_of_values<T>(where, "null label", buffer, [&](const DataPage& page, std::span<const T> values) {
    int64_t* out = labels + page.first_row;
    for (int64_t i = 0; i < page.num_values; ++i) {
      const T value = values[static_cast<size_t>(i)];
      if (!label_of(value, as_unsigned, out[i])) {
        throw_at_row(where, page.first_row + i, value_problem(value, as_unsigned, kLabelRange));
      }
    }
  });
}

[[noreturn]] void throw_not_a_number_column(const ChunkLocation& where) {
  throw DataError(chunk_context(where) + ": " + to_string(where.column->physical_type) +
                  " column cannot hold pixels or labels (expected INT32, INT64, FLOAT or DOUBLE)");
}

}  // namespace

void decode_pixel_chunk(const ChunkLocation& where, uint8_t* out, PageBuffer& buffer) {
  const RowSelection all{0, where.num_rows, 0};
  decode_pixel_chunk_rows(where, std::span(&all, 1), out, buffer);
}

void decode_pixel_chunk_rows(const ChunkLocation& where, std::span<const RowSelection> selected, uint8_t* out,
                             PageBuffer& buffer) {
  switch (where.column->physical_type) {
    case PhysicalType::kInt32: return decode_pixels<int32_t>(where, selected, out, buffer);
    case PhysicalType::kInt64: return decode_pixels<int64_t>(where, selected, out, buffer);
    case PhysicalType::kFloat: return decode_pixels<float>(where, selected, out, buffer);
    case PhysicalType::kDouble: return decode_pixels<double>(where, selected, out, buffer);
    default: throw_not_a_number_column(where);
  }
}

void decode_label_chunk(const ChunkLocation& where, int64_t* out, PageBuffer& buffer) {
  switch (where.column->physical_type) {
    case PhysicalType::kInt32: return decode_labels<int32_t>(where, out, buffer);
    case PhysicalType::kInt64: return decode_labels<int64_t>(where, out, buffer);
    case PhysicalType::kFloat: return decode_labels<float>(where, out, buffer);
    case PhysicalType::kDouble: return decode_labels<double>(where, out, buffer);
    default: throw_not_a_number_column(where);
  }
}

void decode_image_chunk(const ChunkLocation& where, uint8_t* images, int64_t image_bytes, PageBuffer& buffer) {
  const ColumnSchema& column = *where.column;
  std::vector<std::string> dictionary;
  std::vector<std::string> values;
  std::vector<uint8_t> valid;
  decoder::ValueSource<std::string> source;
  source.type_length_bytes = column.type_length_bytes;
  // Fixed-length images decompress straight into `images` (a BYTE_ARRAY's values carry lengths).
  const DirectValues direct{images, column.physical_type == PhysicalType::kFixedLenByteArray ? image_bytes : 0};
  for_each_page(
      where,
      [&](const DictionaryPage& page) {
        load_dictionary(page, column, dictionary, source);
      },
      [&](const DataPage& page) {
        require_no_nulls(where, page, valid, "null image");
        uint8_t* out = images + page.first_row * image_bytes;
        if (page.encoding == Encoding::kPlain) {
          const size_t needed = static_cast<size_t>(page.num_values) * static_cast<size_t>(image_bytes);
          if (page.values.size() < needed) {
            throw DataError(page_context(where, page.page_idx) + ": " + std::to_string(page.num_values) +
                            " images need " + std::to_string(needed) + " bytes, the page holds " +
                            std::to_string(page.values.size()));
          }
          if (page.values.data() != out) std::memcpy(out, page.values.data(), needed);  // else decompressed in place
          return;
        }
        values.resize(static_cast<size_t>(page.num_values));
        decoder::decode_values(page.encoding, page.values, page.num_values, values.data(), source);
        for (const std::string& image : values) {
          std::memcpy(out, image.data(), static_cast<size_t>(image_bytes));
          out += image_bytes;
        }
      },
      &buffer, &direct);
}

int64_t decode_encoded_chunk(const ChunkLocation& where, uint8_t* bytes, int64_t capacity, int64_t* ends,
                             PageBuffer& buffer) {
  const ColumnSchema& column = *where.column;
  std::vector<std::string> dictionary;
  std::vector<std::string> values;
  std::vector<uint8_t> valid;
  decoder::ValueSource<std::string> source;
  int64_t used = 0;
  const auto append = [&](const uint8_t* data, int64_t size, int64_t row) {
    if (size > capacity - used) {
      throw_at_row(where, row, "images take more than the " + std::to_string(capacity) +
                                   " bytes its pages and dictionary declare (total_uncompressed_size): the "
                                   "dictionary repeats images, which feeder cannot hold within a size known before "
                                   "reading; write the set without repeated images or without a dictionary for "
                                   "this column (feeder convert writes images without one)");
    }
    std::memcpy(bytes + used, data, static_cast<size_t>(size));
    used += size;
    ends[row] = used;
  };
  for_each_page(
      where,
      [&](const DictionaryPage& page) {
        load_dictionary(page, column, dictionary, source);
      },
      [&](const DataPage& page) {
        require_no_nulls(where, page, valid, "null image");
        if (page.encoding == Encoding::kPlain) {
          // Each value: a 4-byte little-endian length, then the bytes. Copied straight from the page.
          size_t at = 0;
          for (int64_t i = 0; i < page.num_values; ++i) {
            uint32_t size = 0;
            if (page.values.size() - at < 4) throw_at_row(where, page.first_row + i, "page ends inside a value's length");
            std::memcpy(&size, page.values.data() + at, 4);
            at += 4;
            if (size > page.values.size() - at) {
              throw_at_row(where, page.first_row + i, "image of " + std::to_string(size) + " bytes overruns its page (" +
                                                          std::to_string(page.values.size() - at) + " bytes left)");
            }
            append(page.values.data() + at, size, page.first_row + i);
            at += size;
          }
          return;
        }
        values.resize(static_cast<size_t>(page.num_values));
        decoder::decode_values(page.encoding, page.values, page.num_values, values.data(), source);
        for (int64_t i = 0; i < page.num_values; ++i) {
          const std::string& image = values[static_cast<size_t>(i)];
          append(reinterpret_cast<const uint8_t*>(image.data()), static_cast<int64_t>(image.size()), page.first_row + i);
        }
      },
      &buffer);
  return used;
}

// Pixel columns are decoded kTileColumns at a time into a column-major tile (each column
// contiguous, so decoding writes sequentially), then the tile is transposed into the row-major
// images in blocks that stay in L1, writing whole cache lines. Writing each column straight into
// the images would touch one cache line per value, which measured several times slower.
constexpr int64_t kTileRows = 64;

void decode_pixel_columns(const std::function<ChunkLocation(int64_t column_idx)>& locate,
                          std::span<const int64_t> pixel_idx, int64_t begin, int64_t end, int64_t rows,
                          int64_t num_pixels, uint8_t* images, PixelScratch& scratch) {
  for (int64_t k0 = begin; k0 < end; k0 += kTileColumns) {
    const int64_t group = std::min(kTileColumns, end - k0);
    scratch.tile.resize(static_cast<size_t>(group * rows));
    for (int64_t j = 0; j < group; ++j) {
      const ChunkLocation where = locate(pixel_idx[static_cast<size_t>(k0 + j)]);
      decode_pixel_chunk(where, scratch.tile.data() + j * rows, scratch.pages);
    }
    for (int64_t r0 = 0; r0 < rows; r0 += kTileRows) {
      const int64_t block = std::min(kTileRows, rows - r0);
      uint8_t* dst = images + r0 * num_pixels + k0;
      for (int64_t j = 0; j < group; ++j) {
        const uint8_t* src = scratch.tile.data() + j * rows + r0;
        for (int64_t r = 0; r < block; ++r) dst[r * num_pixels + j] = src[r];
      }
    }
  }
}

void decode_pixel_column_rows(const std::function<void(int64_t column_idx, uint8_t* out)>& decode_column,
                              std::span<const int64_t> pixel_idx, std::span<const ImageRows> rows, int64_t num_pixels,
                              PixelScratch& scratch) {
  const auto num_columns = static_cast<int64_t>(pixel_idx.size());
  int64_t tile_rows = 0;
  for (const ImageRows& part : rows) tile_rows += part.end - part.begin;
  const int64_t columns = tile_columns(tile_rows);
  for (int64_t k0 = 0; k0 < num_columns; k0 += columns) {
    const int64_t group = std::min(columns, num_columns - k0);
    scratch.tile.resize(static_cast<size_t>(group * tile_rows));
    for (int64_t j = 0; j < group; ++j) decode_column(pixel_idx[static_cast<size_t>(k0 + j)], scratch.tile.data() + j * tile_rows);
    int64_t part_first = 0;  // the part's first row in the tile
    for (const ImageRows& part : rows) {
      for (int64_t r0 = part.begin; r0 < part.end; r0 += kTileRows) {
        const int64_t block = std::min(kTileRows, part.end - r0);
        uint8_t* dst = part.images + (r0 - part.begin) * num_pixels + k0;
        for (int64_t j = 0; j < group; ++j) {
          const uint8_t* src = scratch.tile.data() + j * tile_rows + part_first + (r0 - part.begin);
          for (int64_t r = 0; r < block; ++r) dst[r * num_pixels + j] = src[r];
        }
      }
      part_first += part.end - part.begin;
    }
  }
}

}  // namespace feeder::parquet::detail
