#include "formats/parquet/detail/value_columns.h"

#include <cstring>
#include <optional>
#include <type_traits>
#include <span>

#include "feeder/error.h"
#include "formats/parquet/detail/column_values.h"
#include "formats/parquet/detail/image_columns.h"

namespace feeder::parquet::detail {

namespace {

// T is the column's physical type, Out the field's element type. Integers widen to int64 (an
// unsigned annotation read as unsigned); floats and doubles are copied as they are.
template <class T, class Out>
void decode_column(const ChunkLocation& where, Out* out, PageBuffer& buffer) {
  const bool as_unsigned = where.column->int_bit_width > 0 && !where.column->int_signed;
  const char* null_what = where.column->max_repetition_level > 0
                              ? "null or empty list, or a null element (a field's column must not have nulls)"
                              : "null value (a field's column must not have nulls)";
  const int64_t per_row = where.values_per_row;
  for_each_page_of_values<T>(where, null_what, buffer, [&](const DataPage& page, std::span<const T> values) {
    Out* dst = out + page.first_row * per_row;
    for (int64_t i = 0; i < page.num_values; ++i) {
      const T value = values[static_cast<size_t>(i)];
      if constexpr (std::is_same_v<T, int32_t>) {
        dst[i] = as_unsigned ? static_cast<int64_t>(static_cast<uint32_t>(value)) : value;
      } else if constexpr (std::is_same_v<T, int64_t>) {
        if (as_unsigned && value < 0)
          throw_at_row(where, page.first_row + i / per_row,
                       "value " + std::to_string(static_cast<uint64_t>(value)) + " out of range for int64");
        dst[i] = value;
      } else {
        dst[i] = value;
      }
    }
  });
}

}  // namespace

int64_t find_field_column(const FileMetadata& meta, std::string_view field_name) {
  const int64_t idx = meta.column_index(field_name);
  if (idx >= 0) return idx;
  int64_t found = -1;
  for (int64_t i = 0; i < static_cast<int64_t>(meta.columns.size()); ++i) {
    const ColumnSchema& column = meta.columns[static_cast<size_t>(i)];
    if (column.path.empty() || column.path.front() != field_name) continue;
    if (found >= 0 || column.max_repetition_level == 0) return -1;  // a struct, not a list of numbers
    found = i;
  }
  return found;
}

Field value_field(const FileMetadata& meta, int64_t column_idx, const std::string& name) {
  const ColumnSchema& column = meta.columns[static_cast<size_t>(column_idx)];
  const auto refuse = [&] {
    const std::string type = column.annotation.empty() ? to_string(column.physical_type)
                                                       : to_string(column.physical_type) + " " + column.annotation;
    return DataError(name + ": column '" + column.name + "' is " + type +
                     ": a field's column must be FLOAT, DOUBLE, INT32 or INT64, one value or a list of them per row");
  };
  if (!is_number_column(column)) throw refuse();
  FieldType type = FieldType::kInt64;
  switch (column.physical_type) {
    case PhysicalType::kFloat: type = FieldType::kFloat32; break;
    case PhysicalType::kDouble: type = FieldType::kFloat64; break;
    case PhysicalType::kInt32:
    case PhysicalType::kInt64: type = FieldType::kInt64; break;
    default: throw refuse();
  }
  if (column.max_repetition_level == 0) return {column.name, type, {}};
  if (column.max_repetition_level > 1) {
    throw DataError(name + ": column '" + column.path.front() +
                    "' is a list of lists: a field's list holds numbers (an array, such as DuckDB's FLOAT[4])");
  }
  // Lists of different lengths (or a file without rows): a sequence, each row its own number.
  const int64_t per_row = list_values_per_row(meta, column_idx);
  if (per_row == 0) return {column.path.front(), type, {kAnyLength}};
  // A null or empty list, or a null element, may leave n values a row on average and still be no
  // array: refused here when the statistics say so, else where the read meets it, naming its row.
  for (size_t rg = 0; rg < meta.row_groups.size(); ++rg) {
    const std::optional<int64_t> nulls = meta.row_groups[rg].columns[static_cast<size_t>(column_idx)].null_count;
    if (nulls && *nulls > 0) {
      throw DataError(name + ": column '" + column.path.front() + "'" +
                      (meta.row_groups.size() > 1 ? " row group " + std::to_string(rg) : std::string()) + ": " +
                      std::to_string(*nulls) + " null or empty lists or null elements (its statistics' null count): " +
                      "a field's column must not have nulls");
    }
  }
  return {column.path.front(), type, {per_row}};
}

void decode_value_chunk(const ChunkLocation& where, const Field& field, uint8_t* out, PageBuffer& buffer) {
  switch (where.column->physical_type) {
    case PhysicalType::kFloat: return decode_column<float>(where, reinterpret_cast<float*>(out), buffer);
    case PhysicalType::kDouble: return decode_column<double>(where, reinterpret_cast<double*>(out), buffer);
    case PhysicalType::kInt32: return decode_column<int32_t>(where, reinterpret_cast<int64_t*>(out), buffer);
    case PhysicalType::kInt64: return decode_column<int64_t>(where, reinterpret_cast<int64_t*>(out), buffer);
    default: throw DataError(chunk_context(where) + ": column cannot hold field '" + field.name + "'");
  }
}

}  // namespace feeder::parquet::detail
