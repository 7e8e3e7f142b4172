#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace feeder::parquet::decoder {

// PLAIN: fixed-width little-endian values, bit-packed booleans (LSB first), and BYTE_ARRAY as
// [u32 length][bytes]. Each decodes exactly `count` values and returns the bytes consumed;
// input shorter than needed throws DecodeError.
size_t decode_plain(std::span<const uint8_t> data, int64_t count, uint8_t* out_bools);
size_t decode_plain(std::span<const uint8_t> data, int64_t count, int32_t* out);
size_t decode_plain(std::span<const uint8_t> data, int64_t count, int64_t* out);
size_t decode_plain(std::span<const uint8_t> data, int64_t count, float* out);
size_t decode_plain(std::span<const uint8_t> data, int64_t count, double* out);
// type_length_bytes > 0: FIXED_LEN_BYTE_ARRAY of that width; 0: BYTE_ARRAY.
size_t decode_plain(std::span<const uint8_t> data, int64_t count, std::string* out, int32_t type_length_bytes);

}  // namespace feeder::parquet::decoder
