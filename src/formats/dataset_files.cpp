#include "feeder/formats/dataset_files.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "feeder/error.h"
#include "feeder/io/file_system.h"
#include "feeder/formats/csv.h"
#include "feeder/formats/dataset_kind.h"
#include "feeder/formats/idx.h"
#include "feeder/formats/parquet/reader.h"

namespace feeder {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kIdxImagesTag = "-images-idx3-ubyte";
constexpr std::string_view kIdxImagesPart = "images-idx3";
constexpr std::string_view kIdxLabelsPart = "labels-idx1";
constexpr std::string_view kGz = ".gz";

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

bool is_idx_images_name(std::string_view name) {
  if (ends_with(name, kGz)) name.remove_suffix(kGz.size());
  return ends_with(name, kIdxImagesTag);
}

fs::path idx_labels_name(const fs::path& images) {
  std::string name = images.filename().string();
  if (ends_with(name, kGz)) name.resize(name.size() - kGz.size());
  const size_t at = name.rfind(kIdxImagesPart);
  name.replace(at, kIdxImagesPart.size(), kIdxLabelsPart);
  return images.parent_path() / name;
}

fs::path find_idx_labels(const fs::path& images) {
  const std::string name = idx_labels_name(images).filename().string();
  const bool gz = ends_with(images.filename().string(), kGz);
  const std::string candidates[] = {gz ? name + std::string(kGz) : name, gz ? name : name + std::string(kGz)};
  for (const std::string& candidate : candidates) {
    const fs::path path = images.parent_path() / candidate;
    if (file_system_for(path).stat(path).file()) return path;
  }
  return {};
}

ImageStore load_images(const fs::path& file) {
  const DatasetKind kind = dataset_file_kind(file.string());
  switch (kind) {
    case DatasetKind::kCsvFile: return read_csv(file);
    case DatasetKind::kParquetFile: return parquet::read_parquet_images(file);
    case DatasetKind::kIdxFile: return read_idx(file, find_idx_labels(file));
    default:
      throw DataError(file.string() + ": " + std::string(to_string(kind)) +
                      " are not read into memory as one file; open the set instead");
  }
}

fs::path find_split_file(const fs::path& dir, Split split) {
  const std::string split_name = split == Split::kTrain ? "train" : "test";
  const std::string idx_prefix = split == Split::kTrain ? "train" : "t10k";
  const FileSystem& files = file_system_for(dir);
  if (!files.stat(dir).directory()) throw DataError(dir.string() + ": no such data directory");

  // In order of preference: IDX is what the Debian package ships; Parquet before CSV because it is
  // smaller and typed.
  const std::vector<std::string> exact = {
      idx_prefix + "-images-idx3-ubyte.gz", idx_prefix + "-images-idx3-ubyte", split_name + ".parquet",
      split_name + ".csv"};
  for (const std::string& name : exact) {
    const fs::path path = dir / name;
    if (files.stat(path).file()) return path;
  }
  // Kaggle names such as fashion-mnist_train.csv; sorted so that the choice does not depend on the
  // directory order.
  const std::string suffix = "_" + split_name + ".csv";
  std::vector<fs::path> matches;
  for (const FileEntry& entry : files.list(dir)) {
    const std::string name = entry.path.filename().string();
    if (name.size() > suffix.size() && ends_with(name, suffix) && entry.file()) matches.push_back(entry.path);
  }
  if (!matches.empty()) return *std::min_element(matches.begin(), matches.end());

  std::string looked_for;
  for (const std::string& name : exact) looked_for += name + ", ";
  looked_for += "*" + suffix;
  // Splits held as folders (image folders, sharded sets: train/ and test/ or val/) are given by name.
  std::string hint;
  if (files.stat(dir / "train").directory()) {
    const char* test = !files.stat(dir / "test").directory() && files.stat(dir / "val").directory() ? "val" : "test";
    hint = "; for image folders or sharded sets give each by name: --train " + (dir / "train").string() + " --test " +
           (dir / test).string();
  }
  throw DataError(dir.string() + ": no " + split_name + " set found (looked for " + looked_for + ")" + hint);
}

}  // namespace feeder
