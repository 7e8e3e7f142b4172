#include "formats/parquet/detail/column_values.h"

#include <algorithm>

#include "feeder/error.h"

namespace feeder::parquet::detail {

namespace {

// Levels 0..max_level take this many bits.
int32_t level_bit_width(int16_t max_level) { return decoder::bit_width_for(static_cast<uint32_t>(max_level)); }

}  // namespace

bool all_present(const DataPage& page, int16_t max_level) {
  decoder::RleBitPackedDecoder levels(page.def_levels, level_bit_width(max_level));
  return levels.all_equal(static_cast<uint32_t>(max_level), page.num_values);
}

int64_t decode_validity(const DataPage& page, int16_t max_level, uint8_t* valid) {
  // A value is present when its level is the column's maximum: 1 for a flat OPTIONAL column, more
  // for a leaf of optional structs (image.bytes of an optional struct `image`: 2); lower levels
  // are nulls at some depth.
  decoder::RleBitPackedDecoder levels(page.def_levels, level_bit_width(max_level));
  levels.get(valid, page.num_values);
  int64_t present = 0;
  for (int64_t i = 0; i < page.num_values; ++i) {
    if (valid[i] > max_level)
      throw decoder::DecodeError("definition level " + std::to_string(valid[i]) + " above the maximum " +
                                 std::to_string(max_level));
    valid[i] = valid[i] == max_level ? 1 : 0;
    present += valid[i];
  }
  return present;
}

void throw_at_row(const ChunkLocation& where, int64_t row, const std::string& what) {
  throw DataError(chunk_context(where) + " row " + std::to_string(where.first_row + row) + ": " + what);
}

void require_no_nulls(const ChunkLocation& where, const DataPage& page, std::vector<uint8_t>& valid,
                      const char* null_what) {
  if (where.column->max_definition_level == 0 || all_present(page, where.column->max_definition_level)) return;
  valid.resize(static_cast<size_t>(page.num_values));
  if (decode_validity(page, where.column->max_definition_level, valid.data()) == page.num_values) return;
  const int64_t null_idx = std::find(valid.begin(), valid.end(), 0) - valid.begin();
  throw_at_row(where, page.first_row + null_idx / where.values_per_row, null_what);
}

}  // namespace feeder::parquet::detail
