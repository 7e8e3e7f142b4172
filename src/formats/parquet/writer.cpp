#include "feeder/formats/parquet/writer.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "feeder/error.h"
#include "feeder/io/file.h"
#include "feeder/io/file_system.h"
#include "feeder/util/interrupt.h"
#include "feeder/util/parallel_for.h"
#include "feeder/version.h"
#include "formats/parquet/codec.h"
#include "formats/parquet/detail/thrift.h"
#include "formats/parquet/encoder/dictionary_encoder.h"
#include "formats/parquet/encoder/plain_encoder.h"

namespace feeder::parquet {
namespace {

namespace fmt = format;

// "<app> version <semver>" is the form other readers parse to apply per-writer workarounds.
constexpr std::string_view kMagic = "PAR1";
// Pixel columns are transposed this many at a time: a block reads 32 bytes of each image (one cache
// line) and its column-major copy stays in L2 while it is encoded.
constexpr int64_t kPixelColumnsPerBlock = 32;
constexpr int64_t kTransposeRows = 64;
// Labels are class indexes; past this many distinct values a dictionary stops paying off.
constexpr size_t kMaxLabelDictionaryEntries = 4096;
constexpr int64_t kMaxPageSizeBytes = int64_t{1} << 30;
// Column chunks a file may have (row groups x columns). Each is about 50 bytes of footer and
// several hundred once a reader parses it: 60,000 row groups of 785 pixel columns (row groups of
// one image) held 24 GB while being written. Two million make a footer of about 100 MB.
constexpr int64_t kMaxColumnChunks = int64_t{1} << 21;

// Options resolved and checked once; immutable while writing.
struct WriteConfig {
  ParquetLayout layout;
  Codec codec;
  int compression_level;
  int64_t rows_per_group;
  int64_t page_size_bytes;
  int64_t page_rows;  // 0: pages by page_size_bytes
  int num_threads;

  int64_t values_per_page(int64_t value_bytes) const {
    return page_rows > 0 ? page_rows : std::max<int64_t>(1, page_size_bytes / value_bytes);
  }
};

int default_level(Codec codec) {
  switch (codec) {
    case Codec::kZstd: return 1;  // FashionMNIST train: level 1 28.96 MB, 3 29.40 MB, 15 28.06 MB at 5x the time
    case Codec::kGzip: return 6;
    case Codec::kBrotli: return 5;
    default: return -1;  // the codec has no levels, or its library default is right
  }
}

WriteConfig resolve(const ParquetWriteOptions& options) {
  switch (options.codec) {
    case Codec::kUncompressed:
    case Codec::kSnappy:
    case Codec::kGzip:
    case Codec::kBrotli:
    case Codec::kZstd:
    case Codec::kLz4Raw:
      break;
    case Codec::kLz4:
      throw OptionsError("parquet writer: codec LZ4 (Hadoop framing) is deprecated; use LZ4_RAW (\"lz4\")");
    default:
      throw OptionsError("parquet writer: cannot write codec " + parquet::to_string(options.codec));
  }
  if (options.row_group_size <= 0)
    throw OptionsError("parquet writer: row group size must be positive, got " + std::to_string(options.row_group_size));
  // Page sizes and value counts are 32-bit in the page header.
  if (options.page_size_bytes <= 0 || options.page_size_bytes > kMaxPageSizeBytes)
    throw OptionsError("parquet writer: page size must be 1 byte to 1 GiB, got " + std::to_string(options.page_size_bytes));
  // Levels each codec takes; a level given to a codec without levels is refused, not ignored.
  if (options.compression_level != 0) {
    const auto [lowest, highest] = parquet::compression_levels(options.codec);
    if (lowest > highest)
      throw OptionsError("parquet writer: codec " + parquet::to_string(options.codec) +
                         " has no compression levels (got level " + std::to_string(options.compression_level) + ")");
    if (options.compression_level < lowest || options.compression_level > highest)
      throw OptionsError("parquet writer: codec " + parquet::to_string(options.codec) + " takes levels " +
                         std::to_string(lowest) + " to " + std::to_string(highest) + ", got " +
                         std::to_string(options.compression_level));
  }
  WriteConfig config;
  config.layout = options.layout;
  config.codec = options.codec;
  config.compression_level = options.compression_level != 0 ? options.compression_level : default_level(options.codec);
  config.rows_per_group = options.row_group_size;
  config.page_size_bytes = options.page_size_bytes;
  if (options.page_rows < 0 || options.page_rows > INT32_MAX)
    throw OptionsError("parquet writer: page rows must be positive (or 0), got " + std::to_string(options.page_rows));
  config.page_rows = options.page_rows;
  config.num_threads = resolve_num_threads(options.num_threads, "parquet writer: number of threads");
  return config;
}

fmt::CompressionCodec::type to_thrift(Codec codec) { return static_cast<fmt::CompressionCodec::type>(codec); }

std::vector<uint8_t> compress_page(const WriteConfig& config, std::span<const uint8_t> page) {
  if (config.codec == Codec::kUncompressed) return {page.begin(), page.end()};
  return parquet::compress(config.codec, page, config.compression_level);
}

// One page, compressed, with its serialized header in front.
struct EncodedPage {
  std::vector<uint8_t> bytes;
  int64_t uncompressed_size_bytes = 0;  // header + uncompressed payload, as ColumnMetaData counts it
};

EncodedPage encode_page(const WriteConfig& config, fmt::PageHeader header, std::span<const uint8_t> payload) {
  std::vector<uint8_t> compressed = compress_page(config, payload);
  if (payload.size() > INT32_MAX || compressed.size() > INT32_MAX)
    throw OptionsError("parquet writer: a page exceeds 2 GiB; use a smaller page size");
  header.__set_uncompressed_page_size(static_cast<int32_t>(payload.size()));
  header.__set_compressed_page_size(static_cast<int32_t>(compressed.size()));
  const std::string header_bytes = parquet::detail::serialize_page_header(header);
  EncodedPage page;
  page.bytes.reserve(header_bytes.size() + compressed.size());
  page.bytes.insert(page.bytes.end(), header_bytes.begin(), header_bytes.end());
  page.bytes.insert(page.bytes.end(), compressed.begin(), compressed.end());
  page.uncompressed_size_bytes = static_cast<int64_t>(header_bytes.size() + payload.size());
  return page;
}

EncodedPage encode_dictionary_page(const WriteConfig& config, std::span<const uint8_t> plain_values, int64_t num_entries) {
  fmt::DictionaryPageHeader dictionary_header;
  dictionary_header.__set_num_values(static_cast<int32_t>(num_entries));
  dictionary_header.__set_encoding(fmt::Encoding::PLAIN);
  dictionary_header.__set_is_sorted(true);  // entries are in ascending order
  fmt::PageHeader header;
  header.__set_type(fmt::PageType::DICTIONARY_PAGE);
  header.__set_dictionary_page_header(dictionary_header);
  return encode_page(config, std::move(header), plain_values);
}

EncodedPage encode_data_page(const WriteConfig& config, std::span<const uint8_t> payload, int64_t num_values,
                             fmt::Encoding::type encoding, const fmt::Statistics* statistics = nullptr) {
  fmt::DataPageHeader data_header;
  if (statistics) data_header.__set_statistics(*statistics);
  data_header.__set_num_values(static_cast<int32_t>(num_values));
  data_header.__set_encoding(encoding);
  // Required fields even though REQUIRED flat columns carry no levels.
  data_header.__set_definition_level_encoding(fmt::Encoding::RLE);
  data_header.__set_repetition_level_encoding(fmt::Encoding::RLE);
  fmt::PageHeader header;
  header.__set_type(fmt::PageType::DATA_PAGE);
  header.__set_data_page_header(data_header);
  return encode_page(config, std::move(header), payload);
}

// One column chunk of one row group, pages back to back, waiting to be placed in the file.
struct EncodedChunk {
  std::vector<uint8_t> bytes;
  Codec codec = Codec::kUncompressed;
  bool has_dictionary = false;
  int64_t data_page_offset_in_chunk = 0;  // the dictionary page, when present, is at 0
  int64_t uncompressed_size_bytes = 0;
  int64_t num_values = 0;
  std::vector<fmt::Encoding::type> encodings;
  fmt::Statistics statistics;

  void append(const EncodedPage& page) {
    bytes.insert(bytes.end(), page.bytes.begin(), page.bytes.end());
    uncompressed_size_bytes += page.uncompressed_size_bytes;
  }
};

fmt::Statistics make_statistics(std::string min_value, std::string max_value) {
  fmt::Statistics statistics;
  statistics.__set_null_count(0);
  statistics.__set_min_value(std::move(min_value));
  statistics.__set_max_value(std::move(max_value));
  statistics.__set_is_min_value_exact(true);
  statistics.__set_is_max_value_exact(true);
  return statistics;
}

template <typename T>
std::string plain_bytes(T value) {
  std::string bytes(sizeof(T), '\0');
  std::memcpy(bytes.data(), &value, sizeof(T));
  return bytes;
}

// Dictionary page (PLAIN values) followed by RLE_DICTIONARY data pages of at most values_per_page.
// `page_statistics(first, count)`, when given, gives each data page's statistics.
EncodedChunk encode_dictionary_chunk(
    const WriteConfig& config, const encoder::DictionaryColumn& column, std::span<const uint8_t> plain_dictionary,
    int64_t values_per_page,
    const std::function<std::optional<fmt::Statistics>(int64_t first, int64_t count)>& page_statistics = nullptr) {
  EncodedChunk chunk;
  chunk.codec = config.codec;
  chunk.has_dictionary = true;
  chunk.num_values = static_cast<int64_t>(column.indices.size());
  chunk.encodings = {fmt::Encoding::PLAIN, fmt::Encoding::RLE_DICTIONARY};
  chunk.append(encode_dictionary_page(config, plain_dictionary, static_cast<int64_t>(column.dictionary.size())));
  chunk.data_page_offset_in_chunk = static_cast<int64_t>(chunk.bytes.size());
  std::vector<uint8_t> payload;
  const std::span<const uint32_t> indices = column.indices;
  for (int64_t first = 0; first < chunk.num_values; first += values_per_page) {
    const int64_t count = std::min(values_per_page, chunk.num_values - first);
    payload.clear();
    encoder::put_dictionary_indices(indices.subspan(static_cast<size_t>(first), static_cast<size_t>(count)),
                                    column.bit_width, payload);
    const std::optional<fmt::Statistics> statistics = page_statistics ? page_statistics(first, count) : std::nullopt;
    chunk.append(encode_data_page(config, payload, count, fmt::Encoding::RLE_DICTIONARY, statistics ? &*statistics : nullptr));
  }
  return chunk;
}

// pixels: one pixel column of one row group, contiguous.
EncodedChunk encode_pixel_chunk(const WriteConfig& config, const uint8_t* pixels, int64_t num_rows) {
  const encoder::DictionaryColumn column = encoder::dictionary_encode_bytes(pixels, num_rows, 1);
  std::vector<int32_t> entries(column.dictionary.begin(), column.dictionary.end());
  std::vector<uint8_t> plain_dictionary;
  encoder::put_plain_int32(entries, plain_dictionary);
  const int64_t values_per_page = config.values_per_page(static_cast<int64_t>(sizeof(int32_t)));
  EncodedChunk chunk = encode_dictionary_chunk(config, column, plain_dictionary, values_per_page);
  if (!entries.empty()) chunk.statistics = make_statistics(plain_bytes(entries.front()), plain_bytes(entries.back()));
  return chunk;
}

EncodedChunk encode_label_chunk(const WriteConfig& config, std::span<const int64_t> labels) {
  const int64_t values_per_page = config.values_per_page(static_cast<int64_t>(sizeof(int64_t)));
  // Pages of a fixed number of rows are a streamed set's pieces: their label statistics tell the
  // loader how labels are laid out (sorted by label, say) without reading the pages.
  const auto page_statistics = [&](int64_t first, int64_t count) -> std::optional<fmt::Statistics> {
    if (config.page_rows == 0 || count == 0) return std::nullopt;
    const auto page = labels.subspan(static_cast<size_t>(first), static_cast<size_t>(count));
    const auto [min_it, max_it] = std::minmax_element(page.begin(), page.end());
    return make_statistics(plain_bytes(*min_it), plain_bytes(*max_it));
  };
  EncodedChunk chunk;
  chunk.codec = config.codec;
  // Pages of a set that streams are read one at a time: PLAIN saves reading a dictionary page with
  // each (a page of labels is a few hundred bytes either way).
  std::optional<encoder::DictionaryColumn> column;
  if (config.page_rows == 0) column = encoder::dictionary_encode_int64(labels, kMaxLabelDictionaryEntries);
  if (column) {
    std::vector<uint8_t> plain_dictionary;
    encoder::put_plain_int64(column->dictionary, plain_dictionary);
    chunk = encode_dictionary_chunk(config, *column, plain_dictionary, values_per_page, page_statistics);
  } else {
    chunk.num_values = static_cast<int64_t>(labels.size());
    chunk.encodings = {fmt::Encoding::PLAIN};
    std::vector<uint8_t> payload;
    for (int64_t first = 0; first < chunk.num_values; first += values_per_page) {
      const int64_t count = std::min(values_per_page, chunk.num_values - first);
      payload.clear();
      encoder::put_plain_int64(labels.subspan(static_cast<size_t>(first), static_cast<size_t>(count)), payload);
      const std::optional<fmt::Statistics> statistics = page_statistics(first, count);
      chunk.append(encode_data_page(config, payload, count, fmt::Encoding::PLAIN, statistics ? &*statistics : nullptr));
    }
  }
  if (!labels.empty()) {
    const auto [min_it, max_it] = std::minmax_element(labels.begin(), labels.end());
    chunk.statistics = make_statistics(plain_bytes(*min_it), plain_bytes(*max_it));
  }
  return chunk;
}

// images: (num_rows, image_bytes) contiguous. Pages are compressed in parallel: with one column
// there is nothing else to spread over the threads.
EncodedChunk encode_image_chunk(const WriteConfig& config, const uint8_t* images, int64_t num_rows, int64_t image_bytes) {
  const int64_t rows_per_page = config.values_per_page(image_bytes);
  const int64_t num_pages = (num_rows + rows_per_page - 1) / rows_per_page;
  std::vector<EncodedPage> pages(static_cast<size_t>(num_pages));
  std::vector<std::pair<const uint8_t*, const uint8_t*>> page_min_max(static_cast<size_t>(num_pages));
  auto less = [image_bytes](const uint8_t* a, const uint8_t* b) { return std::memcmp(a, b, static_cast<size_t>(image_bytes)) < 0; };
  parallel_for(num_pages, config.num_threads, [&](int64_t page_idx) {
    const int64_t first = page_idx * rows_per_page;
    const int64_t count = std::min(rows_per_page, num_rows - first);
    const uint8_t* begin = images + first * image_bytes;
    std::vector<uint8_t> payload;
    encoder::put_plain_fixed(begin, count, image_bytes, payload);
    pages[static_cast<size_t>(page_idx)] = encode_data_page(config, payload, count, fmt::Encoding::PLAIN);
    // Unsigned lexicographic order, the order Parquet defines for FIXED_LEN_BYTE_ARRAY.
    const uint8_t* min_image = begin;
    const uint8_t* max_image = begin;
    for (int64_t row = 1; row < count; ++row) {
      const uint8_t* image = begin + row * image_bytes;
      if (less(image, min_image)) min_image = image;
      if (less(max_image, image)) max_image = image;
    }
    page_min_max[static_cast<size_t>(page_idx)] = {min_image, max_image};
  });
  EncodedChunk chunk;
  chunk.codec = config.codec;
  chunk.num_values = num_rows;
  chunk.encodings = {fmt::Encoding::PLAIN};
  for (const EncodedPage& page : pages) chunk.append(page);
  if (num_pages > 0) {
    const uint8_t* min_image = page_min_max[0].first;
    const uint8_t* max_image = page_min_max[0].second;
    for (const auto& [page_min, page_max] : page_min_max) {
      if (less(page_min, min_image)) min_image = page_min;
      if (less(max_image, page_max)) max_image = page_max;
    }
    chunk.statistics = make_statistics(std::string(reinterpret_cast<const char*>(min_image), static_cast<size_t>(image_bytes)),
                                       std::string(reinterpret_cast<const char*>(max_image), static_cast<size_t>(image_bytes)));
  }
  return chunk;
}

// Encoded images (each an image file's bytes) as PLAIN BYTE_ARRAY pages of up to page_size_bytes
// (at least one image each), uncompressed: the images are compressed already, and a reader then
// takes them straight from the page.
EncodedChunk encode_encoded_chunk(const WriteConfig& config, const std::vector<SampleView>& samples) {
  WriteConfig raw = config;
  raw.codec = Codec::kUncompressed;
  EncodedChunk chunk;
  chunk.num_values = static_cast<int64_t>(samples.size());
  chunk.encodings = {fmt::Encoding::PLAIN};
  std::vector<uint8_t> payload;
  int64_t page_values = 0;
  const auto flush = [&] {
    if (page_values == 0) return;
    chunk.append(encode_data_page(raw, payload, page_values, fmt::Encoding::PLAIN));
    payload.clear();
    page_values = 0;
  };
  for (const SampleView& sample : samples) {
    if (sample.bytes.size() > INT32_MAX) throw OptionsError("parquet writer: an image of over 2 GiB cannot be one value");
    if (page_values > 0 && static_cast<int64_t>(payload.size() + 4 + sample.bytes.size()) > config.page_size_bytes) flush();
    const auto size = static_cast<uint32_t>(sample.bytes.size());
    const uint8_t length[4] = {static_cast<uint8_t>(size), static_cast<uint8_t>(size >> 8), static_cast<uint8_t>(size >> 16),
                               static_cast<uint8_t>(size >> 24)};
    payload.insert(payload.end(), length, length + 4);
    payload.insert(payload.end(), sample.bytes.begin(), sample.bytes.end());
    ++page_values;
  }
  flush();
  return chunk;
}

// Encodes every column chunk of rows [first_row, first_row + num_rows), in schema order.
std::vector<EncodedChunk> encode_row_group(const WriteConfig& config, const ImageStore& store, int64_t first_row,
                                           int64_t num_rows) {
  const int64_t image_bytes = store.image_bytes();
  const uint8_t* images = store.pixels().data() + first_row * image_bytes;  // (num_rows, image_bytes)
  const bool labeled = store.labeled();
  std::vector<EncodedChunk> chunks;
  if (config.layout == ParquetLayout::kImage) {
    if (labeled) chunks.push_back(encode_label_chunk(config, store.labels().subspan(static_cast<size_t>(first_row), static_cast<size_t>(num_rows))));
    chunks.push_back(encode_image_chunk(config, images, num_rows, image_bytes));
    return chunks;
  }
  const int64_t first_pixel_chunk = labeled ? 1 : 0;
  chunks.resize(static_cast<size_t>(first_pixel_chunk + image_bytes));
  const int64_t num_blocks = (image_bytes + kPixelColumnsPerBlock - 1) / kPixelColumnsPerBlock;
  // Item 0 is the label column (when any), items after it are blocks of pixel columns.
  parallel_for(first_pixel_chunk + num_blocks, config.num_threads, [&](int64_t item_idx) {
    if (item_idx < first_pixel_chunk) {
      chunks[0] = encode_label_chunk(config, store.labels().subspan(static_cast<size_t>(first_row), static_cast<size_t>(num_rows)));
      return;
    }
    const int64_t first_column = (item_idx - first_pixel_chunk) * kPixelColumnsPerBlock;
    const int64_t num_columns = std::min(kPixelColumnsPerBlock, image_bytes - first_column);
    std::vector<uint8_t> block(static_cast<size_t>(num_columns * num_rows));  // (num_columns, num_rows)
    // Tiles of kTransposeRows rows: each column then receives a run of contiguous bytes.
    for (int64_t tile_row = 0; tile_row < num_rows; tile_row += kTransposeRows) {
      const int64_t tile_rows = std::min(kTransposeRows, num_rows - tile_row);
      for (int64_t column = 0; column < num_columns; ++column) {
        const uint8_t* src = images + tile_row * image_bytes + first_column + column;
        uint8_t* dst = block.data() + column * num_rows + tile_row;
        for (int64_t row = 0; row < tile_rows; ++row) dst[row] = src[row * image_bytes];
      }
    }
    for (int64_t column = 0; column < num_columns; ++column)
      chunks[static_cast<size_t>(first_pixel_chunk + first_column + column)] =
          encode_pixel_chunk(config, block.data() + column * num_rows, num_rows);
  });
  return chunks;
}

fmt::SchemaElement leaf(const std::string& name, fmt::Type::type type) {
  fmt::SchemaElement element;
  element.__set_name(name);
  element.__set_type(type);
  element.__set_repetition_type(fmt::FieldRepetitionType::REQUIRED);
  return element;
}

// Leaves in column-chunk order: [label], then pixel1..pixelK or image.
std::vector<fmt::SchemaElement> make_schema(const ImageStore& store, ParquetLayout layout) {
  std::vector<fmt::SchemaElement> leaves;
  if (store.labeled()) leaves.push_back(leaf("label", fmt::Type::INT64));
  if (layout == ParquetLayout::kImage) {
    if (store.image_bytes() > INT32_MAX) throw OptionsError("parquet writer: image of " + to_string(store.shape()) + " is too large for one value");
    fmt::SchemaElement image = leaf("image", fmt::Type::FIXED_LEN_BYTE_ARRAY);
    image.__set_type_length(static_cast<int32_t>(store.image_bytes()));
    leaves.push_back(std::move(image));
  } else {
    fmt::IntType uint8_type;
    uint8_type.__set_bitWidth(8);
    uint8_type.__set_isSigned(false);
    fmt::LogicalType logical_type;
    logical_type.__set_INTEGER(uint8_type);
    for (int64_t pixel = 1; pixel <= store.image_bytes(); ++pixel) {
      fmt::SchemaElement element = leaf("pixel" + std::to_string(pixel), fmt::Type::INT32);
      element.__set_converted_type(fmt::ConvertedType::UINT_8);
      element.__set_logicalType(logical_type);
      leaves.push_back(std::move(element));
    }
  }
  return leaves;
}

}  // namespace

std::string to_string(ParquetLayout layout) { return layout == ParquetLayout::kImage ? "image" : "columns"; }

ParquetLayout parse_parquet_layout(std::string_view name) {
  if (name == "columns") return ParquetLayout::kColumns;
  if (name == "image") return ParquetLayout::kImage;
  throw OptionsError("unknown Parquet layout '" + std::string(name) + "' (use columns or image)");
}

parquet::Codec parse_parquet_codec(std::string_view given) {
  // Any case, and the names the reports print (LZ4_RAW, UNCOMPRESSED).
  std::string name(given);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name == "lz4_raw") name = "lz4";
  if (name == "zstd") return Codec::kZstd;
  if (name == "snappy") return Codec::kSnappy;
  if (name == "gzip") return Codec::kGzip;
  if (name == "lz4") return Codec::kLz4Raw;
  if (name == "brotli") return Codec::kBrotli;
  if (name == "none" || name == "uncompressed") return Codec::kUncompressed;
  throw OptionsError("unknown Parquet codec '" + std::string(given) + "' (use zstd, snappy, gzip, lz4, brotli or none)");
}

void write_parquet(const ImageStore& store, const std::filesystem::path& path, const ParquetWriteOptions& options) {
  write_parquet(store, 0, store.size(), path, options);
}

namespace {

// Writes a file of `num_rows` rows in row groups of config.rows_per_group: `leaves` are the schema's
// columns, `encode_group(first, count)` encodes rows [first, first + count) (counted from 0) as one
// chunk per leaf. Through a temporary file renamed into place.
void write_file(const std::filesystem::path& path, const WriteConfig& config, std::vector<fmt::SchemaElement> schema,
                std::vector<fmt::KeyValue> key_values, int64_t num_rows,
                const std::function<std::vector<EncodedChunk>(int64_t, int64_t)>& encode_group) {
  const int64_t num_leaves = static_cast<int64_t>(schema.size());
  const int64_t num_groups = (num_rows + config.rows_per_group - 1) / config.rows_per_group;
  if (num_leaves > 0 && num_groups > kMaxColumnChunks / num_leaves) {
    const int64_t fewest_rows = (num_rows * num_leaves + kMaxColumnChunks - 1) / kMaxColumnChunks;
    throw OptionsError("parquet writer: " + std::to_string(num_rows) + " rows in row groups of " +
                       std::to_string(config.rows_per_group) + " make " + std::to_string(num_groups) + " row groups of " +
                       std::to_string(num_leaves) + " columns, more than the " + std::to_string(kMaxColumnChunks) +
                       " column chunks a file may have (each costs memory to write and to read): use row groups of at "
                       "least " + std::to_string(fewest_rows) + " rows" +
                       (num_leaves > 2 ? ", or the image layout (one column for all pixels)" : ""));
  }
  fmt::SchemaElement root;
  root.__set_name("schema");
  root.__set_num_children(static_cast<int32_t>(num_leaves));
  schema.insert(schema.begin(), std::move(root));

  fmt::FileMetaData metadata;
  metadata.__set_version(2);
  metadata.__set_num_rows(num_rows);
  metadata.__set_created_by(std::string("feeder version ") + kVersion);
  if (!key_values.empty()) metadata.__set_key_value_metadata(std::move(key_values));
  // TypeDefinedOrder tells readers that min_value/max_value follow the type's order (unsigned for
  // UINT_8 and FIXED_LEN_BYTE_ARRAY), so they may use the statistics.
  fmt::ColumnOrder column_order;
  column_order.__set_TYPE_ORDER(fmt::TypeDefinedOrder());
  metadata.__set_column_orders(std::vector<fmt::ColumnOrder>(static_cast<size_t>(num_leaves), column_order));

  const std::unique_ptr<WritableFile> file = file_system_for(path).create(path);
  file->write(kMagic);
  std::vector<fmt::RowGroup> row_groups;
  for (int64_t group_first_row = 0; group_first_row < num_rows; group_first_row += config.rows_per_group) {
    throw_if_interrupted();  // the temp file is removed as the exception passes
    const int64_t group_rows = std::min(config.rows_per_group, num_rows - group_first_row);
    const std::vector<EncodedChunk> chunks = encode_group(group_first_row, group_rows);
    fmt::RowGroup row_group;
    row_group.__set_num_rows(group_rows);
    row_group.__set_file_offset(static_cast<int64_t>(file->bytes_written()));
    if (row_groups.size() <= INT16_MAX) row_group.__set_ordinal(static_cast<int16_t>(row_groups.size()));
    int64_t total_uncompressed_bytes = 0;
    int64_t total_compressed_bytes = 0;
    for (size_t column_idx = 0; column_idx < chunks.size(); ++column_idx) {
      const EncodedChunk& chunk = chunks[column_idx];
      const int64_t chunk_offset = static_cast<int64_t>(file->bytes_written());
      file->write(chunk.bytes.data(), chunk.bytes.size());
      fmt::ColumnMetaData column_metadata;
      column_metadata.__set_type(schema[column_idx + 1].type);
      column_metadata.__set_encodings(chunk.encodings);
      column_metadata.__set_path_in_schema({schema[column_idx + 1].name});
      column_metadata.__set_codec(to_thrift(chunk.codec));
      column_metadata.__set_num_values(chunk.num_values);
      column_metadata.__set_total_uncompressed_size(chunk.uncompressed_size_bytes);
      column_metadata.__set_total_compressed_size(static_cast<int64_t>(chunk.bytes.size()));
      column_metadata.__set_data_page_offset(chunk_offset + chunk.data_page_offset_in_chunk);
      if (chunk.has_dictionary) column_metadata.__set_dictionary_page_offset(chunk_offset);
      if (chunk.num_values > 0 && chunk.statistics.__isset.min_value) column_metadata.__set_statistics(chunk.statistics);
      fmt::ColumnChunk column_chunk;
      column_chunk.__set_file_offset(chunk_offset);
      column_chunk.__set_meta_data(std::move(column_metadata));
      row_group.columns.push_back(std::move(column_chunk));
      total_uncompressed_bytes += chunk.uncompressed_size_bytes;
      total_compressed_bytes += static_cast<int64_t>(chunk.bytes.size());
    }
    row_group.__set_total_byte_size(total_uncompressed_bytes);
    row_group.__set_total_compressed_size(total_compressed_bytes);
    row_groups.push_back(std::move(row_group));
  }
  metadata.__set_schema(std::move(schema));
  metadata.__set_row_groups(std::move(row_groups));

  const std::string footer = parquet::detail::serialize_file_metadata(metadata);
  file->write(footer);
  const uint32_t footer_bytes = static_cast<uint32_t>(footer.size());
  uint8_t length[4];
  for (int byte_idx = 0; byte_idx < 4; ++byte_idx) length[byte_idx] = static_cast<uint8_t>(footer_bytes >> (8 * byte_idx));
  file->write(length, sizeof(length));
  file->write(kMagic);
  throw_if_interrupted();
  file->commit();
}

}  // namespace

void write_parquet(const ImageStore& store, int64_t first_row, int64_t num_rows, const std::filesystem::path& path,
                   const ParquetWriteOptions& options) {
  if (first_row < 0 || num_rows < 0 || first_row > store.size() - num_rows) {
    throw OptionsError("parquet writer: rows " + std::to_string(first_row) + ".." + std::to_string(first_row + num_rows) +
                       " are not inside the store of " + std::to_string(store.size()) + " images");
  }
  const WriteConfig config = resolve(options);
  fmt::KeyValue shape_entry;
  shape_entry.__set_key(std::string(kImageShapeKey));
  shape_entry.__set_value(to_string(store.shape()));
  write_file(path, config, make_schema(store, config.layout), {shape_entry}, num_rows, [&](int64_t first, int64_t count) {
    return encode_row_group(config, store, first_row + first, count);
  });
}

void write_encoded_parquet(const SampleSource& source, std::span<const int64_t> rows, const std::filesystem::path& path,
                           const ParquetWriteOptions& options) {
  const RandomAccessSource* held = random_access(source);
  if (held == nullptr || !source.encoded())
    throw OptionsError("parquet writer: " + source.name() + " is not a set of encoded images held in memory");
  const WriteConfig config = resolve(options);
  for (const int64_t row : rows) {
    if (row < 0 || row >= source.size())
      throw OptionsError("parquet writer: sample " + std::to_string(row) + " is not in " + source.name());
  }
  std::vector<fmt::SchemaElement> schema;
  if (source.labeled()) schema.push_back(leaf("label", fmt::Type::INT64));
  schema.push_back(leaf("image", fmt::Type::BYTE_ARRAY));
  std::vector<fmt::KeyValue> key_values;
  if (source.labeled() && !options.class_names.empty()) {
    // As the datasets library writes its features, the image a plain binary column.
    nlohmann::ordered_json features;
    features["label"] = {{"names", options.class_names}, {"_type", "ClassLabel"}};
    features["image"] = {{"dtype", "binary"}, {"_type", "Value"}};
    fmt::KeyValue entry;
    entry.__set_key("huggingface");
    entry.__set_value(nlohmann::ordered_json{{"info", {{"features", features}}}}.dump());
    key_values.push_back(std::move(entry));
  }
  write_file(path, config, std::move(schema), std::move(key_values), static_cast<int64_t>(rows.size()), [&](int64_t first, int64_t count) {
    std::vector<SampleView> samples;
    std::vector<int64_t> labels;
    for (int64_t i = first; i < first + count; ++i) {
      samples.push_back(held->sample(rows[static_cast<size_t>(i)]));
      labels.push_back(samples.back().label);
    }
    std::vector<EncodedChunk> chunks;
    if (source.labeled()) chunks.push_back(encode_label_chunk(config, labels));
    chunks.push_back(encode_encoded_chunk(config, samples));
    return chunks;
  });
}

}  // namespace feeder::parquet
