#include "formats/parquet/detail/image_columns.h"

#include <cmath>
#include <cstdio>
#include <algorithm>

#include "feeder/error.h"
#include "feeder/formats/parquet/writer.h"
#include "formats/parquet/detail/value_columns.h"

namespace feeder::parquet::detail {

namespace {

std::string type_text(const ColumnSchema& column) {
  return column.annotation.empty() ? to_string(column.physical_type) : to_string(column.physical_type) + " " + column.annotation;
}

constexpr const char* kNumberTypes = "INT32, INT64, FLOAT or DOUBLE";

ImageShape infer_shape(const FileMetadata& meta, const std::string& name, int64_t num_pixels) {
  // feeder's writer records the shape as "CxHxW"; trust it when it matches the pixel count.
  for (const KeyValue& kv : meta.key_values) {
    if (kv.key != kImageShapeKey || !kv.value) continue;
    long long c = 0, h = 0, w = 0, product = 0;
    if (std::sscanf(kv.value->c_str(), "%lldx%lldx%lld", &c, &h, &w) == 3 && c > 0 && h > 0 && w > 0 &&
        !__builtin_mul_overflow(c, h, &product) && !__builtin_mul_overflow(product, w, &product) &&
        product == num_pixels) {
      return ImageShape{c, h, w};
    }
  }
  const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(num_pixels))));
  if (num_pixels > 0 && side * side == num_pixels) return ImageShape{1, side, side};
  throw DataError(name + ": " + std::to_string(num_pixels) +
                  " pixels per image is not a square; give the image shape (C,H,W) explicitly");
}

// "'p0', 'p1', ..., 'score', 'count'": the columns' names, the middle left out of a long list.
std::string quoted_names(const FileMetadata& meta, const std::vector<int64_t>& idx) {
  std::string text;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx.size() > 8 && i == 2) {
      text += ", ...";
      i = idx.size() - 4;
      continue;
    }
    text += (text.empty() ? "'" : ", '") + meta.columns[static_cast<size_t>(idx[i])].name + "'";
  }
  return text;
}

// The label column's index, or -1 when the file has none (an unlabeled set).
int64_t find_label_column(const FileMetadata& meta, const std::string& name, const std::string& label_column) {
  const int64_t label_idx = meta.column_index(label_column);
  if (label_idx >= 0 && !is_number_column(meta.columns[static_cast<size_t>(label_idx)])) {
    throw DataError(name + ": label column '" + label_column + "' is " +
                    type_text(meta.columns[static_cast<size_t>(label_idx)]) + ", expected " + kNumberTypes);
  }
  return label_idx;
}

// A list's element or a struct's field: never a pixel or a label.
bool is_nested(const ColumnSchema& column) { return column.path.size() > 1 || column.repetition == Repetition::kRepeated; }

bool is_value_column(const ImageColumns& columns, int64_t idx) {
  return std::find(columns.value_idx.begin(), columns.value_idx.end(), idx) != columns.value_idx.end();
}

// The columns named as values (ParquetImageOptions::value_columns), each a number column.
std::vector<int64_t> find_value_columns(const FileMetadata& meta, const std::string& name,
                                        const ParquetImageOptions& options) {
  std::vector<int64_t> found;
  for (const std::string& value_name : options.value_columns) {
    const int64_t idx = find_field_column(meta, value_name);
    if (idx < 0) {
      std::string names;
      for (const ColumnSchema& column : meta.columns) {
        if (names.size() > 200) {
          names += ", ...";
          break;
        }
        names += (names.empty() ? "'" : ", '") + column.name + "'";
      }
      throw DataError(name + ": no column named '" + value_name + "' to read as a field (its columns: " + names + ")");
    }
    if (idx == meta.column_index(options.label_column))
      throw DataError(name + ": column '" + value_name + "' is the label column; a field is another column");
    if (std::find(found.begin(), found.end(), idx) != found.end())
      throw DataError(name + ": column '" + value_name + "' is named twice as a field");
    found.push_back(idx);
  }
  return found;
}

// Every number column but the label, in file order; failing that, the one FIXED_LEN_BYTE_ARRAY
// column other than the label.
void choose_default_columns(const FileMetadata& meta, const std::string& name, ImageColumns& columns) {
  for (int64_t i = 0; i < static_cast<int64_t>(meta.columns.size()); ++i) {
    const ColumnSchema& column = meta.columns[static_cast<size_t>(i)];
    if (i != columns.label_idx && !is_value_column(columns, i) && is_number_column(column) && !is_nested(column))
      columns.pixel_idx.push_back(i);
  }
  if (!columns.pixel_idx.empty()) return;
  for (int64_t i = 0; i < static_cast<int64_t>(meta.columns.size()); ++i) {
    if (i == columns.label_idx || meta.columns[static_cast<size_t>(i)].physical_type != PhysicalType::kFixedLenByteArray) {
      continue;
    }
    if (columns.image_idx >= 0) throw DataError(name + ": several FIXED_LEN_BYTE_ARRAY columns; name the image column");
    columns.image_idx = i;
  }
}

void choose_columns(const FileMetadata& meta, const std::string& name, const ParquetImageOptions& options,
                    ImageColumns& columns) {
  if (!options.pixel_columns.empty()) {
    for (const std::string& pixel_name : options.pixel_columns) {
      const int64_t idx = meta.column_index(pixel_name);
      if (idx < 0) throw DataError(name + ": no pixel column named '" + pixel_name + "'");
      if (is_value_column(columns, idx))
        throw DataError(name + ": column '" + pixel_name + "' is named both as pixels and as a field");
      const ColumnSchema& column = meta.columns[static_cast<size_t>(idx)];
      if (!is_number_column(column)) {
        throw DataError(name + ": pixel column '" + pixel_name + "' is " + type_text(column) + ", expected " + kNumberTypes);
      }
      columns.pixel_idx.push_back(idx);
    }
  } else if (options.image_column) {
    columns.image_idx = meta.column_index(*options.image_column);
    if (columns.image_idx < 0) throw DataError(name + ": no image column named '" + *options.image_column + "'");
  } else {
    choose_default_columns(meta, name, columns);
  }
  if (columns.image_idx >= 0 &&
      meta.columns[static_cast<size_t>(columns.image_idx)].physical_type != PhysicalType::kFixedLenByteArray) {
    throw DataError(name + ": image column '" + meta.columns[static_cast<size_t>(columns.image_idx)].name +
                    "' is not FIXED_LEN_BYTE_ARRAY");
  }
  if (columns.pixel_idx.empty() && columns.image_idx < 0) {
    throw DataError(name + ": no pixel columns (" + kNumberTypes + " columns besides '" + options.label_column +
                    "') and no FIXED_LEN_BYTE_ARRAY image column");
  }
}

// A column of encoded image files: BYTE_ARRAY without a text annotation (images are bytes, not text).
bool is_binary_column(const ColumnSchema& column) {
  return column.physical_type == PhysicalType::kByteArray && column.annotation != "STRING" &&
         column.annotation != "UTF8" && column.annotation != "JSON" && column.annotation != "ENUM";
}

// The column of encoded images (an image file's bytes per row), or -1 when the file holds pixels:
// the column named by options.image_column when it is BYTE_ARRAY (a struct's name stands for its
// `bytes` field: Hugging Face datasets writes `image` as a struct of `bytes` and `path`); else, when
// the file has no number columns besides the label and no pixel columns are named, its one binary
// column, or `image.bytes` among several.
int64_t find_encoded_column(const FileMetadata& meta, const std::string& name, const ParquetImageOptions& options,
                            const ImageColumns& columns) {
  const int64_t label_idx = columns.label_idx;
  if (!options.pixel_columns.empty()) return -1;
  if (options.image_column) {
    int64_t idx = meta.column_index(*options.image_column);
    if (idx < 0) idx = meta.column_index(*options.image_column + ".bytes");
    if (idx < 0 || meta.columns[static_cast<size_t>(idx)].physical_type != PhysicalType::kByteArray) return -1;
    return idx;
  }
  std::vector<int64_t> binary;
  for (int64_t i = 0; i < static_cast<int64_t>(meta.columns.size()); ++i) {
    const ColumnSchema& column = meta.columns[static_cast<size_t>(i)];
    if (i == label_idx || is_value_column(columns, i)) continue;
    if (is_number_column(column) || column.physical_type == PhysicalType::kFixedLenByteArray) return -1;
    if (is_binary_column(column)) binary.push_back(i);
  }
  if (binary.size() == 1) return binary.front();
  const int64_t hf = meta.column_index("image.bytes");
  if (hf >= 0 && is_binary_column(meta.columns[static_cast<size_t>(hf)])) return hf;
  if (binary.size() > 1) {
    std::string names;
    for (const int64_t i : binary) names += (names.empty() ? "'" : ", '") + meta.columns[static_cast<size_t>(i)].name + "'";
    throw DataError(name + ": several binary columns (" + names + "); name the image column");
  }
  return -1;
}

}  // namespace

bool is_number_column(const ColumnSchema& column) {
  switch (column.physical_type) {
    case PhysicalType::kInt32:
    case PhysicalType::kInt64:
    case PhysicalType::kFloat:
    case PhysicalType::kDouble:
      return column.annotation.empty() || column.int_bit_width > 0;
    default:
      return false;
  }
}

ImageColumns resolve_image_columns(const FileMetadata& meta, const std::string& name, const ParquetImageOptions& options) {
  ImageColumns columns;
  columns.label_idx = find_label_column(meta, name, options.label_column);
  columns.value_idx = find_value_columns(meta, name, options);
  columns.encoded_idx = find_encoded_column(meta, name, options, columns);
  if (columns.encoded_idx >= 0) {
    // Nested columns are fine where they are not lists: a struct's fields are columns of their own.
    for (const int64_t idx : {columns.encoded_idx, columns.label_idx}) {
      if (idx >= 0 && meta.columns[static_cast<size_t>(idx)].max_repetition_level > 0) {
        throw DataError(name + ": column '" + meta.columns[static_cast<size_t>(idx)].name +
                        "' is repeated (a list); feeder reads one image and one label per row");
      }
    }
    columns.shape = ImageShape{0, 0, 0};  // no shape: each image has its own size
    return columns;
  }
  columns.label_idx = find_label_column(meta, name, options.label_column);
  choose_columns(meta, name, options, columns);
  // Pixels and the label are top-level columns; a list or a struct's field is read only as a field.
  std::vector<int64_t> chosen = columns.pixel_idx;
  chosen.push_back(columns.label_idx);
  chosen.push_back(columns.image_idx);
  for (const int64_t idx : chosen) {
    if (idx >= 0 && is_nested(meta.columns[static_cast<size_t>(idx)])) {
      throw DataError(name + ": nested schema not supported (column '" + meta.columns[static_cast<size_t>(idx)].name +
                      "'); pixels and labels are top-level primitive columns, and a list is read as a field");
    }
  }
  const int64_t num_pixels = columns.image_idx >= 0
                                 ? meta.columns[static_cast<size_t>(columns.image_idx)].type_length_bytes
                                 : static_cast<int64_t>(columns.pixel_idx.size());
  try {
    columns.shape = options.shape ? *options.shape : infer_shape(meta, name, num_pixels);
  } catch (const DataError& e) {
    if (!options.pixel_columns.empty() || columns.image_idx >= 0) throw;
    throw DataError(std::string(e.what()) + ", or name the columns that are not pixels as fields (every number " +
                    "column besides the label was taken for a pixel: " + quoted_names(meta, columns.pixel_idx) + ")");
  }
  if (columns.shape.num_pixels() != num_pixels) {
    throw DataError(name + ": images have " + std::to_string(num_pixels) + " pixels but the shape " +
                    to_string(columns.shape) + " has " + std::to_string(columns.shape.num_pixels()));
  }
  return columns;
}

void check_decoded_size(int64_t num_rows, const ImageShape& shape, int64_t max_decoded_bytes, const std::string& context) {
  const int64_t num_pixels = shape.num_pixels();
  if (num_rows > max_decoded_bytes / (num_pixels + 8)) {
    throw DataError(context + ": " + std::to_string(num_rows) + " images of " + std::to_string(num_pixels) +
                    " pixels exceed the limit of " + std::to_string(max_decoded_bytes) + " bytes (max_decoded_bytes)");
  }
}

namespace {

// ", fields weight FLOAT, age INT64" for the value columns, "" without them.
std::string describe_value_columns(const FileMetadata& meta, const ImageColumns& columns) {
  std::string text;
  for (const int64_t idx : columns.value_idx) {
    const ColumnSchema& column = meta.columns[static_cast<size_t>(idx)];
    if (column.max_repetition_level == 0) {
      text += (text.empty() ? ", fields " : ", ") + column.name + " " + type_text(column);
    } else {  // "embedding FLOAT[4]"
      text += (text.empty() ? ", fields " : ", ") + column.path.front() + " " + type_text(column) + "[" +
              std::to_string(list_values_per_row(meta, idx)) + "]";
    }
  }
  return text;
}

std::string describe_image_and_label(const FileMetadata& meta, const ImageColumns& columns);

}  // namespace

std::string describe_image_columns(const FileMetadata& meta, const ImageColumns& columns) {
  return describe_image_and_label(meta, columns) + describe_value_columns(meta, columns);
}

namespace {

std::string describe_image_and_label(const FileMetadata& meta, const ImageColumns& columns) {
  std::string text = columns.label_idx >= 0
                         ? "label " + type_text(meta.columns[static_cast<size_t>(columns.label_idx)])
                         : std::string("no label");
  if (columns.encoded_idx >= 0) {
    return text + ", encoded images in '" + meta.columns[static_cast<size_t>(columns.encoded_idx)].name + "' BYTE_ARRAY";
  }
  if (columns.image_idx >= 0) {
    const ColumnSchema& image = meta.columns[static_cast<size_t>(columns.image_idx)];
    return text + ", image column '" + image.name + "' FIXED_LEN_BYTE_ARRAY(" + std::to_string(image.type_length_bytes) + ")";
  }
  const ColumnSchema& first = meta.columns[static_cast<size_t>(columns.pixel_idx.front())];
  const ColumnSchema& last = meta.columns[static_cast<size_t>(columns.pixel_idx.back())];
  text += ", " + std::to_string(columns.pixel_idx.size()) + " pixel columns " + first.name;
  if (columns.pixel_idx.size() > 1) text += ".." + last.name;
  // Types in order of first appearance, with counts when they are mixed.
  std::vector<std::pair<std::string, int64_t>> types;
  for (const int64_t idx : columns.pixel_idx) {
    const std::string type = type_text(meta.columns[static_cast<size_t>(idx)]);
    auto it = std::find_if(types.begin(), types.end(), [&](const auto& entry) { return entry.first == type; });
    if (it == types.end()) types.emplace_back(type, 1);
    else ++it->second;
  }
  if (types.size() == 1) return text + " " + types.front().first;
  text += " (";
  for (size_t i = 0; i < types.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(types[i].second) + " " + types[i].first;
  }
  return text + ")";
}

}  // namespace

}  // namespace feeder::parquet::detail
