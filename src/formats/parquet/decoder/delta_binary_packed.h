#pragma once

#include <cstdint>
#include <span>

namespace feeder::parquet::decoder {

// DELTA_BINARY_PACKED: a header (block size, miniblocks per block, total count, first value), then
// blocks of [zigzag min delta][one bit width per miniblock][bit-packed miniblocks]. Arithmetic wraps
// in the value's unsigned type, as the format requires. Decodes exactly `count` values; returns
// the bytes consumed. Malformed headers, widths above the value width, or truncation throw DecodeError.
size_t decode_delta_binary_packed(std::span<const uint8_t> data, int64_t count, int32_t* out);
size_t decode_delta_binary_packed(std::span<const uint8_t> data, int64_t count, int64_t* out);

}  // namespace feeder::parquet::decoder
