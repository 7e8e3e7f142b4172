#include "feeder/formats/parquet/class_labels.h"

#include <algorithm>
#include <system_error>

#include <nlohmann/json.hpp>

#include "feeder/formats/parquet/row_group_reader.h"

namespace feeder::parquet {

std::vector<std::string> class_label_names(const FileMetadata& metadata, const std::string& label_column) {
  for (const KeyValue& kv : metadata.key_values) {
    if (kv.key != "huggingface" || !kv.value) continue;
    const nlohmann::json doc = nlohmann::json::parse(*kv.value, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) return {};
    const nlohmann::json* features = nullptr;
    if (doc.contains("info") && doc["info"].is_object() && doc["info"].contains("features"))
      features = &doc["info"]["features"];
    else if (doc.contains("features"))
      features = &doc["features"];
    if (!features || !features->is_object() || !features->contains(label_column)) return {};
    const nlohmann::json& label = (*features)[label_column];
    if (!label.is_object() || label.value("_type", "") != "ClassLabel" || !label.contains("names") ||
        !label["names"].is_array())
      return {};
    std::vector<std::string> names;
    for (const nlohmann::json& name : label["names"]) {
      if (!name.is_string()) return {};
      names.push_back(name.get<std::string>());
    }
    return names;
  }
  return {};
}

std::vector<std::string> class_label_names(const std::filesystem::path& file_or_directory,
                                           const std::string& label_column) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path file = file_or_directory;
  if (fs::is_directory(file_or_directory, error)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(file_or_directory, error))
      if (entry.path().extension() == ".parquet" && entry.is_regular_file(error)) files.push_back(entry.path());
    if (files.empty()) return {};
    file = *std::min_element(files.begin(), files.end());
  } else if (file.extension() != ".parquet" || !fs::is_regular_file(file, error)) {
    return {};
  }
  return class_label_names(ParquetRowGroupReader::open(file).metadata(), label_column);
}

}  // namespace feeder::parquet
