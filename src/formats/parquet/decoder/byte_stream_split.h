#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace feeder::parquet::decoder {

// BYTE_STREAM_SPLIT: byte b of value i is at data[b * stride + i], stride = data.size() / width.
// Decodes the first `count` values; a section too short or not a multiple of the width throws.
void decode_byte_stream_split(std::span<const uint8_t> data, int64_t count, int32_t* out);
void decode_byte_stream_split(std::span<const uint8_t> data, int64_t count, int64_t* out);
void decode_byte_stream_split(std::span<const uint8_t> data, int64_t count, float* out);
void decode_byte_stream_split(std::span<const uint8_t> data, int64_t count, double* out);
void decode_byte_stream_split(std::span<const uint8_t> data, int64_t count, std::string* out, int32_t width_bytes);

}  // namespace feeder::parquet::decoder
