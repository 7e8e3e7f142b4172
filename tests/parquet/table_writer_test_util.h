#pragma once

// A small Parquet writer for tests: flat tables of INT32, INT64, FLOAT or DOUBLE columns, with nulls
// and integer annotations, split into row groups, one uncompressed v1 data page per column chunk,
// PLAIN or dictionary-encoded (a PLAIN dictionary page first, then the indices RLE/bit-packed).
// feeder's own writer only writes what feeder produces (INT32 pixels, INT64 labels); this one writes
// what other tools may, so the readers can be tested on every column type and every bad value.
// Assembled through the same Thrift code the reader uses (src/formats/parquet/detail/thrift.h).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "feeder/formats/parquet/metadata.h"
#include "formats/parquet/encoder/rle_bit_packed_encoder.h"
#include "formats/parquet/detail/thrift.h"

namespace feeder::parquet::testing {

// One cell: null, an integer (INT32 / INT64 columns) or a real (FLOAT / DOUBLE columns).
using Cell = std::variant<std::monostate, int64_t, double>;

struct TableColumn {
  std::string name;
  PhysicalType type = PhysicalType::kInt32;
  std::vector<Cell> cells;  // one per row
  // OPTIONAL (definition levels written) even without nulls; any null makes the column OPTIONAL.
  bool optional = false;
  // An integer annotation INT(bits, signed) when bits > 0, e.g. {8, false} for DuckDB's UTINYINT.
  int32_t int_bits = 0;
  bool int_signed = true;
  // RLE_DICTIONARY: each chunk's distinct values in a dictionary page (in order of first use).
  bool dictionary = false;
};

// A whole column of one value per row.
inline TableColumn int_column(std::string name, PhysicalType type, std::vector<int64_t> values) {
  TableColumn column{std::move(name), type, {}};
  for (const int64_t value : values) column.cells.emplace_back(value);
  return column;
}

inline TableColumn real_column(std::string name, PhysicalType type, std::vector<double> values) {
  TableColumn column{std::move(name), type, {}};
  for (const double value : values) column.cells.emplace_back(value);
  return column;
}

namespace table_detail {

inline void append_value(std::string& out, PhysicalType type, const Cell& cell) {
  auto put = [&out](const auto value) { out.append(reinterpret_cast<const char*>(&value), sizeof(value)); };
  switch (type) {
    case PhysicalType::kInt32: put(static_cast<int32_t>(std::get<int64_t>(cell))); break;
    case PhysicalType::kInt64: put(std::get<int64_t>(cell)); break;
    case PhysicalType::kFloat: put(static_cast<float>(std::get<double>(cell))); break;
    case PhysicalType::kDouble: put(std::get<double>(cell)); break;
    default: throw std::invalid_argument("table writer: unsupported column type");
  }
}

// Definition levels (bit width 1) as one bit-packed run of the RLE/bit-packing hybrid.
inline std::string definition_levels(const std::vector<bool>& present) {
  const size_t groups = (present.size() + 7) / 8;
  std::string levels;
  for (uint64_t header = (groups << 1) | 1;; header >>= 7) {  // ULEB128
    if (header < 0x80) {
      levels += static_cast<char>(header);
      break;
    }
    levels += static_cast<char>((header & 0x7f) | 0x80);
  }
  std::string bits(groups, '\0');
  for (size_t i = 0; i < present.size(); ++i) {
    if (present[i]) bits[i / 8] = static_cast<char>(bits[i / 8] | (1 << (i % 8)));
  }
  return levels + bits;
}

inline format::Type::type thrift_type(PhysicalType type) { return static_cast<format::Type::type>(type); }

}  // namespace table_detail

// The file's bytes: "PAR1", row groups of at most rows_per_group rows (every column chunk one PLAIN
// page), the footer. `key_values` go into the footer's key-value metadata.
inline std::vector<uint8_t> write_table(const std::vector<TableColumn>& columns, int64_t rows_per_group,
                                        const std::vector<std::pair<std::string, std::string>>& key_values = {}) {
  using namespace table_detail;
  const int64_t num_rows = columns.empty() ? 0 : static_cast<int64_t>(columns.front().cells.size());
  std::vector<bool> optional(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) {
    optional[c] = columns[c].optional;
    for (const Cell& cell : columns[c].cells) optional[c] = optional[c] || std::holds_alternative<std::monostate>(cell);
  }
  std::string bytes = "PAR1";
  format::FileMetaData meta;
  meta.version = 1;
  meta.num_rows = num_rows;
  meta.__set_created_by("feeder tests table writer");
  meta.schema.resize(columns.size() + 1);
  meta.schema[0].name = "schema";
  meta.schema[0].__set_num_children(static_cast<int32_t>(columns.size()));
  for (size_t c = 0; c < columns.size(); ++c) {
    format::SchemaElement& element = meta.schema[c + 1];
    element.name = columns[c].name;
    element.__set_type(thrift_type(columns[c].type));
    element.__set_repetition_type(optional[c] ? format::FieldRepetitionType::OPTIONAL : format::FieldRepetitionType::REQUIRED);
    if (columns[c].int_bits > 0) {
      format::IntType int_type;
      int_type.__set_bitWidth(static_cast<int8_t>(columns[c].int_bits));
      int_type.__set_isSigned(columns[c].int_signed);
      format::LogicalType logical;
      logical.__set_INTEGER(int_type);
      element.__set_logicalType(logical);
    }
  }
  for (const auto& [key, value] : key_values) {
    format::KeyValue kv;
    kv.__set_key(key);
    kv.__set_value(value);
    meta.key_value_metadata.push_back(kv);
  }
  meta.__isset.key_value_metadata = !key_values.empty();
  for (int64_t first = 0; first < num_rows; first += rows_per_group) {
    const int64_t rows = std::min(rows_per_group, num_rows - first);
    format::RowGroup group;
    group.num_rows = rows;
    for (size_t c = 0; c < columns.size(); ++c) {
      std::string values;
      std::vector<bool> present;
      std::vector<Cell> distinct;
      std::vector<uint32_t> indices;
      for (int64_t r = first; r < first + rows; ++r) {
        const Cell& cell = columns[c].cells[static_cast<size_t>(r)];
        present.push_back(!std::holds_alternative<std::monostate>(cell));
        if (!present.back()) continue;
        if (!columns[c].dictionary) {
          append_value(values, columns[c].type, cell);
          continue;
        }
        const auto found = std::find(distinct.begin(), distinct.end(), cell);
        indices.push_back(static_cast<uint32_t>(found - distinct.begin()));
        if (found == distinct.end()) distinct.push_back(cell);
      }
      const int64_t offset = static_cast<int64_t>(bytes.size());
      std::optional<int64_t> dictionary_offset;
      if (columns[c].dictionary) {
        std::string dictionary;
        for (const Cell& cell : distinct) append_value(dictionary, columns[c].type, cell);
        format::PageHeader header;
        header.type = format::PageType::DICTIONARY_PAGE;
        header.uncompressed_page_size = header.compressed_page_size = static_cast<int32_t>(dictionary.size());
        header.__isset.dictionary_page_header = true;
        header.dictionary_page_header.num_values = static_cast<int32_t>(distinct.size());
        header.dictionary_page_header.encoding = format::Encoding::PLAIN;
        dictionary_offset = offset;
        bytes += parquet::detail::serialize_page_header(header) + dictionary;
        int bit_width = 0;
        while ((size_t{1} << bit_width) < distinct.size()) ++bit_width;
        std::vector<uint8_t> encoded{static_cast<uint8_t>(bit_width)};
        encoder::put_rle_bit_packed(indices, bit_width, encoded);
        values.assign(encoded.begin(), encoded.end());
      }
      std::string body;
      if (optional[c]) {
        const std::string levels = definition_levels(present);
        const uint32_t levels_bytes = static_cast<uint32_t>(levels.size());
        body.append(reinterpret_cast<const char*>(&levels_bytes), 4);
        body += levels;
      }
      body += values;
      format::PageHeader header;
      header.type = format::PageType::DATA_PAGE;
      header.uncompressed_page_size = header.compressed_page_size = static_cast<int32_t>(body.size());
      header.__isset.data_page_header = true;
      header.data_page_header.num_values = static_cast<int32_t>(rows);
      header.data_page_header.encoding =
          columns[c].dictionary ? format::Encoding::RLE_DICTIONARY : format::Encoding::PLAIN;
      header.data_page_header.definition_level_encoding = format::Encoding::RLE;
      header.data_page_header.repetition_level_encoding = format::Encoding::RLE;
      const int64_t data_offset = static_cast<int64_t>(bytes.size());
      bytes += parquet::detail::serialize_page_header(header) + body;
      format::ColumnChunk chunk;
      chunk.file_offset = offset;
      chunk.__isset.meta_data = true;
      format::ColumnMetaData& cm = chunk.meta_data;
      cm.type = thrift_type(columns[c].type);
      cm.encodings = {format::Encoding::PLAIN, format::Encoding::RLE};
      if (columns[c].dictionary) cm.encodings.push_back(format::Encoding::RLE_DICTIONARY);
      cm.path_in_schema = {columns[c].name};
      cm.codec = format::CompressionCodec::UNCOMPRESSED;
      cm.num_values = rows;
      cm.total_compressed_size = cm.total_uncompressed_size = static_cast<int64_t>(bytes.size()) - offset;
      cm.data_page_offset = data_offset;
      if (dictionary_offset) cm.__set_dictionary_page_offset(*dictionary_offset);
      group.columns.push_back(chunk);
      group.total_byte_size += cm.total_uncompressed_size;
    }
    meta.row_groups.push_back(group);
  }
  const std::string footer = parquet::detail::serialize_file_metadata(meta);
  bytes += footer;
  const uint32_t footer_bytes = static_cast<uint32_t>(footer.size());
  bytes.append(reinterpret_cast<const char*>(&footer_bytes), 4);
  bytes += "PAR1";
  return {bytes.begin(), bytes.end()};
}

}  // namespace feeder::parquet::testing
