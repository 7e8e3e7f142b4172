#pragma once

#include <cstdint>
#include <span>

namespace feeder::parquet::decoder {

// The RLE / bit-packing hybrid used for definition levels, dictionary indices and RLE booleans:
// runs of `(count << 1) | 0` + one repeated value, or `(groups << 1) | 1` + groups*8 bit-packed values.
// Reads only inside `data`; running out of input throws DecodeError.
class RleBitPackedDecoder {
 public:
  RleBitPackedDecoder() = default;
  // bit_width must be 0..32 (checked; a larger width throws DecodeError).
  RleBitPackedDecoder(std::span<const uint8_t> data, int32_t bit_width);

  // Decodes exactly `count` values into out[0, count).
  void get(uint32_t* out, int64_t count);
  void get(uint8_t* out, int64_t count);  // values must fit in 8 bits (bit_width <= 8)

  // Decodes `count` indices and writes lut[index] to out. An index >= lut.size() throws
  // DecodeError (dictionary index out of range). Returns the offset of the first value whose lut
  // entry is negative (the caller's "not representable" marker), or -1 when there is none.
  int64_t get_mapped(uint8_t* out, int64_t count, std::span<const int16_t> lut);

  // Passes over the next `count` values without decoding them: a run at a time, so that a reader
  // wanting a few rows of a long page pays for its runs, not its values. Skipped values are not
  // checked (an index out of range is found only by whoever decodes it).
  void skip(int64_t count);

  // Consumes the next `count` values; whether every one of them equals `value`. A run at a time
  // where they are repeated: definition levels of a column without nulls are one run per page.
  bool all_equal(uint32_t value, int64_t count);

  // Bytes consumed so far (the end of the last run started).
  int64_t consumed_bytes() const { return pos_ - begin_; }

 private:
  // Starts the next run; throws if the input is exhausted.
  void next_run();
  template <class T>
  void get_impl(T* out, int64_t count);

  const uint8_t* begin_ = nullptr;
  const uint8_t* pos_ = nullptr;
  const uint8_t* end_ = nullptr;
  int32_t bit_width_ = 0;
  uint32_t repeat_value_ = 0;
  int64_t repeat_left_ = 0;
  // Current bit-packed run: values are read from packed_ at bit offset packed_bit_.
  const uint8_t* packed_ = nullptr;
  uint64_t packed_bit_ = 0;
  int64_t packed_left_ = 0;
};

[[noreturn]] void throw_index_out_of_range(uint64_t index, uint64_t dictionary_size);

// RLE-encoded booleans (encoding RLE on a BOOLEAN column): [u32 length][hybrid data, bit width 1].
// Returns the bytes consumed.
size_t decode_rle_booleans(std::span<const uint8_t> data, int64_t count, uint8_t* out);

// Reads a ULEB128 varint from [pos, end); advances pos. Throws DecodeError when truncated or > 64 bits.
uint64_t read_uleb128(const uint8_t*& pos, const uint8_t* end);

// Number of bits needed for values 0..max_value.
inline int32_t bit_width_for(uint32_t max_value) {
  int32_t width = 0;
  while (max_value >> width) ++width;
  return width;
}

}  // namespace feeder::parquet::decoder
