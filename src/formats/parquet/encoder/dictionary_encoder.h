#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace feeder::parquet::encoder {

// A column chunk in dictionary form (Parquet spec, "Dictionary Encoding"): the distinct values in
// ascending order (they go PLAIN into the dictionary page) and, per value, its index into them
// (they go RLE/bit-packed into the data pages). Ascending order keeps neighbouring pixel values on
// neighbouring indexes, which the codec after it compresses better than first-seen order.
struct DictionaryColumn {
  std::vector<int64_t> dictionary;
  std::vector<uint32_t> indices;
  // Bits per index; at least 1, since some readers reject 0 even for a one-entry dictionary.
  int bit_width = 1;
};

// Dictionary of byte values (pixels): values[idx * stride_bytes] for idx in 0..num_values. Always
// succeeds: a byte column has at most 256 distinct values.
DictionaryColumn dictionary_encode_bytes(const uint8_t* values, int64_t num_values, int64_t stride_bytes);

// Dictionary of 64-bit values (labels); empty when there are more than max_entries distinct values,
// in which case PLAIN is the better encoding.
std::optional<DictionaryColumn> dictionary_encode_int64(std::span<const int64_t> values, size_t max_entries);

// Data page payload for dictionary indexes: one byte with the bit width, then the hybrid runs
// (no length prefix). Appends to `out`.
void put_dictionary_indices(std::span<const uint32_t> indices, int bit_width, std::vector<uint8_t>& out);

}  // namespace feeder::parquet::encoder
