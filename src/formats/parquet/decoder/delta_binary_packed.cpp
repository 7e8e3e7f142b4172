#include "formats/parquet/decoder/delta_binary_packed.h"

#include <string>

#include "formats/parquet/decoder/decode_error.h"
#include "formats/parquet/decoder/rle_bit_packed.h"

namespace feeder::parquet::decoder {

namespace {

int64_t zigzag(uint64_t value) { return static_cast<int64_t>((value >> 1) ^ (~(value & 1) + 1)); }

// Reads `bit_width` bits (<= 64) at bit offset `bit` of [base, end); the caller has checked that
// the bits lie inside.
uint64_t read_bits(const uint8_t* base, uint64_t bit, int32_t bit_width) {
  uint64_t value = 0;
  int32_t got = 0;
  uint64_t byte_idx = bit >> 3;
  uint32_t shift = bit & 7;
  while (got < bit_width) {
    const uint64_t chunk = uint64_t{base[byte_idx]} >> shift;
    value |= chunk << got;
    got += 8 - static_cast<int32_t>(shift);
    shift = 0;
    ++byte_idx;
  }
  return bit_width == 64 ? value : value & ((uint64_t{1} << bit_width) - 1);
}

template <class T>
size_t decode(std::span<const uint8_t> data, int64_t count, T* out) {
  using U = std::make_unsigned_t<T>;
  constexpr int32_t kMaxWidth = sizeof(T) * 8;
  const uint8_t* pos = data.data();
  const uint8_t* end = data.data() + data.size();
  const uint64_t block_size = read_uleb128(pos, end);
  const uint64_t miniblocks = read_uleb128(pos, end);
  const uint64_t total = read_uleb128(pos, end);
  const int64_t first = zigzag(read_uleb128(pos, end));
  if (block_size == 0 || block_size % 128 != 0 || block_size > (1u << 20)) {
    throw DecodeError("DELTA_BINARY_PACKED: invalid block size " + std::to_string(block_size));
  }
  if (miniblocks == 0 || block_size % miniblocks != 0 || (block_size / miniblocks) % 32 != 0) {
    throw DecodeError("DELTA_BINARY_PACKED: invalid miniblock count " + std::to_string(miniblocks));
  }
  if (total < static_cast<uint64_t>(count)) {
    throw DecodeError("DELTA_BINARY_PACKED: page holds " + std::to_string(total) + " values, expected " +
                      std::to_string(count));
  }
  if (count == 0) return static_cast<size_t>(pos - data.data());
  const uint64_t per_miniblock = block_size / miniblocks;
  U previous = static_cast<U>(first);
  out[0] = static_cast<T>(previous);
  int64_t done = 1;
  while (done < count) {
    const int64_t min_delta = zigzag(read_uleb128(pos, end));
    if (static_cast<uint64_t>(end - pos) < miniblocks) throw DecodeError("DELTA_BINARY_PACKED: truncated bit widths");
    const uint8_t* widths = pos;
    pos += miniblocks;
    for (uint64_t m = 0; m < miniblocks && done < count; ++m) {
      const int32_t width = widths[m];
      if (width > kMaxWidth) {
        throw DecodeError("DELTA_BINARY_PACKED: miniblock bit width " + std::to_string(width) + " is larger than " +
                          std::to_string(kMaxWidth));
      }
      const uint64_t miniblock_bytes = per_miniblock * static_cast<uint64_t>(width) / 8;
      const int64_t n = std::min<int64_t>(static_cast<int64_t>(per_miniblock), count - done);
      // The last miniblock may be cut short by the writer; only the bits of values we read must exist.
      const uint64_t needed_bytes = (static_cast<uint64_t>(n) * static_cast<uint64_t>(width) + 7) / 8;
      if (static_cast<uint64_t>(end - pos) < needed_bytes) throw DecodeError("DELTA_BINARY_PACKED: truncated miniblock");
      for (int64_t i = 0; i < n; ++i) {
        const U delta = static_cast<U>(read_bits(pos, static_cast<uint64_t>(i) * static_cast<uint64_t>(width), width));
        previous = static_cast<U>(previous + static_cast<U>(min_delta) + delta);
        out[done + i] = static_cast<T>(previous);
      }
      done += n;
      pos += std::min<uint64_t>(miniblock_bytes, static_cast<uint64_t>(end - pos));
    }
  }
  return static_cast<size_t>(pos - data.data());
}

}  // namespace

size_t decode_delta_binary_packed(std::span<const uint8_t> data, int64_t count, int32_t* out) {
  return decode(data, count, out);
}

size_t decode_delta_binary_packed(std::span<const uint8_t> data, int64_t count, int64_t* out) {
  return decode(data, count, out);
}

}  // namespace feeder::parquet::decoder
