#include "formats/parquet/detail/value_columns.h"

#include <cstring>
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
  const char* null_what = "null value (a field's column must not have nulls)";
  for_each_page_of_values<T>(where, null_what, buffer, [&](const DataPage& page, std::span<const T> values) {
    Out* dst = out + page.first_row;
    for (int64_t i = 0; i < page.num_values; ++i) {
      const T value = values[static_cast<size_t>(i)];
      if constexpr (std::is_same_v<T, int32_t>) {
        dst[i] = as_unsigned ? static_cast<int64_t>(static_cast<uint32_t>(value)) : value;
      } else if constexpr (std::is_same_v<T, int64_t>) {
        if (as_unsigned && value < 0)
          throw_at_row(where, page.first_row + i,
                       "value " + std::to_string(static_cast<uint64_t>(value)) + " out of range for int64");
        dst[i] = value;
      } else {
        dst[i] = value;
      }
    }
  });
}

}  // namespace

Field value_field(const ColumnSchema& column, const std::string& name) {
  const auto refuse = [&] {
    const std::string type = column.annotation.empty() ? to_string(column.physical_type)
                                                       : to_string(column.physical_type) + " " + column.annotation;
    return DataError(name + ": column '" + column.name + "' is " + type +
                     ": a field's column must be FLOAT, DOUBLE, INT32 or INT64, one value per row");
  };
  if (!is_number_column(column) || column.max_repetition_level > 0) throw refuse();
  switch (column.physical_type) {
    case PhysicalType::kFloat: return {column.name, FieldType::kFloat32, {}};
    case PhysicalType::kDouble: return {column.name, FieldType::kFloat64, {}};
    case PhysicalType::kInt32:
    case PhysicalType::kInt64: return {column.name, FieldType::kInt64, {}};
    default: throw refuse();
  }
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
