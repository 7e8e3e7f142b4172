#pragma once

// One entry point for the values section of a data page: a switch on the page's Encoding picks the
// decoder (one file pair per encoding in this folder). Adding an encoding is one enum value, one
// decoder file pair and one case here.

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "feeder/formats/parquet/metadata.h"
#include "formats/parquet/decoder/byte_stream_split.h"
#include "formats/parquet/decoder/decode_error.h"
#include "formats/parquet/decoder/delta_binary_packed.h"
#include "formats/parquet/decoder/dictionary.h"
#include "formats/parquet/decoder/plain.h"
#include "formats/parquet/decoder/rle_bit_packed.h"

namespace feeder::parquet::decoder {

// What the decoders need to know about the column beyond the value type T:
// T is uint8_t (BOOLEAN), int32_t, int64_t, float, double, or std::string (BYTE_ARRAY when
// type_length_bytes == 0, FIXED_LEN_BYTE_ARRAY otherwise).
template <class T>
struct ValueSource {
  int32_t type_length_bytes = 0;
  std::span<const T> dictionary;  // the chunk's dictionary page, decoded
  bool has_dictionary = false;
};

// Decodes `count` non-null values of one page section into out[0, count).
template <class T>
void decode_values(Encoding encoding, std::span<const uint8_t> data, int64_t count, T* out, const ValueSource<T>& source) {
  constexpr bool kIsBool = std::is_same_v<T, uint8_t>;
  constexpr bool kIsInt = std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;
  constexpr bool kIsBytes = std::is_same_v<T, std::string>;
  switch (encoding) {
    case Encoding::kPlain:
      if constexpr (kIsBytes) {
        decode_plain(data, count, out, source.type_length_bytes);
      } else {
        decode_plain(data, count, out);
      }
      return;
    case Encoding::kPlainDictionary:
    case Encoding::kRleDictionary:
      if (!source.has_dictionary) throw DecodeError("dictionary-encoded page but the chunk has no dictionary page");
      decode_dictionary(data, count, out, source.dictionary);
      return;
    case Encoding::kRle:
      if constexpr (kIsBool) {
        decode_rle_booleans(data, count, out);
        return;
      }
      break;
    case Encoding::kDeltaBinaryPacked:
      if constexpr (kIsInt) {
        decode_delta_binary_packed(data, count, out);
        return;
      }
      break;
    case Encoding::kByteStreamSplit:
      if constexpr (kIsBytes) {
        if (source.type_length_bytes > 0) {
          decode_byte_stream_split(data, count, out, source.type_length_bytes);
          return;
        }
      } else if constexpr (!kIsBool) {
        decode_byte_stream_split(data, count, out);
        return;
      }
      break;
    case Encoding::kBitPacked:
    case Encoding::kDeltaLengthByteArray:
    case Encoding::kDeltaByteArray:
      break;
  }
  throw DecodeError("encoding " + to_string(encoding) + " is not supported for this column type");
}

}  // namespace feeder::parquet::decoder
