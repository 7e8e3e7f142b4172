// The image path: pixel column chunks decoded in parallel straight into the ImageStore.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <thread>

#include "feeder/error.h"
#include "feeder/formats/parquet/reader.h"
#include "formats/parquet/decoder/decoder.h"
#include "formats/parquet/detail/chunk_reader.h"
#include "formats/parquet/detail/column_values.h"

namespace feeder::parquet {

namespace {

[[noreturn]] void throw_out_of_range(const ParquetFile& file, const ColumnSchema& column, int64_t row, int64_t value) {
  throw DataError(file.name() + ": column '" + column.name + "' row " + std::to_string(row) + ": value " +
                  std::to_string(value) + " out of range 0..255");
}

// Decodes one pixel column chunk into store pixels: value of row r goes to pixels[r * stride].
// T is the column's physical value type (int32_t or int64_t).
template <class T>
void decode_pixel_chunk(const ParquetFile& file, const detail::ChunkLocation& where, int64_t first_row,
                        uint8_t* pixels, int64_t stride) {
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
        uint8_t* out = pixels + page_row * stride;
        const bool dictionary_page =
            page.encoding == Encoding::kRleDictionary || page.encoding == Encoding::kPlainDictionary;
        if (dictionary_page && source.has_dictionary) {
          // Fast path: indices go through the pixel LUT straight into the store, no typed copy.
          decoder::DictionaryIndexDecoder indices(page.values, page.num_values);
          uint32_t batch[decoder::kIndexBatch];
          for (int64_t done = 0; done < page.num_values;) {
            const int64_t n = std::min(decoder::kIndexBatch, page.num_values - done);
            indices.get(batch, n, lut.size());
            uint8_t* dst = out + done * stride;
            for (int64_t i = 0; i < n; ++i) {
              const int16_t pixel = lut[batch[i]];
              if (pixel < 0) throw_out_of_range(file, column, page_row + done + i, static_cast<int64_t>(dictionary[batch[i]]));
              dst[i * stride] = static_cast<uint8_t>(pixel);
            }
            done += n;
          }
          return;
        }
        scratch.resize(static_cast<size_t>(page.num_values));
        decoder::decode_values(page.encoding, page.values, page.num_values, scratch.data(), source);
        for (int64_t i = 0; i < page.num_values; ++i) {
          const T value = scratch[static_cast<size_t>(i)];
          if (value < 0 || value > 255) throw_out_of_range(file, column, page_row + i, static_cast<int64_t>(value));
          out[i * stride] = static_cast<uint8_t>(value);
        }
      });
}

ImageShape infer_shape(const ParquetFile& file, int64_t num_pixels) {
  const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(num_pixels))));
  if (num_pixels > 0 && side * side == num_pixels) return ImageShape{1, side, side};
  throw DataError(file.name() + ": " + std::to_string(num_pixels) +
                  " pixels per image is not a square; give the image shape (C,H,W) explicitly");
}

}  // namespace

ImageStore read_parquet_images(const std::filesystem::path& path, const ParquetImageOptions& options) {
  ReaderOptions reader_options;
  reader_options.verify_checksums = options.verify_checksums;
  reader_options.max_decoded_bytes = options.max_decoded_bytes;
  return read_parquet_images(ParquetFile::open(path, reader_options), options);
}

ImageStore read_parquet_images(const ParquetFile& file, const ParquetImageOptions& options) {
  file.require_flat_schema();
  const FileMetadata& meta = file.metadata();
  const int64_t label_idx = meta.column_index(options.label_column);
  const auto is_integer = [](const ColumnSchema& c) {
    return c.physical_type == PhysicalType::kInt32 || c.physical_type == PhysicalType::kInt64;
  };
  if (label_idx >= 0 && !is_integer(meta.columns[static_cast<size_t>(label_idx)])) {
    throw DataError(file.name() + ": label column '" + options.label_column + "' is " +
                    to_string(meta.columns[static_cast<size_t>(label_idx)].physical_type) + ", expected INT32 or INT64");
  }

  // Pick the pixel columns, or the one image column.
  std::vector<int64_t> pixel_idx;
  int64_t image_idx = -1;
  if (!options.pixel_columns.empty()) {
    for (const std::string& name : options.pixel_columns) {
      const int64_t idx = meta.column_index(name);
      if (idx < 0) throw DataError(file.name() + ": no pixel column named '" + name + "'");
      if (!is_integer(meta.columns[static_cast<size_t>(idx)])) {
        throw DataError(file.name() + ": pixel column '" + name + "' is not an integer column");
      }
      pixel_idx.push_back(idx);
    }
  } else if (options.image_column) {
    image_idx = meta.column_index(*options.image_column);
    if (image_idx < 0) throw DataError(file.name() + ": no image column named '" + *options.image_column + "'");
  } else {
    for (int64_t i = 0; i < static_cast<int64_t>(meta.columns.size()); ++i) {
      if (i != label_idx && is_integer(meta.columns[static_cast<size_t>(i)])) pixel_idx.push_back(i);
    }
    if (pixel_idx.empty()) {
      for (int64_t i = 0; i < static_cast<int64_t>(meta.columns.size()); ++i) {
        if (i == label_idx || meta.columns[static_cast<size_t>(i)].physical_type != PhysicalType::kFixedLenByteArray) continue;
        if (image_idx >= 0) {
          throw DataError(file.name() + ": several FIXED_LEN_BYTE_ARRAY columns; name the image column");
        }
        image_idx = i;
      }
    }
  }
  if (image_idx >= 0 && meta.columns[static_cast<size_t>(image_idx)].physical_type != PhysicalType::kFixedLenByteArray) {
    throw DataError(file.name() + ": image column '" + meta.columns[static_cast<size_t>(image_idx)].name +
                    "' is not FIXED_LEN_BYTE_ARRAY");
  }
  if (pixel_idx.empty() && image_idx < 0) {
    throw DataError(file.name() + ": no pixel columns (integer columns besides '" + options.label_column +
                    "') and no FIXED_LEN_BYTE_ARRAY image column");
  }
  const int64_t num_pixels = image_idx >= 0 ? meta.columns[static_cast<size_t>(image_idx)].type_length_bytes
                                            : static_cast<int64_t>(pixel_idx.size());
  const ImageShape shape = options.shape ? *options.shape : infer_shape(file, num_pixels);
  if (shape.num_pixels() != num_pixels) {
    throw DataError(file.name() + ": images have " + std::to_string(num_pixels) + " pixels but the shape " +
                    to_string(shape) + " has " + std::to_string(shape.num_pixels()));
  }
  if (meta.num_rows > options.max_decoded_bytes / (num_pixels + 8)) {
    throw DataError(file.name() + ": " + std::to_string(meta.num_rows) + " images of " + std::to_string(num_pixels) +
                    " pixels exceed the limit of " + std::to_string(options.max_decoded_bytes) + " bytes (max_decoded_bytes)");
  }

  ImageStore store(shape, meta.num_rows, label_idx >= 0);
  if (label_idx >= 0) {
    const ColumnData labels = file.read_column(label_idx);
    for (int64_t r = 0; r < labels.num_rows(); ++r) {
      if (!labels.valid[static_cast<size_t>(r)]) {
        throw DataError(file.name() + ": column '" + options.label_column + "' row " + std::to_string(r) + ": null label");
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
  } else {
    std::fill(store.labels().begin(), store.labels().end(), kNoLabel);
  }

  if (image_idx >= 0) {
    const ColumnData images = file.read_column(image_idx);
    const auto& bytes = std::get<std::vector<std::string>>(images.values);
    for (int64_t r = 0; r < images.num_rows(); ++r) {
      if (!images.valid[static_cast<size_t>(r)]) {
        throw DataError(file.name() + ": column '" + meta.columns[static_cast<size_t>(image_idx)].name + "' row " +
                        std::to_string(r) + ": null image");
      }
      std::memcpy(store.image(r), bytes[static_cast<size_t>(r)].data(), static_cast<size_t>(num_pixels));
    }
    return store;
  }

  // Pixel columns are split into contiguous ranges, one per thread, so threads write mostly
  // disjoint cache lines of the row-major store. Each worker keeps its first error; the caller
  // rethrows the one of the lowest column so the message does not depend on timing.
  const int64_t num_columns = static_cast<int64_t>(pixel_idx.size());
  int64_t num_threads = options.num_threads > 0 ? options.num_threads : std::max(1u, std::thread::hardware_concurrency());
  num_threads = std::clamp<int64_t>(num_threads, 1, num_columns);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(num_threads));
  auto work = [&](int64_t worker) {
    try {
      const int64_t begin = num_columns * worker / num_threads;
      const int64_t end = num_columns * (worker + 1) / num_threads;
      for (int64_t k = begin; k < end; ++k) {
        const int64_t column_idx = pixel_idx[static_cast<size_t>(k)];
        int64_t first_row = 0;
        for (int64_t rg = 0; rg < static_cast<int64_t>(meta.row_groups.size()); ++rg) {
          const detail::ChunkLocation where = detail::make_location(file, rg, column_idx, options.verify_checksums);
          uint8_t* pixels = store.pixels().data() + k;
          if (where.column->physical_type == PhysicalType::kInt32) {
            decode_pixel_chunk<int32_t>(file, where, first_row, pixels, num_pixels);
          } else {
            decode_pixel_chunk<int64_t>(file, where, first_row, pixels, num_pixels);
          }
          first_row += where.num_rows;
        }
      }
    } catch (...) {
      errors[static_cast<size_t>(worker)] = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> threads;
    for (int64_t w = 1; w < num_threads; ++w) threads.emplace_back(work, w);
    work(0);
  }  // jthreads join here
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return store;
}

}  // namespace feeder::parquet
