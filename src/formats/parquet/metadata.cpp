#include "feeder/formats/parquet/metadata.h"

#include <vector>

#include "feeder/error.h"
#include "formats/parquet/detail/thrift.h"

namespace feeder::parquet {

namespace {

std::string unknown(int32_t value) { return "UNKNOWN(" + std::to_string(value) + ")"; }

// Deeper schemas than this are not real data; the bound keeps the recursive walk safe.
constexpr int32_t kMaxSchemaDepth = 64;

const char* converted_name(int32_t value) {
  static constexpr const char* kNames[] = {
      "UTF8",        "MAP",         "MAP_KEY_VALUE",    "LIST",   "ENUM",   "DECIMAL", "DATE",  "TIME_MILLIS",
      "TIME_MICROS", "TIMESTAMP_MILLIS", "TIMESTAMP_MICROS", "UINT_8", "UINT_16", "UINT_32", "UINT_64", "INT_8",
      "INT_16",      "INT_32",      "INT_64",           "JSON",   "BSON",   "INTERVAL"};
  if (value < 0 || value >= static_cast<int32_t>(std::size(kNames))) return nullptr;
  return kNames[value];
}

std::string time_unit(const format::TimeUnit& unit) {
  if (unit.__isset.MILLIS) return "MILLIS";
  if (unit.__isset.MICROS) return "MICROS";
  if (unit.__isset.NANOS) return "NANOS";
  return "?";
}

// Fills annotation and the integer annotation of `column` from a schema element.
void describe_annotation(const format::SchemaElement& element, std::string& annotation, int32_t& int_bit_width,
                         bool& int_signed) {
  if (element.__isset.converted_type) {
    const auto converted = detail::raw_enum(element.converted_type);
    if (converted >= format::ConvertedType::UINT_8 && converted <= format::ConvertedType::INT_64) {
      const int32_t rank = (converted - format::ConvertedType::UINT_8) % 4;
      int_bit_width = 8 << rank;
      int_signed = converted >= format::ConvertedType::INT_8;
    }
    const char* name = converted_name(converted);
    annotation = name ? name : unknown(converted);
    if (converted == format::ConvertedType::DECIMAL) {
      annotation += "(" + std::to_string(element.precision) + "," + std::to_string(element.scale) + ")";
    }
  }
  if (!element.__isset.logicalType) return;
  const format::LogicalType& logical = element.logicalType;
  std::string text;
  if (logical.__isset.INTEGER) {
    const int32_t bits = logical.INTEGER.bitWidth;
    if (bits == 8 || bits == 16 || bits == 32 || bits == 64) {
      int_bit_width = bits;
      int_signed = logical.INTEGER.isSigned;
    }
    text = "INT(" + std::to_string(bits) + "," + (logical.INTEGER.isSigned ? "true" : "false") + ")";
  } else if (logical.__isset.STRING) {
    text = "STRING";
  } else if (logical.__isset.DECIMAL) {
    text = "DECIMAL(" + std::to_string(logical.DECIMAL.precision) + "," + std::to_string(logical.DECIMAL.scale) + ")";
  } else if (logical.__isset.DATE) {
    text = "DATE";
  } else if (logical.__isset.TIME) {
    text = "TIME(" + time_unit(logical.TIME.unit) + ")";
  } else if (logical.__isset.TIMESTAMP) {
    text = "TIMESTAMP(" + time_unit(logical.TIMESTAMP.unit) + ")";
  } else if (logical.__isset.FLOAT16) {
    text = "FLOAT16";
  } else if (logical.__isset.UUID) {
    text = "UUID";
  } else if (logical.__isset.JSON) {
    text = "JSON";
  } else if (logical.__isset.BSON) {
    text = "BSON";
  } else if (logical.__isset.ENUM) {
    text = "ENUM";
  } else if (logical.__isset.LIST) {
    text = "LIST";
  } else if (logical.__isset.MAP) {
    text = "MAP";
  } else if (logical.__isset.UNKNOWN) {
    text = "NULL";
  } else {
    // A union member this reader does not know: the column reads as its physical type.
    text = "UNKNOWN_LOGICAL_TYPE";
  }
  annotation = text;
}

bool valid_physical_type(int32_t value) { return value >= 0 && value <= 7; }

// Turns the footer's schema, a depth-first list where each group says how many children follow,
// into out.schema_nodes, out.columns (the leaves, with their levels) and out.nested_column. One
// walker per footer, used once.
class SchemaWalker {
 public:
  SchemaWalker(const std::vector<format::SchemaElement>& elements, const std::string& name, FileMetadata& out)
      : elements_(elements), name_(name), out_(out) {}

  void walk_all() {
    if (elements_.empty()) throw DataError(name_ + ": footer: empty schema");
    walk(0, 0, 0);
    if (next_idx_ != elements_.size()) {
      throw DataError(name_ + ": footer: schema has " + std::to_string(elements_.size() - next_idx_) +
                      " elements outside the root group");
    }
  }

 private:
  // Reads the next element at `depth` and, for a group, its children. def_level and rep_level are
  // the levels of the element's parent.
  void walk(int32_t depth, int16_t def_level, int16_t rep_level) {
    if (next_idx_ >= elements_.size()) {
      throw DataError(name_ + ": footer: schema declares more children than it has elements (" +
                      std::to_string(elements_.size()) + ")");
    }
    if (depth > kMaxSchemaDepth) throw DataError(name_ + ": footer: schema nested deeper than 64 levels");
    const format::SchemaElement& element = elements_[next_idx_++];
    SchemaNode node = read_node(element, depth);
    if (depth > 0) {
      if (node.repetition == Repetition::kOptional) ++def_level;
      if (node.repetition == Repetition::kRepeated) ++def_level, ++rep_level;
      path_.push_back(element.name);
    }
    int32_t bit_width = 0;
    bool is_signed = true;
    describe_annotation(element, node.annotation, bit_width, is_signed);
    if (node.is_group || depth == 0) {
      add_group(element, node, def_level, rep_level);
    } else {
      add_column(element, node, def_level, rep_level, bit_width, is_signed);
    }
    if (depth > 0) path_.pop_back();
  }

  SchemaNode read_node(const format::SchemaElement& element, int32_t depth) const {
    SchemaNode node;
    node.name = element.name;
    node.depth = depth;
    node.is_group = !element.__isset.type || (element.__isset.num_children && element.num_children > 0);
    node.num_children = element.__isset.num_children ? element.num_children : 0;
    if (element.__isset.repetition_type) {
      const auto rep = detail::raw_enum(element.repetition_type);
      if (rep < 0 || rep > 2) {
        throw DataError(name_ + ": footer: column '" + element.name + "': invalid repetition type " + std::to_string(rep));
      }
      node.repetition = static_cast<Repetition>(rep);
    }
    return node;
  }

  void add_group(const format::SchemaElement& element, const SchemaNode& node, int16_t def_level, int16_t rep_level) {
    const size_t elements_left = elements_.size() - next_idx_;
    if (node.num_children < 0 || static_cast<size_t>(node.num_children) > elements_left) {
      throw DataError(name_ + ": footer: group '" + element.name + "' declares " + std::to_string(node.num_children) +
                      " children but the schema has " + std::to_string(elements_left) + " elements left");
    }
    out_.schema_nodes.push_back(node);
    if (node.depth > 0 && !out_.nested_column) out_.nested_column = element.name;
    for (int32_t i = 0; i < node.num_children; ++i) walk(node.depth + 1, def_level, rep_level);
  }

  void add_column(const format::SchemaElement& element, SchemaNode node, int16_t def_level, int16_t rep_level,
                  int32_t bit_width, bool is_signed) {
    if (!element.__isset.type || !valid_physical_type(detail::raw_enum(element.type))) {
      throw DataError(name_ + ": footer: column '" + element.name + "': invalid/corrupt physical type " +
                      std::to_string(detail::raw_enum(element.type)));
    }
    node.physical_type = static_cast<PhysicalType>(detail::raw_enum(element.type));
    out_.schema_nodes.push_back(node);
    ColumnSchema column;
    column.path = path_;
    for (size_t i = 0; i < path_.size(); ++i) column.name += (i ? "." : "") + path_[i];
    column.physical_type = *node.physical_type;
    column.repetition = node.repetition;
    column.annotation = node.annotation;
    column.int_bit_width = bit_width;
    column.int_signed = is_signed;
    if (element.__isset.converted_type) column.converted_type = detail::raw_enum(element.converted_type);
    column.max_definition_level = def_level;
    column.max_repetition_level = rep_level;
    if (column.physical_type == PhysicalType::kFixedLenByteArray) {
      if (!element.__isset.type_length || element.type_length <= 0) {
        throw DataError(name_ + ": footer: column '" + column.name + "': FIXED_LEN_BYTE_ARRAY with invalid length " +
                        std::to_string(element.type_length));
      }
      column.type_length_bytes = element.type_length;
    }
    if ((node.depth > 1 || column.repetition == Repetition::kRepeated) && !out_.nested_column) {
      out_.nested_column = column.name;
    }
    out_.columns.push_back(std::move(column));
  }

  const std::vector<format::SchemaElement>& elements_;
  const std::string& name_;
  FileMetadata& out_;
  size_t next_idx_ = 0;            // next element to read
  std::vector<std::string> path_;  // names from below the root down to the current element
};

// Checks a chunk's metadata against its schema column and the file's data region
// [4, data_end_bytes); `where` names the chunk in messages.
ColumnChunkInfo parse_column_chunk(const format::ColumnChunk& raw_chunk, const ColumnSchema& column,
                                   int64_t data_end_bytes, const std::string& where) {
  ColumnChunkInfo chunk;
  chunk.path = column.path;
  chunk.encrypted = raw_chunk.__isset.crypto_metadata || raw_chunk.__isset.encrypted_column_metadata;
  if (!raw_chunk.__isset.meta_data) {
    if (!chunk.encrypted) throw DataError(where + ": column chunk has no metadata");
    return chunk;
  }
  if (raw_chunk.__isset.file_path && !raw_chunk.file_path.empty()) {
    throw DataError(where + ": column chunk stored in another file ('" + raw_chunk.file_path + "') is not supported");
  }
  const format::ColumnMetaData& meta = raw_chunk.meta_data;
  const int32_t type = detail::raw_enum(meta.type);
  if (type != static_cast<int32_t>(column.physical_type)) {
    throw DataError(where + ": chunk physical type " +
                    (valid_physical_type(type) ? to_string(static_cast<PhysicalType>(type))
                                               : "invalid/corrupt physical type " + std::to_string(type)) +
                    " does not match the schema type " + to_string(column.physical_type));
  }
  if (meta.path_in_schema != column.path) {
    std::string found;
    for (size_t i = 0; i < meta.path_in_schema.size(); ++i) found += (i ? "." : "") + meta.path_in_schema[i];
    throw DataError(where + ": chunk path '" + found + "' does not match the schema");
  }
  chunk.codec = static_cast<Codec>(detail::raw_enum(meta.codec));
  for (const auto& encoding : meta.encodings) chunk.encodings.push_back(static_cast<Encoding>(detail::raw_enum(encoding)));
  chunk.num_values = meta.num_values;
  chunk.total_compressed_size_bytes = meta.total_compressed_size;
  chunk.total_uncompressed_size_bytes = meta.total_uncompressed_size;
  chunk.data_page_offset = meta.data_page_offset;
  // Some writers store 0 for "no dictionary page"; offset 0 is the magic, never a page.
  if (meta.__isset.dictionary_page_offset && meta.dictionary_page_offset > 0) {
    chunk.dictionary_page_offset = meta.dictionary_page_offset;
  }
  if (meta.__isset.statistics) {
    const format::Statistics& statistics = meta.statistics;
    if (statistics.__isset.null_count) chunk.null_count = statistics.null_count;
    detail::statistics_min_max(statistics, chunk.min_bytes, chunk.max_bytes);
  }
  if (chunk.num_values < 0) throw DataError(where + ": negative num_values " + std::to_string(chunk.num_values));
  if (chunk.total_compressed_size_bytes < 0 || chunk.total_uncompressed_size_bytes < 0) {
    throw DataError(where + ": negative chunk size");
  }
  const int64_t start = chunk.start_offset();
  if (start < 4 || start > data_end_bytes || chunk.total_compressed_size_bytes > data_end_bytes - start) {
    throw DataError(where + ": chunk at offset " + std::to_string(start) + " with " +
                    std::to_string(chunk.total_compressed_size_bytes) +
                    " bytes lies outside the data region of the file (4.." + std::to_string(data_end_bytes) + ")");
  }
  return chunk;
}

RowGroupInfo parse_row_group(const format::RowGroup& raw_rg, const std::vector<ColumnSchema>& columns,
                             int64_t data_end_bytes, const std::string& where) {
  if (raw_rg.num_rows < 0) throw DataError(where + ": negative num_rows " + std::to_string(raw_rg.num_rows));
  if (raw_rg.columns.size() != columns.size()) {
    throw DataError(where + ": has " + std::to_string(raw_rg.columns.size()) + " column chunks but the schema has " +
                    std::to_string(columns.size()) + " columns");
  }
  RowGroupInfo rg;
  rg.num_rows = raw_rg.num_rows;
  rg.total_byte_size = raw_rg.total_byte_size;
  for (size_t col_idx = 0; col_idx < raw_rg.columns.size(); ++col_idx) {
    const ColumnSchema& column = columns[col_idx];
    rg.columns.push_back(
        parse_column_chunk(raw_rg.columns[col_idx], column, data_end_bytes, where + ": column '" + column.name + "'"));
  }
  return rg;
}

}  // namespace

std::string to_string(PhysicalType type) {
  switch (type) {
    case PhysicalType::kBoolean: return "BOOLEAN";
    case PhysicalType::kInt32: return "INT32";
    case PhysicalType::kInt64: return "INT64";
    case PhysicalType::kInt96: return "INT96";
    case PhysicalType::kFloat: return "FLOAT";
    case PhysicalType::kDouble: return "DOUBLE";
    case PhysicalType::kByteArray: return "BYTE_ARRAY";
    case PhysicalType::kFixedLenByteArray: return "FIXED_LEN_BYTE_ARRAY";
  }
  return unknown(static_cast<int32_t>(type));
}

std::string to_string(Repetition repetition) {
  switch (repetition) {
    case Repetition::kRequired: return "REQUIRED";
    case Repetition::kOptional: return "OPTIONAL";
    case Repetition::kRepeated: return "REPEATED";
  }
  return unknown(static_cast<int32_t>(repetition));
}

std::string to_string(Codec codec) {
  switch (codec) {
    case Codec::kUncompressed: return "UNCOMPRESSED";
    case Codec::kSnappy: return "SNAPPY";
    case Codec::kGzip: return "GZIP";
    case Codec::kLzo: return "LZO";
    case Codec::kBrotli: return "BROTLI";
    case Codec::kLz4: return "LZ4";
    case Codec::kZstd: return "ZSTD";
    case Codec::kLz4Raw: return "LZ4_RAW";
  }
  return unknown(static_cast<int32_t>(codec));
}

std::string to_string(Encoding encoding) {
  switch (encoding) {
    case Encoding::kPlain: return "PLAIN";
    case Encoding::kPlainDictionary: return "PLAIN_DICTIONARY";
    case Encoding::kRle: return "RLE";
    case Encoding::kBitPacked: return "BIT_PACKED";
    case Encoding::kDeltaBinaryPacked: return "DELTA_BINARY_PACKED";
    case Encoding::kDeltaLengthByteArray: return "DELTA_LENGTH_BYTE_ARRAY";
    case Encoding::kDeltaByteArray: return "DELTA_BYTE_ARRAY";
    case Encoding::kRleDictionary: return "RLE_DICTIONARY";
    case Encoding::kByteStreamSplit: return "BYTE_STREAM_SPLIT";
  }
  return unknown(static_cast<int32_t>(encoding));
}

std::string to_string(PageType type) {
  switch (type) {
    case PageType::kDataPage: return "DATA_PAGE";
    case PageType::kIndexPage: return "INDEX_PAGE";
    case PageType::kDictionaryPage: return "DICTIONARY_PAGE";
    case PageType::kDataPageV2: return "DATA_PAGE_V2";
  }
  return unknown(static_cast<int32_t>(type));
}

int64_t FileMetadata::column_index(std::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == name) return static_cast<int64_t>(i);
  }
  return -1;
}

FileMetadata parse_file_metadata(std::span<const uint8_t> footer, int64_t data_end_bytes, const std::string& name) {
  format::FileMetaData raw;
  detail::read_file_metadata(footer.data(), footer.size(), raw, name);

  FileMetadata out;
  out.version = raw.version;
  out.num_rows = raw.num_rows;
  if (raw.num_rows < 0) throw DataError(name + ": footer: negative num_rows " + std::to_string(raw.num_rows));
  if (raw.__isset.created_by) out.created_by = raw.created_by;
  out.encrypted_footer_plaintext = raw.__isset.encryption_algorithm;
  for (const auto& kv : raw.key_value_metadata) {
    out.key_values.push_back({kv.key, kv.__isset.value ? std::optional<std::string>(kv.value) : std::nullopt});
  }
  SchemaWalker(raw.schema, name, out).walk_all();
  for (size_t rg_idx = 0; rg_idx < raw.row_groups.size(); ++rg_idx) {
    out.row_groups.push_back(parse_row_group(raw.row_groups[rg_idx], out.columns, data_end_bytes,
                                             name + ": row group " + std::to_string(rg_idx)));
  }
  return out;
}

}  // namespace feeder::parquet
