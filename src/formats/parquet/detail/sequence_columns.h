#pragma once

// Internal: a list column whose rows hold different numbers of values, read as a sequence field
// (shape {kAnyLength}): a row group's chunk decoded whole, page by page, its rows found from the
// repetition levels (a row may run across pages), and the rows asked for written each to its
// caller's region. An empty list is a row of no values; a null list or a null element throws
// DataError naming file, column, row group and row:
//   t.parquet: column 'tokens.list.element' row 7: null list (a field's column must not have nulls)

#include <cstdint>
#include <span>

#include "feeder/data/schema.h"
#include "formats/parquet/detail/chunk_reader.h"

namespace feeder::parquet::detail {

// Rows [begin, end) of the row group, each into `region` (ValueRegion: values back to back, row
// begin + i's ending at element ends[i]).
struct SequenceRows {
  int64_t begin = 0;
  int64_t end = 0;
  const ValueRegion* region = nullptr;
};

// Decodes the chunk at `where` (a whole chunk; values_per_row 0) and writes the rows of `rows`
// (sorted by begin, disjoint) as `field`'s type: integers widen to int64 (an unsigned annotation
// read as unsigned), floats and doubles as they are. DataError when a region is too small for its
// rows (a footer that understates the chunk's values) or the chunk holds another number of rows
// than its row group.
void decode_sequence_chunk(const ChunkLocation& where, const Field& field, std::span<const SequenceRows> rows,
                           PageBuffer& buffer);

}  // namespace feeder::parquet::detail
