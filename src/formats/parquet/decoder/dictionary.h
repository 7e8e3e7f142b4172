#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "formats/parquet/decoder/decode_error.h"
#include "formats/parquet/decoder/rle_bit_packed.h"

namespace feeder::parquet::decoder {

// PLAIN_DICTIONARY / RLE_DICTIONARY data pages: one byte of index bit width, then RLE/bit-packed
// indices into the chunk's dictionary page.
class DictionaryIndexDecoder {
 public:
  // Reads the bit-width byte; a width above 32 throws DecodeError. An empty page section is allowed
  // when it holds no values (all-null pages).
  DictionaryIndexDecoder(std::span<const uint8_t> data, int64_t num_values);

  // Decodes `count` indices, each checked against dictionary_size.
  void get(uint32_t* indices, int64_t count, uint64_t dictionary_size);

  // Decodes `count` indices mapped through `lut` (one entry per dictionary entry) into bytes; see
  // RleBitPackedDecoder::get_mapped for the return value.
  int64_t get_mapped(uint8_t* out, int64_t count, std::span<const int16_t> lut) {
    return indices_.get_mapped(out, count, lut);
  }

  // Passes over `count` indices unread (RleBitPackedDecoder::skip).
  void skip(int64_t count) { indices_.skip(count); }

 private:
  RleBitPackedDecoder indices_;
};

// How many indices are decoded per batch: small enough to stay in L1 between decode and lookup.
inline constexpr int64_t kIndexBatch = 1024;

[[noreturn]] void throw_index_out_of_range(uint32_t index, uint64_t dictionary_size);

// Decodes `count` dictionary-encoded values into out, looking each index up in `dictionary`.
template <class T>
void decode_dictionary(std::span<const uint8_t> data, int64_t count, T* out, std::span<const T> dictionary) {
  DictionaryIndexDecoder decoder(data, count);
  uint32_t indices[kIndexBatch];
  for (int64_t done = 0; done < count;) {
    const int64_t n = std::min(kIndexBatch, count - done);
    decoder.get(indices, n, dictionary.size());
    for (int64_t i = 0; i < n; ++i) out[done + i] = dictionary[indices[i]];
    done += n;
  }
}

}  // namespace feeder::parquet::decoder
