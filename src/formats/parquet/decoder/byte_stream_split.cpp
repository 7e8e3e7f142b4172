#include "formats/parquet/decoder/byte_stream_split.h"

#include <cstring>

#include "formats/parquet/decoder/decode_error.h"

namespace feeder::parquet::decoder {

namespace {

uint64_t checked_stride(std::span<const uint8_t> data, int64_t count, uint64_t width) {
  if (data.size() % width != 0) {
    throw DecodeError("BYTE_STREAM_SPLIT: " + std::to_string(data.size()) + " bytes is not a multiple of the value width " +
                      std::to_string(width));
  }
  const uint64_t stride = data.size() / width;
  if (stride < static_cast<uint64_t>(count)) {
    throw DecodeError("BYTE_STREAM_SPLIT: page holds " + std::to_string(stride) + " values, expected " +
                      std::to_string(count));
  }
  return stride;
}

template <class T>
void decode(std::span<const uint8_t> data, int64_t count, T* out) {
  const uint64_t stride = checked_stride(data, count, sizeof(T));
  for (int64_t i = 0; i < count; ++i) {
    uint8_t bytes[sizeof(T)];
    for (size_t b = 0; b < sizeof(T); ++b) bytes[b] = data[b * stride + static_cast<uint64_t>(i)];
    std::memcpy(out + i, bytes, sizeof(T));
  }
}

}  // namespace

void decode_byte_stream_split(std::span<const uint8_t> data, int64_t count, int32_t* out) { decode(data, count, out); }
void decode_byte_stream_split(std::span<const uint8_t> data, int64_t count, int64_t* out) { decode(data, count, out); }
void decode_byte_stream_split(std::span<const uint8_t> data, int64_t count, float* out) { decode(data, count, out); }
void decode_byte_stream_split(std::span<const uint8_t> data, int64_t count, double* out) { decode(data, count, out); }

void decode_byte_stream_split(std::span<const uint8_t> data, int64_t count, std::string* out, int32_t width_bytes) {
  const uint64_t width = static_cast<uint64_t>(width_bytes);
  const uint64_t stride = checked_stride(data, count, width);
  for (int64_t i = 0; i < count; ++i) {
    out[i].resize(width);
    for (uint64_t b = 0; b < width; ++b) out[i][b] = static_cast<char>(data[b * stride + static_cast<uint64_t>(i)]);
  }
}

}  // namespace feeder::parquet::decoder
