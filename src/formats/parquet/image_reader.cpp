// The image path: pixel column chunks decoded in parallel straight into the ImageStore.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "feeder/error.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/util/parallel_for.h"
#include "formats/parquet/decoder/decoder.h"
#include "formats/parquet/detail/chunk_reader.h"
#include "formats/parquet/detail/column_values.h"

namespace feeder::parquet {

namespace {

[[noreturn]] void throw_out_of_range(const ParquetFile& file, const ColumnSchema& column, int64_t row, int64_t value) {
  throw DataError(file.name() + ": column '" + column.name + "' row " + std::to_string(row) + ": value " +
                  std::to_string(value) + " out of range 0..255");
}

// Decodes one pixel column chunk into out[0, rows of the row group), one byte per row; first_row
// (the row group's first row in the file) only numbers rows in messages.
// T is the column's physical value type (int32_t or int64_t).
template <class T>
void decode_pixel_chunk(const ParquetFile& file, const detail::ChunkLocation& where, int64_t first_row, uint8_t* pixels,
                        detail::PageBuffer& buffer) {
  const ColumnSchema& column = *where.column;
  std::vector<T> dictionary;
  // Dictionary entries mapped to pixels once per chunk; -1 marks an entry outside 0..255, which is
  // an error only if a row actually uses it.
  std::vector<int16_t> lut;
  std::vector<T> scratch;
  std::vector<uint8_t> valid;
  decoder::ValueSource<T> source;
  detail::for_each_page(
      where,
      [&](const detail::DictionaryPage& page) {
        detail::decode_dictionary_page(page, column, dictionary);
        source.dictionary = dictionary;
        source.has_dictionary = true;
        lut.resize(dictionary.size());
        for (size_t i = 0; i < dictionary.size(); ++i) {
          lut[i] = dictionary[i] >= 0 && dictionary[i] <= 255 ? static_cast<int16_t>(dictionary[i]) : int16_t{-1};
        }
      },
      [&](const detail::DataPage& page) {
        const int64_t page_row = first_row + page.first_row;
        if (column.max_definition_level > 0) {
          valid.resize(static_cast<size_t>(page.num_values));
          const int64_t present = detail::decode_validity(page, valid.data());
          if (present != page.num_values) {
            const int64_t null_idx = std::find(valid.begin(), valid.end(), 0) - valid.begin();
            throw DataError(file.name() + ": column '" + column.name + "' row " + std::to_string(page_row + null_idx) +
                            ": null pixel value (pixel columns must not have nulls)");
          }
        }
        uint8_t* out = pixels + page.first_row;
        const bool dictionary_page =
            page.encoding == Encoding::kRleDictionary || page.encoding == Encoding::kPlainDictionary;
        if (dictionary_page && source.has_dictionary) {
          // Fast path: indices go through the pixel LUT straight into the store, no typed copy.
          decoder::DictionaryIndexDecoder indices(page.values, page.num_values);
          const int64_t bad = indices.get_mapped(out, page.num_values, lut);
          if (bad >= 0) {
            // Find the dictionary entry again to name the value.
            std::vector<uint32_t> idx(static_cast<size_t>(bad + 1));
            decoder::DictionaryIndexDecoder again(page.values, page.num_values);
            again.get(idx.data(), bad + 1, lut.size());
            throw_out_of_range(file, column, page_row + bad, static_cast<int64_t>(dictionary[idx.back()]));
          }
          return;
        }
        scratch.resize(static_cast<size_t>(page.num_values));
        decoder::decode_values(page.encoding, page.values, page.num_values, scratch.data(), source);
        for (int64_t i = 0; i < page.num_values; ++i) {
          const T value = scratch[static_cast<size_t>(i)];
          if (value < 0 || value > 255) throw_out_of_range(file, column, page_row + i, static_cast<int64_t>(value));
          out[i] = static_cast<uint8_t>(value);
        }
      },
      &buffer);
}

// True when every data page of the chunk is PLAIN, so its values are the images' bytes back to back.
bool all_pages_plain(const detail::ChunkLocation& where) {
  const detail::PageCounts counts = detail::count_pages(where);
  return std::all_of(counts.data_encodings.begin(), counts.data_encodings.end(),
                     [](Encoding encoding) { return encoding == Encoding::kPlain; });
}

// Fills the store's pixels from a FIXED_LEN_BYTE_ARRAY column of whole images. PLAIN pages (what
// feeder and most writers produce) are copied straight into the store rows; other encodings go
// through the generic column reader.
void read_image_column(const ParquetFile& file, int64_t image_idx, bool verify_checksums, ImageStore& store) {
  const FileMetadata& meta = file.metadata();
  const ColumnSchema& column = meta.columns[static_cast<size_t>(image_idx)];
  const auto image_bytes = static_cast<size_t>(store.image_bytes());
  detail::PageBuffer buffer;
  std::vector<uint8_t> valid;
  int64_t first_row = 0;
  for (int64_t rg = 0; rg < static_cast<int64_t>(meta.row_groups.size()); ++rg) {
    const detail::ChunkLocation where = detail::make_location(file, rg, image_idx, verify_checksums);
    if (!all_pages_plain(where)) {
      const ColumnData images = file.read_column(image_idx);
      const auto& bytes = std::get<std::vector<std::string>>(images.values);
      for (int64_t r = 0; r < images.num_rows(); ++r) {
        if (!images.valid[static_cast<size_t>(r)])
          throw DataError(file.name() + ": column '" + column.name + "' row " + std::to_string(r) + ": null image");
        std::memcpy(store.image(r), bytes[static_cast<size_t>(r)].data(), image_bytes);
      }
      return;
    }
    detail::for_each_page(
        where, [](const detail::DictionaryPage&) {},
        [&](const detail::DataPage& page) {
          const int64_t page_row = first_row + page.first_row;
          if (column.max_definition_level > 0) {
            valid.resize(static_cast<size_t>(page.num_values));
            if (detail::decode_validity(page, valid.data()) != page.num_values) {
              const int64_t null_idx = std::find(valid.begin(), valid.end(), 0) - valid.begin();
              throw DataError(file.name() + ": column '" + column.name + "' row " +
                              std::to_string(page_row + null_idx) + ": null image");
            }
          }
          const size_t needed = static_cast<size_t>(page.num_values) * image_bytes;
          if (page.values.size() < needed)
            throw DataError(detail::page_context(where, page.page_idx) + ": " + std::to_string(page.num_values) +
                            " images need " + std::to_string(needed) + " bytes, the page holds " +
                            std::to_string(page.values.size()));
          std::memcpy(store.image(page_row), page.values.data(), needed);
        },
        &buffer);
    first_row += meta.row_groups[static_cast<size_t>(rg)].num_rows;
  }
}

ImageShape infer_shape(const ParquetFile& file, int64_t num_pixels) {
  // feeder's writer records the shape as "CxHxW"; trust it when it matches the pixel count.
  for (const KeyValue& kv : file.metadata().key_values) {
    if (kv.key != "feeder.image_shape" || !kv.value) continue;
    ImageShape shape;
    long long c = 0, h = 0, w = 0;
    if (std::sscanf(kv.value->c_str(), "%lldx%lldx%lld", &c, &h, &w) == 3 && c > 0 && h > 0 && w > 0 &&
        c * h * w == num_pixels) {
      return ImageShape{c, h, w};
    }
  }
  const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(num_pixels))));
  if (num_pixels > 0 && side * side == num_pixels) return ImageShape{1, side, side};
  throw DataError(file.name() + ": " + std::to_string(num_pixels) +
                  " pixels per image is not a square; give the image shape (C,H,W) explicitly");
}

bool is_integer(const ColumnSchema& column) {
  return column.physical_type == PhysicalType::kInt32 || column.physical_type == PhysicalType::kInt64;
}

// The label column's index, or -1 when the file has none (an unlabeled set).
int64_t find_label_column(const ParquetFile& file, const std::string& label_column) {
  const FileMetadata& meta = file.metadata();
  const int64_t label_idx = meta.column_index(label_column);
  if (label_idx >= 0 && !is_integer(meta.columns[static_cast<size_t>(label_idx)])) {
    throw DataError(file.name() + ": label column '" + label_column + "' is " +
                    to_string(meta.columns[static_cast<size_t>(label_idx)].physical_type) + ", expected INT32 or INT64");
  }
  return label_idx;
}

// Where the pixels are: integer columns, one per pixel, or one FIXED_LEN_BYTE_ARRAY column of
// whole images. Exactly one of the two is set.
struct ImageColumns {
  std::vector<int64_t> pixel_idx;  // in pixel order
  int64_t image_idx = -1;
};

// Every integer column but the label, in file order; failing that, the one FIXED_LEN_BYTE_ARRAY
// column other than the label.
ImageColumns default_image_columns(const ParquetFile& file, int64_t label_idx) {
  const FileMetadata& meta = file.metadata();
  ImageColumns columns;
  for (int64_t i = 0; i < static_cast<int64_t>(meta.columns.size()); ++i) {
    if (i != label_idx && is_integer(meta.columns[static_cast<size_t>(i)])) columns.pixel_idx.push_back(i);
  }
  if (!columns.pixel_idx.empty()) return columns;
  for (int64_t i = 0; i < static_cast<int64_t>(meta.columns.size()); ++i) {
    if (i == label_idx || meta.columns[static_cast<size_t>(i)].physical_type != PhysicalType::kFixedLenByteArray) continue;
    if (columns.image_idx >= 0) {
      throw DataError(file.name() + ": several FIXED_LEN_BYTE_ARRAY columns; name the image column");
    }
    columns.image_idx = i;
  }
  return columns;
}

ImageColumns choose_image_columns(const ParquetFile& file, const ParquetImageOptions& options, int64_t label_idx) {
  const FileMetadata& meta = file.metadata();
  ImageColumns columns;
  if (!options.pixel_columns.empty()) {
    for (const std::string& name : options.pixel_columns) {
      const int64_t idx = meta.column_index(name);
      if (idx < 0) throw DataError(file.name() + ": no pixel column named '" + name + "'");
      if (!is_integer(meta.columns[static_cast<size_t>(idx)])) {
        throw DataError(file.name() + ": pixel column '" + name + "' is not an integer column");
      }
      columns.pixel_idx.push_back(idx);
    }
  } else if (options.image_column) {
    columns.image_idx = meta.column_index(*options.image_column);
    if (columns.image_idx < 0) throw DataError(file.name() + ": no image column named '" + *options.image_column + "'");
  } else {
    columns = default_image_columns(file, label_idx);
  }
  if (columns.image_idx >= 0 &&
      meta.columns[static_cast<size_t>(columns.image_idx)].physical_type != PhysicalType::kFixedLenByteArray) {
    throw DataError(file.name() + ": image column '" + meta.columns[static_cast<size_t>(columns.image_idx)].name +
                    "' is not FIXED_LEN_BYTE_ARRAY");
  }
  if (columns.pixel_idx.empty() && columns.image_idx < 0) {
    throw DataError(file.name() + ": no pixel columns (integer columns besides '" + options.label_column +
                    "') and no FIXED_LEN_BYTE_ARRAY image column");
  }
  return columns;
}

// The shape asked for or found in the file, checked against the pixel count, and the whole store
// checked against max_decoded_bytes before anything is allocated.
ImageShape resolve_shape(const ParquetFile& file, const ParquetImageOptions& options, int64_t num_pixels) {
  const ImageShape shape = options.shape ? *options.shape : infer_shape(file, num_pixels);
  if (shape.num_pixels() != num_pixels) {
    throw DataError(file.name() + ": images have " + std::to_string(num_pixels) + " pixels but the shape " +
                    to_string(shape) + " has " + std::to_string(shape.num_pixels()));
  }
  const int64_t num_rows = file.metadata().num_rows;
  if (num_rows > options.max_decoded_bytes / (num_pixels + 8)) {
    throw DataError(file.name() + ": " + std::to_string(num_rows) + " images of " + std::to_string(num_pixels) +
                    " pixels exceed the limit of " + std::to_string(options.max_decoded_bytes) + " bytes (max_decoded_bytes)");
  }
  return shape;
}

void read_labels(const ParquetFile& file, int64_t label_idx, ImageStore& store) {
  const ColumnData labels = file.read_column(label_idx);
  const std::string& label_column = file.metadata().columns[static_cast<size_t>(label_idx)].name;
  for (int64_t r = 0; r < labels.num_rows(); ++r) {
    if (!labels.valid[static_cast<size_t>(r)]) {
      throw DataError(file.name() + ": column '" + label_column + "' row " + std::to_string(r) + ": null label");
    }
    store.labels()[static_cast<size_t>(r)] = std::visit(
        [&](const auto& v) -> int64_t {
          using V = typename std::decay_t<decltype(v)>::value_type;
          if constexpr (std::is_same_v<V, int32_t> || std::is_same_v<V, int64_t>) {
            return static_cast<int64_t>(v[static_cast<size_t>(r)]);
          } else {
            return kNoLabel;
          }
        },
        labels.values);
  }
}

// Pixel columns are split into contiguous ranges, one per thread (one parallel_for item each, in
// column order, so the error reported is the one of the leftmost failing range). An item decodes
// a group of kTileColumns columns of one row group into its own column-major tile (each column
// contiguous, so decoding writes sequentially), then transposes the tile into the row-major store
// in blocks that stay in L1, writing whole cache lines. Writing each column straight into the
// store would touch one cache line per value, which measured several times slower; contiguous
// ranges rather than interleaved groups keep two threads off the same cache lines.
constexpr int64_t kTileColumns = 32;
constexpr int64_t kTileRows = 64;

// Decodes pixel columns [begin, end) of pixel_idx, every row group, into the store.
void read_pixel_range(const ParquetFile& file, const std::vector<int64_t>& pixel_idx, int64_t begin, int64_t end,
                      bool verify_checksums, ImageStore& store) {
  const FileMetadata& meta = file.metadata();
  const int64_t num_pixels = store.image_bytes();
  std::vector<uint8_t> tile;  // (group columns, row group rows) uint8
  detail::PageBuffer buffer;
  int64_t first_row = 0;
  for (int64_t rg = 0; rg < static_cast<int64_t>(meta.row_groups.size()); ++rg) {
    const int64_t rows = meta.row_groups[static_cast<size_t>(rg)].num_rows;
    for (int64_t k0 = begin; k0 < end; k0 += kTileColumns) {
      const int64_t group = std::min(kTileColumns, end - k0);
      tile.resize(static_cast<size_t>(group * rows));
      for (int64_t j = 0; j < group; ++j) {
        const int64_t column_idx = pixel_idx[static_cast<size_t>(k0 + j)];
        const detail::ChunkLocation where = detail::make_location(file, rg, column_idx, verify_checksums);
        uint8_t* column_out = tile.data() + j * rows;
        if (where.column->physical_type == PhysicalType::kInt32) {
          decode_pixel_chunk<int32_t>(file, where, first_row, column_out, buffer);
        } else {
          decode_pixel_chunk<int64_t>(file, where, first_row, column_out, buffer);
        }
      }
      for (int64_t r0 = 0; r0 < rows; r0 += kTileRows) {
        const int64_t block = std::min(kTileRows, rows - r0);
        uint8_t* dst = store.image(first_row + r0) + k0;
        for (int64_t j = 0; j < group; ++j) {
          const uint8_t* src = tile.data() + j * rows + r0;
          for (int64_t r = 0; r < block; ++r) dst[r * num_pixels + j] = src[r];
        }
      }
    }
    first_row += rows;
  }
}

void read_pixel_columns(const ParquetFile& file, const std::vector<int64_t>& pixel_idx, bool verify_checksums,
                        int num_threads, ImageStore& store) {
  const int64_t num_columns = static_cast<int64_t>(pixel_idx.size());
  const int64_t num_ranges = std::min<int64_t>(num_threads, num_columns);
  parallel_for(num_ranges, static_cast<int>(num_ranges), [&](int64_t range_idx) {
    read_pixel_range(file, pixel_idx, num_columns * range_idx / num_ranges, num_columns * (range_idx + 1) / num_ranges,
                     verify_checksums, store);
  });
}

}  // namespace

ImageStore read_parquet_images(const std::filesystem::path& path, const ParquetImageOptions& options) {
  ReaderOptions reader_options;
  reader_options.verify_checksums = options.verify_checksums;
  reader_options.max_decoded_bytes = options.max_decoded_bytes;
  return read_parquet_images(ParquetFile::open(path, reader_options), options);
}

ImageStore read_parquet_images(const ParquetFile& file, const ParquetImageOptions& options) {
  const int num_threads = resolve_num_threads(options.num_threads, "parquet image reader: num_threads");
  file.require_flat_schema();
  const FileMetadata& meta = file.metadata();
  const int64_t label_idx = find_label_column(file, options.label_column);
  const ImageColumns columns = choose_image_columns(file, options, label_idx);
  const int64_t num_pixels = columns.image_idx >= 0
                                 ? meta.columns[static_cast<size_t>(columns.image_idx)].type_length_bytes
                                 : static_cast<int64_t>(columns.pixel_idx.size());
  const ImageShape shape = resolve_shape(file, options, num_pixels);

  ImageStore store(shape, meta.num_rows, label_idx >= 0);
  if (label_idx >= 0) {
    read_labels(file, label_idx, store);
  } else {
    std::fill(store.labels().begin(), store.labels().end(), kNoLabel);
  }
  if (columns.image_idx >= 0) {
    read_image_column(file, columns.image_idx, options.verify_checksums, store);
  } else {
    read_pixel_columns(file, columns.pixel_idx, options.verify_checksums, num_threads, store);
  }
  return store;
}

}  // namespace feeder::parquet
