#include "formats/parquet/decoder/dictionary.h"

namespace feeder::parquet::decoder {

namespace {

RleBitPackedDecoder make_index_decoder(std::span<const uint8_t> data, int64_t num_values) {
  if (data.empty()) {
    if (num_values > 0) throw DecodeError("dictionary-encoded page has no index bit width");
    return RleBitPackedDecoder(data, 0);
  }
  const int32_t bit_width = data[0];
  if (bit_width > 32) throw DecodeError("dictionary index bit width " + std::to_string(bit_width) + " is larger than 32");
  return RleBitPackedDecoder(data.subspan(1), bit_width);
}

}  // namespace

void throw_index_out_of_range(uint32_t index, uint64_t dictionary_size) {
  throw_index_out_of_range(uint64_t{index}, dictionary_size);
}

DictionaryIndexDecoder::DictionaryIndexDecoder(std::span<const uint8_t> data, int64_t num_values)
    : indices_(make_index_decoder(data, num_values)) {}

void DictionaryIndexDecoder::get(uint32_t* indices, int64_t count, uint64_t dictionary_size) {
  indices_.get(indices, count);
  // One pass with no early exit keeps the loop vectorizable; the error path finds the culprit.
  uint32_t max_index = 0;
  for (int64_t i = 0; i < count; ++i) max_index = std::max(max_index, indices[i]);
  if (count > 0 && max_index >= dictionary_size) {
    for (int64_t i = 0; i < count; ++i) {
      if (indices[i] >= dictionary_size) throw_index_out_of_range(indices[i], dictionary_size);
    }
  }
}

}  // namespace feeder::parquet::decoder
