#include "feeder/data/schema.h"

namespace feeder {

std::string_view to_string(FieldType type) {
  switch (type) {
    case FieldType::kPixels: return "uint8";
    case FieldType::kEncodedImage: return "encoded image";
    case FieldType::kInt64: return "int64";
    case FieldType::kFloat32: return "float32";
  }
  return "?";
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
    for (size_t i = 0; i < field.shape.size(); ++i) text += (i ? "," : "") + std::to_string(field.shape[i]);
    text += "]";
  }
  return text;
}

Schema image_schema(const ImageShape& shape, bool encoded, bool labeled, PixelType type) {
  Schema schema;
  const FieldType pixels = type == PixelType::kFloat32 ? FieldType::kFloat32 : FieldType::kPixels;
  if (encoded) schema.fields.push_back({"image", FieldType::kEncodedImage, {}});
  else schema.fields.push_back({"image", pixels, {shape.channels, shape.height, shape.width}});
  if (labeled) schema.fields.push_back({"label", FieldType::kInt64, {}});
  return schema;
}

}  // namespace feeder
