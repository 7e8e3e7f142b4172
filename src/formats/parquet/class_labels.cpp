#include "feeder/formats/parquet/class_labels.h"

#include <algorithm>
#include <system_error>

#include <nlohmann/json.hpp>

#include "feeder/formats/parquet/row_group_reader.h"
#include "feeder/io/file_system.h"

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
  const FileSystem& file_system = file_system_for(file_or_directory);
  const FileEntry what = file_system.stat(file_or_directory);
  fs::path file = file_or_directory;
  if (what.directory()) {
    std::vector<fs::path> files;
    for (const FileEntry& entry : file_system.list(file_or_directory))
      if (entry.path.extension() == ".parquet" && entry.file()) files.push_back(entry.path);
    if (files.empty()) return {};
    file = *std::min_element(files.begin(), files.end());
  } else if (file.extension() != ".parquet" || !what.file()) {
    return {};
  }
  return class_label_names(ParquetRowGroupReader::open(file).metadata(), label_column);
}

}  // namespace feeder::parquet
