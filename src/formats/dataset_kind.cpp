#include "feeder/formats/dataset_kind.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <vector>

#include "feeder/error.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/formats/sharded.h"
#include "feeder/image/image_folder.h"
#include "feeder/io/file_system.h"

namespace feeder {
namespace {

namespace fs = std::filesystem;

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// A directory's kind from one listing of it (see dataset_kind for the precedence).
DatasetKind directory_kind(const FileSystem& files, const fs::path& directory) {
  bool tar = false, idx = false, subdirectory = false, images = false;
  for (const FileEntry& entry : files.list(directory)) {
    const std::string name = entry.path.filename().string();
    if (name.ends_with(".parquet") || name == kShardIndexName || name == kUnfinishedMarker) return DatasetKind::kParquet;
    tar = tar || name.ends_with(".tar");
    idx = idx || is_idx_images_name(name);
    subdirectory = subdirectory || entry.directory();
    images = images || is_image_file_name(name);
  }
  if (tar) return DatasetKind::kTarShards;
  if (idx) return DatasetKind::kIdxDirectory;
  if (subdirectory) return DatasetKind::kImageFolder;
  // Images straight in the directory are a likely mistake: say what the layout is.
  throw DataError(directory.string() + ": no class folders (an image folder has one folder of images per class" +
                  (images ? ", as torchvision's ImageFolder reads: its images are not in class folders"
                          : ": root/<class>/<image>") +
                  "), and no .parquet, " + std::string(kShardIndexName) + ", .tar or IDX images files");
}

}  // namespace

std::string_view to_string(DatasetKind kind) {
  switch (kind) {
    case DatasetKind::kIdxFile: return "IDX file";
    case DatasetKind::kIdxDirectory: return "directory of IDX files";
    case DatasetKind::kCsvFile: return "CSV file";
    case DatasetKind::kParquetFile: return "Parquet file";
    case DatasetKind::kParquet: return "Parquet set";
    case DatasetKind::kTarShards: return "tar shards";
    case DatasetKind::kImageFolder: return "image folder";
    case DatasetKind::kArrays: return "arrays in memory";
  }
  return "dataset";
}

bool has_glob_chars(std::string_view text) { return text.find_first_of("*?[") != std::string_view::npos; }

namespace {

std::optional<DatasetKind> file_kind_by_name(const std::string& name) {
  // Extensions as written (a set's files are named by programs).
  if (name.ends_with(".tar")) return DatasetKind::kTarShards;
  if (name.ends_with(".parquet")) return DatasetKind::kParquetFile;
  if (name.ends_with(".csv") || name.ends_with(".csv.gz")) return DatasetKind::kCsvFile;
  if (is_idx_images_name(name)) return DatasetKind::kIdxFile;
  return std::nullopt;
}

}  // namespace

DatasetKind dataset_file_kind(const std::string& path) {
  if (const auto kind = file_kind_by_name(fs::path(path).filename().string())) return *kind;
  const std::string lower = lowercase(fs::path(path).filename().string());
  for (const std::string_view compressed : {".tar.gz", ".tgz", ".tar.xz", ".tar.bz2", ".tar.zst"})
    if (lower.ends_with(compressed))
      throw DataError(path + ": a compressed tar: tar shards are read as uncompressed .tar files (a " +
                      "compressed one cannot be read from the middle, and images are compressed already); " +
                      "decompress it first");
  throw DataError(path +
                  ": unknown kind of dataset file; expected .csv, .parquet or IDX images "
                  "(*-images-idx3-ubyte or *-images-idx3-ubyte.gz, labels read from *-labels-idx1-ubyte[.gz] beside it)");
}

std::optional<DatasetKind> find_dataset_kind(const std::string& spec) {
  const fs::path path(spec);
  const std::string last = path.filename().string();
  if (has_glob_chars(last)) return last.ends_with(".tar") ? DatasetKind::kTarShards : DatasetKind::kParquet;
  const FileSystem& files = file_system_for(path);
  const FileEntry entry = files.stat(path);
  if (entry.kind == FileKind::kMissing) throw DataError(spec + ": no such file or directory");
  if (entry.directory()) return directory_kind(files, path);
  return file_kind_by_name(last);
}

DatasetKind dataset_kind(const std::string& spec) {
  if (const auto kind = find_dataset_kind(spec)) return *kind;
  return dataset_file_kind(spec);  // throws, saying what feeder reads
}

}  // namespace feeder
