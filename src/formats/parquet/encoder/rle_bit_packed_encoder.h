#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace feeder::parquet::encoder {

// Number of bits needed for values 0..max_value (0 for max_value 0).
int bit_width_for(uint32_t max_value);

// RLE / bit-packing hybrid (Parquet spec, "Run Length Encoding / Bit-Packing Hybrid"), used for
// dictionary indexes and for repetition/definition levels. Runs of 8 or more equal values become
// RLE runs (varint header `count << 1`, then the value in ceil(bit_width/8) little-endian bytes);
// everything else goes into bit-packed runs of whole groups of 8 (header `groups << 1 | 1`, values
// packed LSB first). The last group is padded with zeros; readers stop at the page's value count.
// Appends to `out`; values must fit in `bit_width` bits (0..32).
void put_rle_bit_packed(std::span<const uint32_t> values, int bit_width, std::vector<uint8_t>& out);

// The same, preceded by its length in bytes as a 4-byte little-endian integer: the form levels take
// in a v1 data page.
void put_rle_bit_packed_with_length(std::span<const uint32_t> values, int bit_width, std::vector<uint8_t>& out);

// ULEB128 varint, as used in the hybrid's run headers.
void put_uleb128(uint64_t value, std::vector<uint8_t>& out);

}  // namespace feeder::parquet::encoder
