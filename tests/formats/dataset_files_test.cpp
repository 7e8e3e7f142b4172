#include "feeder/formats/dataset_files.h"

#include <gtest/gtest.h>

#include "app/data_dir.h"
#include "formats/test_files.h"

namespace feeder {
namespace {

using testing::data_error_of;
using testing::TempDir;

std::vector<uint8_t> idx_file(uint32_t magic, const std::vector<uint32_t>& dims, size_t payload_bytes, uint8_t value) {
  std::vector<uint32_t> words{magic};
  words.insert(words.end(), dims.begin(), dims.end());
  std::vector<uint8_t> bytes;
  for (uint32_t word : words)
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(word >> shift));
  bytes.insert(bytes.end(), payload_bytes, value);
  return bytes;
}

// Two 2x2 images of value 5, labelled 3.
std::vector<uint8_t> tiny_images() { return idx_file(0x00000803, {2, 2, 2}, 8, 5); }
std::vector<uint8_t> tiny_labels() { return idx_file(0x00000801, {2}, 2, 3); }

TEST(DatasetFilesTest, LoadsCsvByExtension) {
  TempDir dir;
  testing::write_text(dir / "data.csv", "label,pixel1\n4,200\n");
  const ImageStore store = load_images(dir / "data.csv");
  EXPECT_EQ(store.shape(), (ImageShape{1, 1, 1}));
  EXPECT_EQ(store.label(0), 4);
  EXPECT_EQ(store.image(0)[0], 200);
}

TEST(DatasetFilesTest, LoadsIdxWithGzipLabelsBeside) {
  TempDir dir;
  testing::write_gzip(dir / "train-images-idx3-ubyte.gz", tiny_images());
  testing::write_gzip(dir / "train-labels-idx1-ubyte.gz", tiny_labels());
  const ImageStore store = load_images(dir / "train-images-idx3-ubyte.gz");
  EXPECT_EQ(store.size(), 2);
  EXPECT_TRUE(store.labeled());
  EXPECT_EQ(store.label(1), 3);
}

TEST(DatasetFilesTest, LoadsIdxLabelsWithOtherCompression) {
  TempDir dir;
  testing::write_gzip(dir / "t10k-images-idx3-ubyte.gz", tiny_images());
  testing::write_bytes(dir / "t10k-labels-idx1-ubyte", tiny_labels());
  EXPECT_EQ(load_images(dir / "t10k-images-idx3-ubyte.gz").label(0), 3);
}

TEST(DatasetFilesTest, LoadsIdxWithoutLabelsFileAsUnlabeled) {
  TempDir dir;
  testing::write_bytes(dir / "x-images-idx3-ubyte", tiny_images());
  const ImageStore store = load_images(dir / "x-images-idx3-ubyte");
  EXPECT_FALSE(store.labeled());
  EXPECT_EQ(store.label(0), kNoLabel);
}

TEST(DatasetFilesTest, RejectsUnknownKind) {
  TempDir dir;
  testing::write_text(dir / "data.txt", "1,2\n");
  EXPECT_EQ(data_error_of([&] { load_images(dir / "data.txt"); }),
            (dir / "data.txt").string() +
                ": unknown kind of dataset file; expected .csv, .parquet or IDX images (*-images-idx3-ubyte or "
                "*-images-idx3-ubyte.gz, labels read from *-labels-idx1-ubyte[.gz] beside it)");
}

TEST(DatasetFilesTest, PrefersIdxOverOtherFiles) {
  TempDir dir;
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-images-idx3-ubyte", "train.parquet", "train.csv",
                           "fashion-mnist_train.csv"})
    testing::write_text(dir / name, "");
  EXPECT_EQ(find_split_file(dir.path(), Split::kTrain), dir / "train-images-idx3-ubyte.gz");
}

TEST(DatasetFilesTest, FindsT10kFilesForTestSplit) {
  TempDir dir;
  testing::write_text(dir / "train-images-idx3-ubyte", "");
  testing::write_text(dir / "t10k-images-idx3-ubyte", "");
  EXPECT_EQ(find_split_file(dir.path(), Split::kTest), dir / "t10k-images-idx3-ubyte");
}

TEST(DatasetFilesTest, PrefersParquetOverCsv) {
  TempDir dir;
  testing::write_text(dir / "test.csv", "");
  testing::write_text(dir / "test.parquet", "");
  EXPECT_EQ(find_split_file(dir.path(), Split::kTest), dir / "test.parquet");
}

TEST(DatasetFilesTest, PrefersPlainCsvOverKaggleName) {
  TempDir dir;
  testing::write_text(dir / "mnist_train.csv", "");
  testing::write_text(dir / "train.csv", "");
  EXPECT_EQ(find_split_file(dir.path(), Split::kTrain), dir / "train.csv");
}

TEST(DatasetFilesTest, FindsKaggleCsvName) {
  TempDir dir;
  testing::write_text(dir / "fashion-mnist_train.csv", "");
  testing::write_text(dir / "fashion-mnist_test.csv", "");
  EXPECT_EQ(find_split_file(dir.path(), Split::kTrain), dir / "fashion-mnist_train.csv");
  EXPECT_EQ(find_split_file(dir.path(), Split::kTest), dir / "fashion-mnist_test.csv");
}

TEST(DatasetFilesTest, ListsWhatWasLookedForWhenNothingMatches) {
  TempDir dir;
  testing::write_text(dir / "train.csv", "");
  EXPECT_EQ(data_error_of([&] { find_split_file(dir.path(), Split::kTest); }),
            dir.path().string() +
                ": no test set found (looked for t10k-images-idx3-ubyte.gz, t10k-images-idx3-ubyte, test.parquet, "
                "test.csv, *_test.csv)");
}

TEST(DatasetFilesTest, SplitsHeldAsFoldersAreToBeGivenByName) {
  TempDir dir;
  std::filesystem::create_directories(dir / "train" / "cat");
  std::filesystem::create_directories(dir / "val" / "cat");
  EXPECT_EQ(data_error_of([&] { find_split_file(dir.path(), Split::kTrain); }),
            dir.path().string() +
                ": no train set found (looked for train-images-idx3-ubyte.gz, train-images-idx3-ubyte, train.parquet, "
                "train.csv, *_train.csv); for image folders or sharded sets give each by name: --train " +
                (dir / "train").string() + " --test " + (dir / "val").string());
}

TEST(DataDirTest, InstallHintOnlyForTheDefaultDirectory) {
  EXPECT_EQ(cli::missing_data_hint("/usr/share/datasets/./fashion-mnist"),
            "; install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist) or pass "
            "--data DIR / --train FILE --test FILE");
  EXPECT_EQ(cli::missing_data_hint("/usr/share/datasets/mnist"), "");
}

TEST(DataDirTest, OtherDirectoriesKeepTheFormatLayersMessage) {
  TempDir dir;
  EXPECT_EQ(data_error_of([&] { cli::find_data_split(dir / "absent", Split::kTrain); }),
            (dir / "absent").string() + ": no such data directory");
  testing::write_text(dir / "train.csv", "1,2\n");
  EXPECT_EQ(cli::find_data_split(dir.path(), Split::kTrain), dir / "train.csv");
}

TEST(DatasetFilesTest, RejectsMissingDirectory) {
  TempDir dir;
  EXPECT_EQ(data_error_of([&] { find_split_file(dir / "absent", Split::kTrain); }),
            (dir / "absent").string() + ": no such data directory");
}

TEST(DatasetFilesTest, FindsDebianFashionMnist) {
  const std::filesystem::path& dir = cli::kDefaultDataDir;
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " is absent";
  EXPECT_EQ(find_split_file(dir, Split::kTrain), dir / "train-images-idx3-ubyte.gz");
  const ImageStore test = load_images(find_split_file(dir, Split::kTest));
  EXPECT_EQ(test.size(), 10000);
  EXPECT_TRUE(test.labeled());
}

}  // namespace
}  // namespace feeder
