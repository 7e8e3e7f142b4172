#pragma once

// What one sample holds: named fields, each of a type and a per-sample shape. A set of images and
// labels is the schema {image, label}; a batch holds the same fields, stacked.
//
// Thread safety: a value type.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "feeder/store/image_store.h"

namespace feeder {

enum class FieldType {
  kPixels,        // uint8 pixels of a fixed shape (C,H,W)
  kEncodedImage,  // an image file's bytes, each of its own length, decoded by a per-sample stage
  kInt64,         // an integer per sample (a label)
  kFloat32,       // floats per sample: a scalar (a weight, a target), or values of a fixed shape
  kFloat64,       // doubles per sample, as kFloat32 (a DOUBLE column stays double, as pandas reads it)
};

std::string_view to_string(FieldType type);

// The bytes of one element of a field of this type (an encoded image's element is a byte of its
// file). The one switch over FieldType that the buffers, the blocks and the budget size fields by.
int64_t element_bytes(FieldType type);

// The extent of a sequence field's one dimension: each sample holds its own number of values.
inline constexpr int64_t kAnyLength = -1;

struct Field {
  std::string name;
  FieldType type = FieldType::kInt64;
  // Per sample: {C, H, W} for pixels, {} for a scalar or an encoded image, {n} for an array of n
  // values, {kAnyLength} for a sequence (numbers, as many as each sample has).
  std::vector<int64_t> shape;

  bool operator==(const Field&) const = default;
};

// Whether each sample holds its own number of the field's values (shape {kAnyLength}).
inline bool is_sequence(const Field& field) { return field.shape.size() == 1 && field.shape[0] == kAnyLength; }
// Whether each sample holds its own number of bytes of the field (an encoded image, a sequence):
// its regions then carry an end per row (ValueRegion::ends).
inline bool is_variable(const Field& field) { return field.type == FieldType::kEncodedImage || is_sequence(field); }

// The bytes one sample's value of a fixed-size field takes: element_bytes times its shape's
// elements; 0 for a field of no fixed size (is_variable: a sequence, an encoded image).
int64_t field_bytes(const Field& field);
// The sum of field_bytes over `fields`.
int64_t fields_bytes(std::span<const Field> fields);

// Where a block's read puts one field's values: a fixed-size field's row r at
// data + r * field_bytes; a sequence's values back to back in data[0, capacity) bytes, row r's
// ending at element ends[r] (counted from the block's first value).
struct ValueRegion {
  uint8_t* data = nullptr;
  int64_t capacity = 0;
  int64_t* ends = nullptr;  // sequences
};

// One sample's value of a field, as bytes: field_bytes of them for a fixed-size field, its
// values' for a sequence.
using ValueBytes = std::span<const uint8_t>;

// Row `row`'s value of field `field` in values laid out as a ValueRegion's (`ends` for a field of
// no fixed size): a block's region filled by a read, or a set's values in memory.
ValueBytes row_value(const Field& field, const uint8_t* data, const int64_t* ends, int64_t row);
inline ValueBytes row_value(const Field& field, const ValueRegion& region, int64_t row) {
  return row_value(field, region.data, region.ends, row);
}

struct Schema {
  std::vector<Field> fields;

  // The field of this name, or nullptr.
  const Field* find(std::string_view name) const;
  bool operator==(const Schema&) const = default;
};

// `schema` with an int64 "label" second when it has none: what the loader's blocks and batches
// hold (an unlabeled set's labels are kNoLabel).
Schema with_label(Schema schema);

// "image: uint8[1,28,28], label: int64".
std::string to_string(const Schema& schema);

// The schema of a set of images and (when `labeled`) labels: `image` as pixels of `shape`, or as
// encoded images when `encoded` (float32 values of `shape` for a store of floats); `label` an int64.
Schema image_schema(const ImageShape& shape, bool encoded, bool labeled, PixelType type = PixelType::kUint8);

// An image schema followed by `values`: the named values of each sample besides the image and the
// label (a per-sample weight, a target), each of a fixed size.
Schema sample_schema(const ImageShape& shape, bool encoded, bool labeled, std::span<const Field> values,
                     PixelType type = PixelType::kUint8);

}  // namespace feeder
