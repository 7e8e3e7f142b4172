#pragma once

// Class names stored with a Parquet set. Hugging Face `datasets` writes its features as JSON under
// the footer's `huggingface` key: {"info": {"features": {"label": {"_type": "ClassLabel",
// "names": ["cat", "dog", ...]}, ...}}} (older files: the features at the top level); label i is
// names[i], as torchvision's ImageFolder.classes.

#include <filesystem>
#include <string>
#include <vector>

#include "feeder/formats/parquet/metadata.h"

namespace feeder::parquet {

// The names of `label_column` when the file's `huggingface` metadata describes it as a ClassLabel;
// empty otherwise (no such key, another type, metadata that is not JSON: the names are a
// convenience, never a reason to refuse a file).
std::vector<std::string> class_label_names(const FileMetadata& metadata, const std::string& label_column = "label");

// The same for a Parquet file or a directory of them (the first *.parquet by name: every shard of a
// set carries the same features), reading only the footer. Empty for anything else. Throws
// DataError for a file that is not Parquet.
std::vector<std::string> class_label_names(const std::filesystem::path& file_or_directory,
                                           const std::string& label_column = "label");

}  // namespace feeder::parquet
