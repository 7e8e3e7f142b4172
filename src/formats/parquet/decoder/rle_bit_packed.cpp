#include "formats/parquet/decoder/rle_bit_packed.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "formats/parquet/decoder/decode_error.h"

namespace feeder::parquet::decoder {

uint64_t read_uleb128(const uint8_t*& pos, const uint8_t* end) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= end) throw DecodeError("truncated varint");
    const uint8_t byte = *pos++;
    value |= uint64_t{byte & 0x7fu} << shift;
    if (!(byte & 0x80)) return value;
  }
  throw DecodeError("varint longer than 64 bits");
}

size_t decode_rle_booleans(std::span<const uint8_t> data, int64_t count, uint8_t* out) {
  if (data.size() < 4) throw DecodeError("RLE booleans: missing the 4-byte length prefix");
  uint32_t length = 0;
  std::memcpy(&length, data.data(), 4);
  if (length > data.size() - 4) {
    throw DecodeError("RLE booleans: length " + std::to_string(length) + " exceeds the " +
                      std::to_string(data.size() - 4) + " bytes of the page");
  }
  RleBitPackedDecoder decoder(data.subspan(4, length), 1);
  decoder.get(out, count);
  return 4 + static_cast<size_t>(length);
}

RleBitPackedDecoder::RleBitPackedDecoder(std::span<const uint8_t> data, int32_t bit_width)
    : begin_(data.data()), pos_(data.data()), end_(data.data() + data.size()), bit_width_(bit_width) {
  if (bit_width < 0 || bit_width > 32) {
    throw DecodeError("bit width " + std::to_string(bit_width) + " is larger than 32");
  }
}

void RleBitPackedDecoder::next_run() {
  if (pos_ >= end_) throw DecodeError("RLE/bit-packed data ends before all values were read");
  const uint64_t header = read_uleb128(pos_, end_);
  const uint64_t count = header >> 1;
  if (header & 1) {
    // Bit-packed: count groups of 8 values, count * bit_width bytes. Writers may stop the last run
    // short of its declared length, so only values whose bits are present are readable.
    const uint64_t available_bytes = static_cast<uint64_t>(end_ - pos_);
    const uint64_t declared_bytes = count * static_cast<uint64_t>(bit_width_);
    const uint64_t run_bytes = std::min(declared_bytes, available_bytes);
    packed_ = pos_;
    packed_bit_ = 0;
    packed_left_ = bit_width_ == 0 ? static_cast<int64_t>(std::min<uint64_t>(count * 8, uint64_t{1} << 40))
                                   : static_cast<int64_t>(run_bytes * 8 / static_cast<uint64_t>(bit_width_));
    pos_ += run_bytes;
    if (packed_left_ == 0) throw DecodeError("empty or truncated bit-packed run");
  } else {
    const int32_t value_bytes = (bit_width_ + 7) / 8;
    if (end_ - pos_ < value_bytes) throw DecodeError("truncated RLE run value");
    uint32_t value = 0;
    for (int32_t i = 0; i < value_bytes; ++i) value |= uint32_t{pos_[i]} << (8 * i);
    pos_ += value_bytes;
    if (count == 0) throw DecodeError("RLE run of length 0");
    repeat_value_ = value;
    repeat_left_ = static_cast<int64_t>(std::min<uint64_t>(count, uint64_t{1} << 40));
  }
}

template <class T>
void RleBitPackedDecoder::get_impl(T* out, int64_t count) {
  const uint64_t mask = bit_width_ == 32 ? 0xffffffffull : ((uint64_t{1} << bit_width_) - 1);
  while (count > 0) {
    if (repeat_left_ > 0) {
      const int64_t n = std::min(count, repeat_left_);
      std::fill(out, out + n, static_cast<T>(repeat_value_));
      out += n;
      count -= n;
      repeat_left_ -= n;
    } else if (packed_left_ > 0) {
      const int64_t n = std::min(count, packed_left_);
      if (bit_width_ == 0) {
        std::fill(out, out + n, T{0});
      } else if (bit_width_ == 8 && (packed_bit_ & 7) == 0) {
        const uint8_t* src = packed_ + (packed_bit_ >> 3);
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(src[i]);
        packed_bit_ += static_cast<uint64_t>(n) * 8;
      } else {
        int64_t i = 0;
        if (bit_width_ <= 24) {
          // Fast path: one unaligned 8-byte load covers any value of <= 24 bits plus its 7-bit
          // offset whenever 8 bytes remain before the end of the input.
          const uint64_t limit_bit = (static_cast<uint64_t>(end_ - packed_) >= 8)
                                         ? (static_cast<uint64_t>(end_ - packed_) - 8) * 8
                                         : 0;
          for (; i < n && packed_bit_ <= limit_bit && static_cast<uint64_t>(end_ - packed_) >= 8; ++i) {
            uint64_t word;
            std::memcpy(&word, packed_ + (packed_bit_ >> 3), 8);
            out[i] = static_cast<T>((word >> (packed_bit_ & 7)) & mask);
            packed_bit_ += static_cast<uint64_t>(bit_width_);
          }
        }
        // Each value spans at most 5 bytes (32 bits + 7 bits of offset); all of them lie inside the
        // run because packed_left_ counts only values whose bits are present.
        for (; i < n; ++i) {
          const uint64_t byte_idx = packed_bit_ >> 3;
          const uint32_t shift = packed_bit_ & 7;
          const uint64_t last_byte = (packed_bit_ + static_cast<uint64_t>(bit_width_) - 1) >> 3;
          uint64_t word = 0;
          for (uint64_t b = byte_idx; b <= last_byte; ++b) word |= uint64_t{packed_[b]} << (8 * (b - byte_idx));
          out[i] = static_cast<T>((word >> shift) & mask);
          packed_bit_ += static_cast<uint64_t>(bit_width_);
        }
      }
      out += n;
      count -= n;
      packed_left_ -= n;
    } else {
      next_run();
    }
  }
}

[[noreturn]] void throw_index_out_of_range(uint64_t index, uint64_t dictionary_size) {
  throw DecodeError("dictionary index " + std::to_string(index) + " out of range (dictionary has " +
                    std::to_string(dictionary_size) + " entries)");
}

int64_t RleBitPackedDecoder::get_mapped(uint8_t* out, int64_t count, std::span<const int16_t> lut) {
  int64_t first_bad = -1;
  int64_t done = 0;
  uint32_t indices[64];
  while (done < count) {
    if (repeat_left_ > 0) {
      const int64_t n = std::min(count - done, repeat_left_);
      if (repeat_value_ >= lut.size()) throw_index_out_of_range(repeat_value_, lut.size());
      const int16_t pixel = lut[repeat_value_];
      if (pixel < 0 && first_bad < 0) first_bad = done;
      std::memset(out + done, static_cast<uint8_t>(pixel), static_cast<size_t>(n));
      done += n;
      repeat_left_ -= n;
    } else if (packed_left_ > 0) {
      const int64_t n = std::min<int64_t>({count - done, packed_left_, 64});
      get_impl(indices, n);  // stays inside this bit-packed run
      int16_t all = 0;
      uint32_t max_index = 0;
      for (int64_t i = 0; i < n; ++i) max_index = std::max(max_index, indices[i]);
      if (max_index >= lut.size()) throw_index_out_of_range(max_index, lut.size());
      for (int64_t i = 0; i < n; ++i) {
        const int16_t pixel = lut[indices[i]];
        all |= pixel;
        out[done + i] = static_cast<uint8_t>(pixel);
      }
      if (all < 0 && first_bad < 0) {
        for (int64_t i = 0; i < n; ++i) {
          if (lut[indices[i]] < 0) {
            first_bad = done + i;
            break;
          }
        }
      }
      done += n;
    } else {
      next_run();
    }
  }
  return first_bad;
}

void RleBitPackedDecoder::skip(int64_t count) {
  while (count > 0) {
    if (repeat_left_ > 0) {
      const int64_t n = std::min(count, repeat_left_);
      repeat_left_ -= n;
      count -= n;
    } else if (packed_left_ > 0) {
      const int64_t n = std::min(count, packed_left_);
      packed_bit_ += static_cast<uint64_t>(n) * static_cast<uint64_t>(bit_width_);
      packed_left_ -= n;
      count -= n;
    } else {
      next_run();
    }
  }
}

bool RleBitPackedDecoder::all_equal(uint32_t value, int64_t count) {
  bool equal = true;
  uint32_t values[256];
  while (count > 0) {
    if (repeat_left_ > 0) {
      const int64_t n = std::min(count, repeat_left_);
      equal = equal && repeat_value_ == value;
      repeat_left_ -= n;
      count -= n;
    } else if (packed_left_ > 0) {
      const int64_t n = std::min<int64_t>({count, packed_left_, 256});
      get_impl(values, n);  // stays inside this bit-packed run
      for (int64_t i = 0; i < n; ++i) equal = equal && values[i] == value;
      count -= n;
    } else {
      next_run();
    }
  }
  return equal;
}

void RleBitPackedDecoder::get(uint32_t* out, int64_t count) { get_impl(out, count); }

void RleBitPackedDecoder::get(uint8_t* out, int64_t count) {
  if (bit_width_ > 8) throw DecodeError("bit width " + std::to_string(bit_width_) + " too wide for 8-bit values");
  get_impl(out, count);
}

}  // namespace feeder::parquet::decoder
