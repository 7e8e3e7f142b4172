#include "feeder/formats/dataset_kind.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "feeder/formats/sharded.h"
#include "formats/test_files.h"

namespace feeder {
namespace {

namespace fs = std::filesystem;
using testing::data_error_of;
using testing::TempDir;

DatasetKind kind_of(const fs::path& path) { return dataset_kind(path.string()); }

TEST(DatasetKind, FilesByName) {
  TempDir dir;
  for (const char* name : {"a.csv", "a.csv.gz", "a.parquet", "a.tar", "train-images-idx3-ubyte",
                           "t10k-images-idx3-ubyte.gz", "notes.txt", "set.tar.gz", "SET.TGZ"})
    testing::write_text(dir / name, "");
  EXPECT_EQ(kind_of(dir / "a.csv"), DatasetKind::kCsvFile);
  EXPECT_EQ(kind_of(dir / "a.csv.gz"), DatasetKind::kCsvFile);
  EXPECT_EQ(kind_of(dir / "a.parquet"), DatasetKind::kParquetFile);
  EXPECT_EQ(find_dataset_kind((dir / "notes.txt").string()), std::nullopt);
  EXPECT_EQ(kind_of(dir / "a.tar"), DatasetKind::kTarShards);
  EXPECT_EQ(kind_of(dir / "train-images-idx3-ubyte"), DatasetKind::kIdxFile);
  EXPECT_EQ(kind_of(dir / "t10k-images-idx3-ubyte.gz"), DatasetKind::kIdxFile);
  EXPECT_EQ(data_error_of([&] { kind_of(dir / "notes.txt"); }),
            (dir / "notes.txt").string() +
                ": unknown kind of dataset file; expected .csv, .parquet or IDX images (*-images-idx3-ubyte or "
                "*-images-idx3-ubyte.gz, labels read from *-labels-idx1-ubyte[.gz] beside it)");
  for (const char* name : {"set.tar.gz", "SET.TGZ"})
    EXPECT_NE(data_error_of([&] { kind_of(dir / name); }).find(": a compressed tar: "), std::string::npos) << name;
}

TEST(DatasetKind, GlobsByTheirLastPart) {
  // A glob is a pattern, not a path: nothing need exist yet for its kind to be known.
  EXPECT_EQ(dataset_kind("no/such/dir/part-[0-3].parquet"), DatasetKind::kParquet);
  EXPECT_EQ(dataset_kind("no/such/dir/*"), DatasetKind::kParquet);
  EXPECT_EQ(dataset_kind("shards/train-{0..3}-*.tar"), DatasetKind::kTarShards);
  EXPECT_TRUE(has_glob_chars("a*"));
  EXPECT_TRUE(has_glob_chars("a?"));
  EXPECT_TRUE(has_glob_chars("a[0-3]"));
  EXPECT_FALSE(has_glob_chars("plain.parquet"));
}

TEST(DatasetKind, DirectoriesByWhatTheyHold) {
  TempDir dir;
  const auto make = [&](const std::string& name, std::initializer_list<const char*> files) {
    fs::create_directories(dir / name);
    for (const char* file : files) {
      if (std::string(file).ends_with("/")) fs::create_directories(dir / name / file);
      else testing::write_text(dir / name / file, "");
    }
    return dir / name;
  };
  EXPECT_EQ(kind_of(make("parquet", {"part-0.parquet", "cat/"})), DatasetKind::kParquet);
  EXPECT_EQ(kind_of(make("indexed", {std::string(kShardIndexName).c_str()})), DatasetKind::kParquet);
  EXPECT_EQ(kind_of(make("unfinished", {std::string(kUnfinishedMarker).c_str()})), DatasetKind::kParquet);
  EXPECT_EQ(kind_of(make("parquet_and_tar", {"a.tar", "b.parquet"})), DatasetKind::kParquet);
  EXPECT_EQ(kind_of(make("tars", {"a.tar", "cat/"})), DatasetKind::kTarShards);
  EXPECT_EQ(kind_of(make("idx", {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "cat/"})),
            DatasetKind::kIdxDirectory);
  EXPECT_EQ(kind_of(make("folder", {"cat/", "dog/", "README.txt"})), DatasetKind::kImageFolder);
  // None of these: said, with what an image folder would be.
  EXPECT_EQ(data_error_of([&] { kind_of(make("empty", {})); }),
            (dir / "empty").string() + ": no class folders (an image folder has one folder of images per class: "
                                       "root/<class>/<image>), and no .parquet, index.json, .tar or IDX images files");
  EXPECT_EQ(data_error_of([&] { kind_of(make("flat", {"0.png", "1.jpg"})); }),
            (dir / "flat").string() + ": no class folders (an image folder has one folder of images per class, as "
                                      "torchvision's ImageFolder reads: its images are not in class folders), and "
                                      "no .parquet, index.json, .tar or IDX images files");
  EXPECT_EQ(kind_of(dir / "folder/"), DatasetKind::kImageFolder);
  EXPECT_EQ(data_error_of([&] { kind_of(dir / "absent"); }), (dir / "absent").string() + ": no such file or directory");
}

}  // namespace
}  // namespace feeder
