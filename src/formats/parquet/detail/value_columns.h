#pragma once

// Internal: the columns of a flat Parquet file read as named values of each sample (a per-sample
// weight, a target), apart from what the image columns mean: which field a numeric column gives,
// and one column chunk (or a run of its pages) decoded into dense values of that field's type.
//
// Types: FLOAT gives a float32 field, DOUBLE a float64 one, INT32 and INT64 (with or without an
// integer annotation) an int64 one, as pandas and torch's default_collate would type them. A list
// column whose rows each hold n such values (DuckDB's FLOAT[n], a LIST of one length) gives a field
// of shape {n}, named after the list; one whose rows hold different numbers (INTEGER[]) a sequence
// field, shape {kAnyLength} (sequence_columns.h reads it). A null (for a list: a null or empty list, or a null element),
// or an unsigned 64-bit value beyond int64, throws DataError naming file, column, row group and row:
//   t.parquet: column 'weight' row group 1 row 7: null value (a field's column must not have nulls)

#include <cstdint>
#include <string>
#include <string_view>

#include "feeder/data/schema.h"
#include "feeder/formats/parquet/metadata.h"
#include "formats/parquet/detail/chunk_reader.h"

namespace feeder::parquet::detail {

// The leaf column a field named `field_name` reads: the column of that name, or the element column
// of the list of that name (a top-level `embedding` whose leaf is `embedding.list.element`); -1.
int64_t find_field_column(const FileMetadata& meta, std::string_view field_name);

// The field column `column_idx` is read as; throws DataError ("<name>: column 'w' is BYTE_ARRAY
// ...") for a column that holds no numbers, or lists of lists.
Field value_field(const FileMetadata& meta, int64_t column_idx, const std::string& name);

// Decodes rows [0, where.num_rows) of a chunk (or of a run of its pages located as one) into `out`,
// field_bytes(field) bytes a row.
void decode_value_chunk(const ChunkLocation& where, const Field& field, uint8_t* out, PageBuffer& buffer);

}  // namespace feeder::parquet::detail
