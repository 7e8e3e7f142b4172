#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace feeder::parquet::encoder {

// PLAIN encoding (Parquet spec, "Plain"): fixed-width values little-endian, back to back. Used for
// dictionary pages, for columns whose dictionary would not pay off, and for statistics values.
// All functions append to `out`.
void put_plain_int32(std::span<const int32_t> values, std::vector<uint8_t>& out);
void put_plain_int64(std::span<const int64_t> values, std::vector<uint8_t>& out);
// FIXED_LEN_BYTE_ARRAY: values of `value_bytes` each, stored without length prefixes, so a block of
// contiguous images is one memcpy.
void put_plain_fixed(const uint8_t* values, int64_t num_values, int64_t value_bytes, std::vector<uint8_t>& out);

}  // namespace feeder::parquet::encoder
