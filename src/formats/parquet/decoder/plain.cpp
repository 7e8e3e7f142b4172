#include "formats/parquet/decoder/plain.h"

#include <cstring>

#include "formats/parquet/decoder/decode_error.h"

namespace feeder::parquet::decoder {

namespace {

[[noreturn]] void too_short(size_t have, uint64_t need, int64_t count) {
  throw DecodeError("PLAIN values: " + std::to_string(count) + " values need " + std::to_string(need) +
                    " bytes but the page has " + std::to_string(have));
}

template <class T>
size_t decode_fixed(std::span<const uint8_t> data, int64_t count, T* out) {
  const uint64_t need = static_cast<uint64_t>(count) * sizeof(T);
  if (data.size() < need) too_short(data.size(), need, count);
  if (need) std::memcpy(out, data.data(), need);  // Parquet is little-endian, like every target we build for
  return need;
}

}  // namespace

size_t decode_plain(std::span<const uint8_t> data, int64_t count, uint8_t* out_bools) {
  const uint64_t need = (static_cast<uint64_t>(count) + 7) / 8;
  if (data.size() < need) too_short(data.size(), need, count);
  for (int64_t i = 0; i < count; ++i) out_bools[i] = (data[static_cast<size_t>(i >> 3)] >> (i & 7)) & 1;
  return need;
}

size_t decode_plain(std::span<const uint8_t> data, int64_t count, int32_t* out) { return decode_fixed(data, count, out); }
size_t decode_plain(std::span<const uint8_t> data, int64_t count, int64_t* out) { return decode_fixed(data, count, out); }
size_t decode_plain(std::span<const uint8_t> data, int64_t count, float* out) { return decode_fixed(data, count, out); }
size_t decode_plain(std::span<const uint8_t> data, int64_t count, double* out) { return decode_fixed(data, count, out); }

size_t decode_plain(std::span<const uint8_t> data, int64_t count, std::string* out, int32_t type_length_bytes) {
  if (type_length_bytes > 0) {
    const uint64_t width = static_cast<uint64_t>(type_length_bytes);
    const uint64_t need = static_cast<uint64_t>(count) * width;
    if (data.size() < need) too_short(data.size(), need, count);
    for (int64_t i = 0; i < count; ++i) {
      out[i].assign(reinterpret_cast<const char*>(data.data()) + static_cast<uint64_t>(i) * width, width);
    }
    return need;
  }
  size_t pos = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (data.size() - pos < 4) throw DecodeError("PLAIN BYTE_ARRAY: value " + std::to_string(i) + ": truncated length");
    uint32_t length = 0;
    std::memcpy(&length, data.data() + pos, 4);
    pos += 4;
    if (data.size() - pos < length) {
      throw DecodeError("PLAIN BYTE_ARRAY: value " + std::to_string(i) + ": length " + std::to_string(length) +
                        " exceeds the " + std::to_string(data.size() - pos) + " bytes left in the page");
    }
    out[i].assign(reinterpret_cast<const char*>(data.data()) + pos, length);
    pos += length;
  }
  return pos;
}

}  // namespace feeder::parquet::decoder
