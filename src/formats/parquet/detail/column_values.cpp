#include "formats/parquet/detail/column_values.h"

namespace feeder::parquet::detail {

int64_t decode_validity(const DataPage& page, uint8_t* valid) {
  // Flat OPTIONAL columns have max definition level 1: a level is 1 for a value, 0 for a null.
  decoder::RleBitPackedDecoder levels(page.def_levels, 1);
  levels.get(valid, page.num_values);
  int64_t present = 0;
  for (int64_t i = 0; i < page.num_values; ++i) {
    if (valid[i] > 1) throw decoder::DecodeError("definition level " + std::to_string(valid[i]) + " above the maximum 1");
    present += valid[i];
  }
  return present;
}

}  // namespace feeder::parquet::detail
