#include "feeder/formats/idx.h"

#include <cstring>
#include <string_view>
#include <vector>

#include "feeder/error.h"
#include "feeder/io/file.h"

namespace feeder {
namespace {

constexpr uint8_t kUnsignedByteType = 0x08;

// What one IDX kind looks like; the magic is 0x0000 <type> <ndims>, big-endian.
struct IdxKind {
  const char* name;           // "image" / "label", for messages
  const char* element_bytes;  // "pixel bytes" / "label bytes"
  uint8_t num_dims;
};
constexpr IdxKind kImages{"image", "pixel bytes", 3};
constexpr IdxKind kLabels{"label", "label bytes", 1};

uint32_t read_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string hex32(uint32_t value) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08X", value);
  return text;
}

// 3 dims of up to 2^32-1 multiply to less than 2^96, so a 128-bit product never overflows and an
// absurd header is rejected by comparing with the file size, before anything is allocated.
using Wide = unsigned __int128;

std::string wide_to_string(Wide value) {
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(value % 10)));
    value /= 10;
  } while (value != 0);
  return digits;
}

struct IdxHeader {
  std::vector<uint32_t> dims;
  size_t header_bytes = 0;
  uint64_t payload_bytes = 0;  // product of dims; validated to equal the bytes after the header
};

// Validates everything a header claims against the bytes actually present, so callers can copy
// the payload without further checks.
IdxHeader parse_header(std::span<const uint8_t> bytes, const std::string& name, const IdxKind& kind) {
  const size_t header_bytes = 4 + 4 * size_t{kind.num_dims};
  const uint32_t expected_magic = (uint32_t{kUnsignedByteType} << 8) | kind.num_dims;
  const std::string what = "an IDX " + std::string(kind.name) + " file";
  if (bytes.size() < 4)
    throw DataError(name + ": truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the " +
                    std::to_string(header_bytes) + "-byte header of " + what);
  const uint32_t magic = read_be32(bytes.data());
  if (bytes[0] != 0 || bytes[1] != 0 || bytes[3] != kind.num_dims)
    throw DataError(name + ": byte 0: wrong magic " + hex32(magic) + " (expected " + hex32(expected_magic) +
                    " for " + what + ")");
  if (bytes[2] != kUnsignedByteType) {
    char found[5];
    std::snprintf(found, sizeof found, "0x%02X", bytes[2]);
    throw DataError(name + ": byte 2: element type " + found +
                    " is not supported (expected 0x08, unsigned byte)");
  }
  if (bytes.size() < header_bytes)
    throw DataError(name + ": truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the " +
                    std::to_string(header_bytes) + "-byte header of " + what);

  IdxHeader header;
  header.header_bytes = header_bytes;
  Wide product = 1;
  std::string dims_text;
  for (size_t i = 0; i < kind.num_dims; ++i) {
    const size_t offset = 4 + 4 * i;
    const uint32_t dim = read_be32(bytes.data() + offset);
    if (dim == 0)
      throw DataError(name + ": byte " + std::to_string(offset) + ": dimension " + std::to_string(i + 1) + " of " +
                      std::to_string(kind.num_dims) + " is 0; every dimension must be positive");
    header.dims.push_back(dim);
    product *= dim;
    if (i > 0) dims_text += "x";
    dims_text += std::to_string(dim);
  }
  const uint64_t available = bytes.size() - header_bytes;
  const std::string claim = "header says " + (kind.num_dims > 1 ? dims_text + " = " : std::string()) +
                            wide_to_string(product) + " " + kind.element_bytes + " after the " +
                            std::to_string(header_bytes) + "-byte header, file has " + std::to_string(available);
  if (product > available) throw DataError(name + ": truncated: " + claim);
  if (product < available)
    throw DataError(name + ": byte " + std::to_string(header_bytes + static_cast<uint64_t>(product)) + ": " +
                    std::to_string(available - static_cast<uint64_t>(product)) + " trailing bytes: " + claim);
  header.payload_bytes = static_cast<uint64_t>(product);
  return header;
}

ImageStore read_images(std::span<const uint8_t> images, const std::string& images_name, bool labeled) {
  const IdxHeader header = parse_header(images, images_name, kImages);
  const ImageShape shape{1, header.dims[1], header.dims[2]};
  ImageStore store(shape, header.dims[0], labeled);
  // images: (N,1,H,W) uint8, the IDX payload verbatim.
  std::memcpy(store.pixels().data(), images.data() + header.header_bytes, header.payload_bytes);
  return store;
}

}  // namespace

ImageStore read_idx_bytes(std::span<const uint8_t> images, const std::string& images_name) {
  return read_images(images, images_name, /*labeled=*/false);
}

ImageStore read_idx_bytes(std::span<const uint8_t> images, const std::string& images_name,
                          std::span<const uint8_t> labels, const std::string& labels_name) {
  // Both headers are checked before the pixels are copied, so a bad label file costs no allocation.
  const IdxHeader images_header = parse_header(images, images_name, kImages);
  const IdxHeader labels_header = parse_header(labels, labels_name, kLabels);
  if (labels_header.dims[0] != images_header.dims[0])
    throw DataError(labels_name + ": byte 4: " + std::to_string(labels_header.dims[0]) + " labels, but " +
                    images_name + " has " + std::to_string(images_header.dims[0]) + " images");
  ImageStore store = read_images(images, images_name, /*labeled=*/true);
  // Every uint8 value is a valid class index, so labels need no range check.
  const uint8_t* label_bytes = labels.data() + labels_header.header_bytes;
  std::span<int64_t> out = store.labels();
  for (size_t i = 0; i < out.size(); ++i) out[i] = label_bytes[i];
  return store;
}

ImageStore read_idx(const std::filesystem::path& images_path, const std::filesystem::path& labels_path) {
  const std::vector<uint8_t> images = read_file(images_path);
  if (labels_path.empty()) return read_idx_bytes(images, images_path.string());
  const std::vector<uint8_t> labels = read_file(labels_path);
  return read_idx_bytes(images, images_path.string(), labels, labels_path.string());
}

}  // namespace feeder
