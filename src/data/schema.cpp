#include "feeder/data/schema.h"

namespace feeder {

std::string_view to_string(FieldType type) {
  switch (type) {
    case FieldType::kPixels: return "uint8";
    case FieldType::kEncodedImage: return "encoded image";
    case FieldType::kInt64: return "int64";
    case FieldType::kFloat32: return "float32";
    case FieldType::kFloat64: return "float64";
  }
  return "?";
}

int64_t element_bytes(FieldType type) {
  switch (type) {
    case FieldType::kPixels: return 1;
    case FieldType::kEncodedImage: return 1;  // a byte of the file
    case FieldType::kInt64: return 8;
    case FieldType::kFloat32: return 4;
    case FieldType::kFloat64: return 8;
  }
  return 0;
}

int64_t field_bytes(const Field& field) {
  if (is_variable(field)) return 0;
  int64_t bytes = element_bytes(field.type);
  for (const int64_t extent : field.shape) bytes *= extent;
  return bytes;
}

int64_t fields_bytes(std::span<const Field> fields) {
  int64_t bytes = 0;
  for (const Field& field : fields) bytes += field_bytes(field);
  return bytes;
}

ValueBytes row_value(const Field& field, const uint8_t* data, const int64_t* ends, int64_t row) {
  if (!is_variable(field)) {
    const auto bytes = static_cast<size_t>(field_bytes(field));
    return {data + static_cast<size_t>(row) * bytes, bytes};
  }
  const int64_t element = element_bytes(field.type);
  const int64_t begin = row > 0 ? ends[row - 1] : 0;
  return {data + begin * element, static_cast<size_t>((ends[row] - begin) * element)};
}

const Field* Schema::find(std::string_view name) const {
  for (const Field& field : fields)
    if (field.name == name) return &field;
  return nullptr;
}

std::string to_string(const Schema& schema) {
  std::string text;
  for (const Field& field : schema.fields) {
    text += (text.empty() ? "" : ", ") + field.name + ": " + std::string(to_string(field.type));
    if (field.shape.empty()) continue;
    text += "[";
    for (size_t i = 0; i < field.shape.size(); ++i)
      text += (i ? "," : "") + (field.shape[i] == kAnyLength ? std::string("*") : std::to_string(field.shape[i]));
    text += "]";
  }
  return text;
}

Schema with_label(Schema schema) {
  if (schema.fields.size() < 2 || schema.fields[1].name != "label")
    schema.fields.insert(schema.fields.begin() + 1, Field{"label", FieldType::kInt64, {}});
  return schema;
}

Schema image_schema(const ImageShape& shape, bool encoded, bool labeled, PixelType type) {
  Schema schema;
  const FieldType pixels = type == PixelType::kFloat32 ? FieldType::kFloat32 : FieldType::kPixels;
  if (encoded) schema.fields.push_back({"image", FieldType::kEncodedImage, {}});
  else schema.fields.push_back({"image", pixels, {shape.channels, shape.height, shape.width}});
  if (labeled) schema.fields.push_back({"label", FieldType::kInt64, {}});
  return schema;
}

Schema sample_schema(const ImageShape& shape, bool encoded, bool labeled, std::span<const Field> values, PixelType type) {
  Schema schema = image_schema(shape, encoded, labeled, type);
  schema.fields.insert(schema.fields.end(), values.begin(), values.end());
  return schema;
}

}  // namespace feeder
