// open_train_test: each set of a training run read into memory or streamed by its decoded size and
// its share of the budget, with what it chose said in words.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "feeder/error.h"
#include "feeder/formats/parquet/writer.h"
#include "feeder/formats/sharded.h"
#include "feeder/train/train_data.h"
#include "feeder/util/byte_size.h"
#include "formats/test_files.h"
#include "image/test_pictures.h"
#include "parquet/writer_test_util.h"

namespace feeder {
namespace {

using testing::TempDir;

class TrainSets : public ::testing::Test {
 protected:
  void SetUp() override {
    ShardWriteOptions write;
    write.shard_rows = 400;
    write.parquet.row_group_size = 100;
    write_sharded(testing::make_store(kShape, 1000, true), dir_ / "train", write);  // 1000 * 24 = 24,000 bytes
    parquet::write_parquet(testing::make_store(kShape, 200, true), dir_ / "test.parquet");  // 4,800 bytes
  }
  std::string train() const { return (dir_ / "train").string(); }
  std::string test() const { return (dir_ / "test.parquet").string(); }

  const ImageShape kShape{1, 4, 4};
  TempDir dir_;
};

TEST_F(TrainSets, BothInMemoryWhenTheyFitTheBudget) {
  const TrainTestSets sets = open_train_test(train(), test(), kShape, 1 << 20);
  EXPECT_FALSE(sets.train.streaming);
  EXPECT_FALSE(sets.test.streaming);
  EXPECT_NE(pixel_store(*sets.train.source), nullptr);
  EXPECT_EQ(sets.train.source->size(), 1000);
  EXPECT_EQ(sets.train.num_files, 3);
  EXPECT_EQ(sets.train.num_row_groups, 10);
  EXPECT_EQ(sets.train.description, "in memory (23 KiB decoded, within the 1019 KiB budget)");
}

// --piece-size: the training set's pieces (24 bytes a sample: 240 bytes are 10 rows, so each row
// group of 100 is 10 pieces), held in memory or streamed alike; the test set keeps the default.
TEST_F(TrainSets, APieceSizeSetsTheTrainingSetsPieces) {
  for (const int64_t budget : {int64_t{1} << 20, int64_t{20000}}) {
    const TrainTestSets sets = open_train_test(train(), test(), kShape, budget, true, 240);
    EXPECT_EQ(sets.train.piece_rows, 10);
    EXPECT_EQ(sets.train.source->num_blocks(), 100) << budget;
    EXPECT_EQ(sets.test.piece_rows, 0);
  }
  EXPECT_EQ(open_train_test(train(), test(), kShape, 1 << 20).train.source->num_blocks(), 10);
}

// A test set held in memory (CSV, IDX, an image folder) that takes the whole budget leaves the
// training set nothing to stream within: refused, not streamed within the default budget.
TEST_F(TrainSets, ATestSetHeldInMemoryThatTakesTheWholeBudgetIsRefused) {
  std::string csv = "label";
  for (int p = 0; p < 16; ++p) csv += ",p" + std::to_string(p);
  csv += "\n";
  for (int row = 0; row < 200; ++row) {
    csv += std::to_string(row % 10);
    for (int p = 0; p < 16; ++p) csv += "," + std::to_string((row + p) % 256);
    csv += "\n";
  }
  testing::write_text(dir_ / "test.csv", csv);
  const std::string held = (dir_ / "test.csv").string();
  for (int64_t budget : {4000, 4800}) {  // under and exactly the test set's 200 * 24 bytes
    try {
      open_train_test(train(), held, kShape, budget);
      FAIL() << "budget " << budget << " accepted";
    } catch (const OptionsError& e) {
      EXPECT_EQ(std::string(e.what()), "memory budget " + format_byte_size(budget) + " is too small: " + held +
                                           " is held in memory (4.7 KiB) and leaves nothing for " + train() +
                                           ", which is read within what is left; raise --memory-budget");
    }
  }
  EXPECT_EQ(open_train_test(train(), held, kShape, 9000).train.memory_budget, 9000 - 4800);
  // Neither set held: a budget too small to share is said to be that, not blamed on the other set
  // ("train is held in memory (23 KiB)" at a budget of 1 B).
  try {
    open_train_test(train(), test(), kShape, 1);
    FAIL() << "a budget of 1 B was accepted";
  } catch (const OptionsError& e) {
    EXPECT_EQ(std::string(e.what()), "memory budget 1 B is too small: " + test() +
                                         "'s share of it (a quarter for the test set, the rest for training) is 0 B; "
                                         "raise --memory-budget");
  }
}

TEST_F(TrainSets, TheTrainingSetIsStreamedWhenItExceedsItsShare) {
  // 20,000 bytes: the test set (4,800) fits its quarter (5,000); the training set gets the rest.
  const TrainTestSets sets = open_train_test(train(), test(), kShape, 20000);
  EXPECT_FALSE(sets.test.streaming);
  EXPECT_TRUE(sets.train.streaming);
  EXPECT_EQ(pixel_store(*sets.train.source), nullptr);
  EXPECT_EQ(sets.train.memory_budget, 20000 - 4800);
  EXPECT_EQ(sets.train.description, "streaming (23 KiB decoded, over the 15 KiB budget)");
}

TEST_F(TrainSets, AMissingSetOrAnotherShapeIsNamed) {
  EXPECT_EQ(testing::data_error_of([&] { open_train_test((dir_ / "absent/").string(), test(), kShape, 1 << 20); }),
            (dir_ / "absent/").string() + ": no such file or directory");
  EXPECT_EQ(testing::data_error_of([&] { open_train_test(train(), test(), ImageShape{1, 28, 28}, 1 << 20); }),
            train() + ": images are 1x4x4; the model takes 1x28x28");
}

// A glob of Parquet files of pixels and of encoded images: said so, not "images are 0x0x0".
TEST_F(TrainSets, AGlobMixingPixelsAndEncodedImagesIsNamed) {
  const std::filesystem::path mixed = dir_ / "mixed";
  std::filesystem::create_directories(mixed);
  std::filesystem::copy_file(test(), mixed / "a.parquet");
  std::filesystem::copy_file(std::string(FEEDER_TEST_DATA_DIR) + "/images/hf/train-00000-of-00002.parquet",
                             mixed / "b.parquet");
  EXPECT_EQ(testing::data_error_of([&] { open_sharded_dataset((mixed / "*.parquet").string()); }),
            (mixed / "b.parquet").string() + ": holds encoded images (image files' bytes), but a.parquet holds pixels "
                                              "of 1x4x4: a set is one or the other");
}

DatasetOptions within(int64_t memory_budget) {
  DatasetOptions options;
  options.memory_budget = memory_budget;
  return options;
}

TEST_F(TrainSets, OneSetGetsTheWholeBudget) {
  const Dataset in_memory = open_dataset(train(), within(24000));
  EXPECT_FALSE(in_memory.streaming);
  EXPECT_EQ(in_memory.source->size(), 1000);
  const Dataset streamed = open_dataset(train(), within(23999));
  EXPECT_TRUE(streamed.streaming);
  EXPECT_EQ(streamed.memory_budget, 23999);
  EXPECT_EQ(streamed.source->fingerprint(), in_memory.source->fingerprint());
  EXPECT_EQ(testing::data_error_of([&] { open_dataset((dir_ / "absent.csv").string(), within(1 << 20)); }),
            (dir_ / "absent.csv").string() + ": no such file or directory");
}

// Parquet sets of encoded images always stream, each within its share, whose sum is the budget.
// Their decoded size (0: no pixel shape) once passed for a test set that fits its quarter, and the
// training set was given the whole budget besides: 125% of it.
TEST_F(TrainSets, EncodedParquetSetsStreamWithinSharesOfTheBudget) {
  const std::string hf = std::string(FEEDER_TEST_DATA_DIR) + "/images/hf";
  const int64_t budget = 1 << 20;
  const TrainTestSets sets = open_train_test(hf, hf, ImageShape{3, 4, 4}, budget);
  ASSERT_TRUE(sets.train.streaming);
  ASSERT_TRUE(sets.test.streaming);
  EXPECT_EQ(sets.test.memory_budget, budget / 4);
  EXPECT_EQ(sets.train.memory_budget + sets.test.memory_budget, budget);
}

// An image folder of one PNG per class.
std::string class_folder(const std::filesystem::path& root, const std::vector<std::string>& classes) {
  for (size_t i = 0; i < classes.size(); ++i) {
    std::filesystem::create_directories(root / classes[i]);
    const std::vector<uint8_t> png = png_of(6, 4, static_cast<int>(i));
    std::ofstream(root / classes[i] / "a.png", std::ios::binary)
        .write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  }
  return root.string();
}

// A test folder with fewer classes than training was labeled by its own folders (fox was 1, dog's
// label in training) and tested against the wrong classes, silently.
TEST_F(TrainSets, ATestFolderIsLabeledByTheTrainingSetsClassNames) {
  const std::string train_folder = class_folder(dir_ / "train-images", {"cat", "dog", "fox"});
  const TrainTestSets sets = open_train_test(train_folder, class_folder(dir_ / "test-images", {"cat", "fox"}),
                                             ImageShape{3, 4, 4}, 1 << 20);
  EXPECT_EQ(sets.test.classes, sets.train.classes);
  const RandomAccessSource* test = random_access(*sets.test.source);
  ASSERT_NE(test, nullptr);
  ASSERT_EQ(test->size(), 2);
  EXPECT_EQ(test->sample(0).label, 0);  // cat
  EXPECT_EQ(test->sample(1).label, 2);  // fox, as in training
  const std::string hf = std::string(FEEDER_TEST_DATA_DIR) + "/images/hf";  // a ClassLabel of cat, dog, fox
  EXPECT_EQ(open_train_test(hf, (dir_ / "test-images").string(), ImageShape{3, 4, 4}, 1 << 20).test.classes,
            (std::vector<std::string>{"cat", "dog", "fox"}));

  const std::string wolf = class_folder(dir_ / "wolf-images", {"cat", "wolf"});
  EXPECT_EQ(testing::data_error_of([&] { open_train_test(train_folder, wolf, ImageShape{3, 4, 4}, 1 << 20); }),
            wolf + ": the class folder wolf is not one of the 3 classes it is labeled with (cat, dog, fox)");
  // Sets that store their own names must agree with the training set's; a test set may lack
  // training's last classes (here the hf set's cat, dog, fox against a folder's cat, dog, fox, wolf).
  const std::string two = class_folder(dir_ / "two-images", {"cat", "dog"});
  const std::string four = class_folder(dir_ / "four-images", {"cat", "dog", "fox", "wolf"});
  EXPECT_EQ(open_train_test(four, hf, ImageShape{3, 4, 4}, 1 << 20).test.classes,
            (std::vector<std::string>{"cat", "dog", "fox"}));
  EXPECT_EQ(testing::data_error_of([&] { open_train_test(two, hf, ImageShape{3, 4, 4}, 1 << 20); }),
            hf + ": its classes are not the training set's: label 2 is 'fox' here and no class in " + two +
                " (3 classes against 2); the model would be tested against the wrong classes. Write both sets with "
                "the same class names in the same order");
}

}  // namespace
}  // namespace feeder

namespace feeder {
namespace {

// A label far beyond any class count sized the model by it: 1,500,001 classes (4.8 GB) for six
// images, or an overflow in LibTorch. Refused before anything is allocated, naming the sample.
TEST(ClassesNeeded, ALabelOverTheMostClassesIsRefusedNamingItsSample) {
  for (const bool streamed : {false, true}) {
    testing::TempDir dir;
    auto store = testing::make_store(ImageShape{1, 4, 4}, 200, true);
    for (size_t i = 0; i < 200; ++i) store.labels()[i] = static_cast<int64_t>(i % 10);
    store.labels()[37] = 1500000;
    ShardWriteOptions write;
    write.shard_rows = 200;
    write.parquet.row_group_size = 10;
    write_sharded(store, dir / "train", write);
    // Held in memory: the label itself; streamed: its row group's statistics.
    const TrainTestSets sets = open_train_test((dir / "train").string(), (dir / "train").string(),
                                               ImageShape{1, 4, 4}, streamed ? 4000 : 1 << 20);
    ASSERT_EQ(sets.train.streaming, streamed);
    try {
      classes_needed(sets);
      FAIL() << "no error for label 1500000";
    } catch (const DataError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("label 1500000"), std::string::npos) << message;
      EXPECT_NE(message.find(streamed ? "samples from " : "sample 37"), std::string::npos) << message;
      if (streamed) {
        EXPECT_NE(message.find("row group 3 row 0"), std::string::npos) << message;
      }
    }
  }
  // The largest label allowed sizes the model as before.
  testing::TempDir dir;
  auto store = testing::make_store(ImageShape{1, 4, 4}, 20, true);
  for (size_t i = 0; i < 20; ++i) store.labels()[i] = static_cast<int64_t>(i % 10);
  store.labels()[3] = kMaxClasses - 1;
  parquet::write_parquet(store, dir / "set.parquet");
  const std::string path = (dir / "set.parquet").string();
  EXPECT_EQ(classes_needed(open_train_test(path, path, ImageShape{1, 4, 4}, 1 << 20)), kMaxClasses);
}

}  // namespace
}  // namespace feeder
