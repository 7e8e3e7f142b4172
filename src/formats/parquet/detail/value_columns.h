#pragma once

// Internal: the columns of a flat Parquet file read as named values of each sample (a per-sample
// weight, a target), apart from what the image columns mean: which field a numeric column gives,
// and one column chunk (or a run of its pages) decoded into dense values of that field's type.
//
// Types: FLOAT gives a float32 field, DOUBLE a float64 one, INT32 and INT64 (with or without an
// integer annotation) an int64 one, as pandas and torch's default_collate would type them. A null,
// or an unsigned 64-bit value beyond int64, throws DataError naming file, column, row group and row:
//   t.parquet: column 'weight' row group 1 row 7: null value (a field's column must not have nulls)

#include <cstdint>
#include <string>

#include "feeder/data/schema.h"
#include "feeder/formats/parquet/metadata.h"
#include "formats/parquet/detail/chunk_reader.h"

namespace feeder::parquet::detail {

// The field column `column` is read as; throws DataError ("<name>: column 'w' is BYTE_ARRAY ...")
// for a column that holds no numbers.
Field value_field(const ColumnSchema& column, const std::string& name);

// Decodes rows [0, where.num_rows) of a chunk (or of a run of its pages located as one) into `out`,
// field_bytes(field) bytes a row.
void decode_value_chunk(const ChunkLocation& where, const Field& field, uint8_t* out, PageBuffer& buffer);

}  // namespace feeder::parquet::detail
