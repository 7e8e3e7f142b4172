#include "formats/parquet/encoder/dictionary_encoder.h"

#include <algorithm>
#include <array>

#include "formats/parquet/encoder/rle_bit_packed_encoder.h"

namespace feeder::parquet::encoder {
namespace {

int index_bit_width(size_t num_entries) {
  return std::max(1, bit_width_for(num_entries <= 1 ? 0 : static_cast<uint32_t>(num_entries - 1)));
}

}  // namespace

DictionaryColumn dictionary_encode_bytes(const uint8_t* values, int64_t num_values, int64_t stride_bytes) {
  std::array<bool, 256> seen{};
  for (int64_t idx = 0; idx < num_values; ++idx) seen[values[idx * stride_bytes]] = true;
  DictionaryColumn column;
  std::array<uint32_t, 256> index_of{};
  for (int value = 0; value < 256; ++value) {
    if (!seen[value]) continue;
    index_of[value] = static_cast<uint32_t>(column.dictionary.size());
    column.dictionary.push_back(value);
  }
  column.indices.resize(static_cast<size_t>(num_values));
  for (int64_t idx = 0; idx < num_values; ++idx) column.indices[static_cast<size_t>(idx)] = index_of[values[idx * stride_bytes]];
  column.bit_width = index_bit_width(column.dictionary.size());
  return column;
}

std::optional<DictionaryColumn> dictionary_encode_int64(std::span<const int64_t> values, size_t max_entries) {
  std::vector<int64_t> distinct(values.begin(), values.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() > max_entries) return std::nullopt;
  DictionaryColumn column;
  column.indices.reserve(values.size());
  for (const int64_t value : values) {
    const auto it = std::lower_bound(distinct.begin(), distinct.end(), value);
    column.indices.push_back(static_cast<uint32_t>(it - distinct.begin()));
  }
  column.dictionary = std::move(distinct);
  column.bit_width = index_bit_width(column.dictionary.size());
  return column;
}

void put_dictionary_indices(std::span<const uint32_t> indices, int bit_width, std::vector<uint8_t>& out) {
  out.push_back(static_cast<uint8_t>(bit_width));
  put_rle_bit_packed(indices, bit_width, out);
}

}  // namespace feeder::parquet::encoder
