#include "formats/parquet/encoder/rle_bit_packed_encoder.h"

#include <bit>
#include <cassert>
#include <cstring>

namespace feeder::parquet::encoder {
namespace {

// A run this long costs at most 1 + 4 bytes as RLE, never more than the bit-packed form; shorter
// runs stay in bit-packed groups so that groups are not split (a bit-packed run holds whole groups).
constexpr size_t kMinRleRun = 8;
constexpr size_t kGroupSize = 8;

void put_rle_run(uint32_t value, size_t count, int bit_width, std::vector<uint8_t>& out) {
  put_uleb128(static_cast<uint64_t>(count) << 1, out);
  const int value_bytes = (bit_width + 7) / 8;
  for (int byte_idx = 0; byte_idx < value_bytes; ++byte_idx) out.push_back(static_cast<uint8_t>(value >> (8 * byte_idx)));
}

// Packs values[0..count) LSB first; count is padded with zeros up to a multiple of 8.
void put_bit_packed_run(const uint32_t* values, size_t count, int bit_width, std::vector<uint8_t>& out) {
  const size_t num_groups = (count + kGroupSize - 1) / kGroupSize;
  put_uleb128((static_cast<uint64_t>(num_groups) << 1) | 1, out);
  const size_t start = out.size();
  out.resize(start + num_groups * static_cast<size_t>(bit_width));
  uint8_t* dst = out.data() + start;
  if (bit_width == 0) return;
  if (bit_width <= 8) {
    // Dictionary indexes of byte columns: a whole group fits in one 64-bit word.
    for (size_t group = 0; group < num_groups; ++group, dst += bit_width) {
      uint64_t word = 0;
      for (size_t value_idx = 0; value_idx < kGroupSize; ++value_idx) {
        const size_t idx = group * kGroupSize + value_idx;
        if (idx < count) word |= static_cast<uint64_t>(values[idx]) << (value_idx * static_cast<size_t>(bit_width));
      }
      for (int byte_idx = 0; byte_idx < bit_width; ++byte_idx) dst[byte_idx] = static_cast<uint8_t>(word >> (8 * byte_idx));
    }
    return;
  }
  uint64_t buffer = 0;  // pending bits, LSB first
  int buffered_bits = 0;
  for (size_t idx = 0; idx < num_groups * kGroupSize; ++idx) {
    const uint64_t value = idx < count ? values[idx] : 0;
    buffer |= value << buffered_bits;
    buffered_bits += bit_width;
    while (buffered_bits >= 8) {
      *dst++ = static_cast<uint8_t>(buffer);
      buffer >>= 8;
      buffered_bits -= 8;
    }
  }
  // 8 values of bit_width bits are exactly bit_width bytes, so nothing is left over.
  assert(buffered_bits == 0);
}

}  // namespace

int bit_width_for(uint32_t max_value) { return max_value == 0 ? 0 : 32 - std::countl_zero(max_value); }

void put_uleb128(uint64_t value, std::vector<uint8_t>& out) {
  while (value >= 0x80) {
    out.push_back(static_cast<uint8_t>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<uint8_t>(value));
}

void put_rle_bit_packed(std::span<const uint32_t> values, int bit_width, std::vector<uint8_t>& out) {
  assert(bit_width >= 0 && bit_width <= 32);
  const size_t num_values = values.size();
  size_t literal_start = 0;  // values[literal_start, idx) wait for a bit-packed run
  size_t idx = 0;
  while (idx < num_values) {
    size_t run_end = idx + 1;
    while (run_end < num_values && values[run_end] == values[idx]) ++run_end;
    size_t run_length = run_end - idx;
    if (run_length < kMinRleRun) {
      idx = run_end;
      continue;
    }
    // Complete the pending literals' last group with values from the run, so the literal run holds
    // whole groups and the RLE run starts right after it.
    const size_t num_pending = idx - literal_start;
    const size_t pad = (kGroupSize - num_pending % kGroupSize) % kGroupSize;
    if (run_length - pad < kMinRleRun) {
      idx = run_end;
      continue;
    }
    if (num_pending != 0) {
      put_bit_packed_run(values.data() + literal_start, num_pending + pad, bit_width, out);
      idx += pad;
      run_length -= pad;
    }
    put_rle_run(values[idx], run_length, bit_width, out);
    idx = run_end;
    literal_start = idx;
  }
  if (literal_start < num_values) put_bit_packed_run(values.data() + literal_start, num_values - literal_start, bit_width, out);
}

void put_rle_bit_packed_with_length(std::span<const uint32_t> values, int bit_width, std::vector<uint8_t>& out) {
  const size_t length_at = out.size();
  out.resize(length_at + 4);
  put_rle_bit_packed(values, bit_width, out);
  const uint32_t length_bytes = static_cast<uint32_t>(out.size() - length_at - 4);
  for (int byte_idx = 0; byte_idx < 4; ++byte_idx) out[length_at + byte_idx] = static_cast<uint8_t>(length_bytes >> (8 * byte_idx));
}

}  // namespace feeder::parquet::encoder
