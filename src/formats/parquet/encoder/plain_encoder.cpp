#include "formats/parquet/encoder/plain_encoder.h"

#include <bit>
#include <cstring>

namespace feeder::parquet::encoder {
namespace {

static_assert(std::endian::native == std::endian::little, "PLAIN is little-endian; add byte swapping for big-endian hosts");

template <typename T>
void put_plain(std::span<const T> values, std::vector<uint8_t>& out) {
  const size_t start = out.size();
  out.resize(start + values.size_bytes());
  if (!values.empty()) std::memcpy(out.data() + start, values.data(), values.size_bytes());
}

}  // namespace

void put_plain_int32(std::span<const int32_t> values, std::vector<uint8_t>& out) { put_plain(values, out); }

void put_plain_int64(std::span<const int64_t> values, std::vector<uint8_t>& out) { put_plain(values, out); }

void put_plain_fixed(const uint8_t* values, int64_t num_values, int64_t value_bytes, std::vector<uint8_t>& out) {
  const size_t size_bytes = static_cast<size_t>(num_values) * static_cast<size_t>(value_bytes);
  const size_t start = out.size();
  out.resize(start + size_bytes);
  if (size_bytes != 0) std::memcpy(out.data() + start, values, size_bytes);
}

}  // namespace feeder::parquet::encoder
