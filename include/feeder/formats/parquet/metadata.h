#pragma once

// A plain C++ view of a Parquet footer: schema leaves, row groups and column chunks, with every
// offset and size already checked against the file. The reader, `feeder inspect` and tests use it;
// the Thrift structs stay internal (src/formats/parquet/detail/thrift.h).
//
// Thread safety and ownership: plain values that own their strings and vectors (nothing points
// into the file), immutable once parsed: share them between threads freely.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace feeder::parquet {

// Enum values are the Parquet wire values, so a raw value read from a file casts directly; values
// a file may carry that feeder does not know stay representable and print as "UNKNOWN(n)".
enum class PhysicalType : int32_t {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kInt96 = 3,
  kFloat = 4,
  kDouble = 5,
  kByteArray = 6,
  kFixedLenByteArray = 7,
};

enum class Repetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };

enum class Codec : int32_t {
  kUncompressed = 0,
  kSnappy = 1,
  kGzip = 2,
  kLzo = 3,
  kBrotli = 4,
  kLz4 = 5,  // Hadoop framing, or a raw block from older writers
  kZstd = 6,
  kLz4Raw = 7,
};

enum class Encoding : int32_t {
  kPlain = 0,
  kPlainDictionary = 2,
  kRle = 3,
  kBitPacked = 4,
  kDeltaBinaryPacked = 5,
  kDeltaLengthByteArray = 6,
  kDeltaByteArray = 7,
  kRleDictionary = 8,
  kByteStreamSplit = 9,
};

enum class PageType : int32_t { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2, kDataPageV2 = 3 };

std::string to_string(PhysicalType type);
std::string to_string(Repetition repetition);
std::string to_string(Codec codec);
std::string to_string(Encoding encoding);
std::string to_string(PageType type);

// One leaf (primitive) column of the schema.
struct ColumnSchema {
  std::string name;               // leaf name; nested leaves use the dotted path
  std::vector<std::string> path;  // path from the root, one entry per level
  PhysicalType physical_type = PhysicalType::kInt32;
  int32_t type_length_bytes = 0;  // FIXED_LEN_BYTE_ARRAY only
  Repetition repetition = Repetition::kRequired;
  std::optional<int32_t> converted_type;  // raw ConvertedType, when present
  std::string annotation;  // readable logical/converted type: "INT(8,false)", "UINT_8", "STRING", ""
  // Integer annotation (INT(bits,signed) or UINT_n / INT_n); 0 when the column has none.
  int32_t int_bit_width = 0;
  bool int_signed = true;
  int16_t max_definition_level = 0;
  int16_t max_repetition_level = 0;
};

// A schema node as written in the file (groups included), for display.
struct SchemaNode {
  std::string name;
  int32_t depth = 0;  // 0 = root
  bool is_group = false;
  int32_t num_children = 0;
  std::optional<PhysicalType> physical_type;
  Repetition repetition = Repetition::kRequired;
  std::string annotation;
};

struct KeyValue {
  std::string key;
  std::optional<std::string> value;  // a key may come without a value
};

struct ColumnChunkInfo {
  std::vector<std::string> path;
  Codec codec = Codec::kUncompressed;
  std::vector<Encoding> encodings;  // as listed in ColumnMetaData (may be empty or incomplete)
  int64_t num_values = 0;
  int64_t total_compressed_size_bytes = 0;
  int64_t total_uncompressed_size_bytes = 0;
  int64_t data_page_offset = 0;
  std::optional<int64_t> dictionary_page_offset;  // absent when the file says 0 or nothing
  std::optional<int64_t> null_count;              // from the chunk statistics
  // The chunk statistics' minimum and maximum as stored (the PLAIN bytes of one value):
  // min_value/max_value, else the deprecated min/max; absent when the writer stored none.
  std::optional<std::string> min_bytes, max_bytes;
  // True when the chunk's metadata or pages are encrypted; such chunks are never decoded.
  bool encrypted = false;

  // The chunk occupies [start_offset(), start_offset() + total_compressed_size_bytes) of the file;
  // parse_file_metadata has checked that this range lies inside the data region.
  int64_t start_offset() const { return dictionary_page_offset.value_or(data_page_offset); }
};

struct RowGroupInfo {
  int64_t num_rows = 0;
  int64_t total_byte_size = 0;
  std::vector<ColumnChunkInfo> columns;  // one per schema leaf, in schema order
};

struct FileMetadata {
  int32_t version = 0;
  int64_t num_rows = 0;
  std::string created_by;
  std::vector<KeyValue> key_values;
  std::vector<SchemaNode> schema_nodes;  // every element, root first, depth-first
  std::vector<ColumnSchema> columns;     // leaves in file order
  std::vector<RowGroupInfo> row_groups;
  // Set when the schema has groups or repeated fields; names the first offending column.
  std::optional<std::string> nested_column;
  bool encrypted_footer_plaintext = false;  // FileMetaData.encryption_algorithm present

  // Index of the leaf named `name`, or -1.
  int64_t column_index(std::string_view name) const;
};

// Parses the footer's FileMetaData (the bytes between the data and the 4-byte length + "PAR1").
// `data_end_bytes` is where the footer starts: every column chunk must lie in [4, data_end_bytes).
// `name` prefixes every error message. Throws DataError on anything malformed.
FileMetadata parse_file_metadata(std::span<const uint8_t> footer, int64_t data_end_bytes, const std::string& name);

}  // namespace feeder::parquet
