// An image folder larger than the memory budget streams: its files in a fixed mixed order, in
// blocks that each hold many classes, each sample once an epoch with the same rows as the folder
// held in memory, and a file that changed since the listing is named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "feeder/data/loader.h"
#include "feeder/error.h"
#include "feeder/image/image_folder.h"
#include "feeder/image/image_stage.h"
#include "formats/test_files.h"
#include "image/test_pictures.h"

namespace feeder {
namespace {

using testing::TempDir;
using testing::write_bytes;

// 4 classes of 50 pictures, sorted by class as a folder is.
void write_folder(const TempDir& dir) {
  for (int label = 0; label < 4; ++label) {
    const auto class_dir = dir / ("class" + std::to_string(label));
    std::filesystem::create_directories(class_dir);
    for (int i = 0; i < 50; ++i) {
      char name[32];
      std::snprintf(name, sizeof(name), "%03d.png", i);
      write_bytes(class_dir / name, png_of(10 + (i * 7) % 20, 8 + (i * 5) % 25, label * 100 + i));
    }
  }
}

// The budget's share for the batch buffers: prefetch + 2 of 8 rows of 3x8x8 floats, a label and
// an index.
constexpr int64_t kBatchBuffers = 4 * 8 * (3 * 8 * 8 * 4 + 8 + 8);

LoaderOptions crops(int workers, int64_t memory_budget) {
  LoaderOptions options;
  options.batch_size = 8;
  options.prefetch = 2;
  options.num_workers = workers;
  options.seed = 5;
  options.memory_budget = memory_budget;
  ImageStageOptions stage;
  stage.height = 8;
  stage.width = 8;
  options.sample_stage = std::make_shared<ImageStage>(stage);
  return options;
}

// Per file, its row of one epoch's batches.
std::map<std::string, std::vector<float>> rows_by_file(const SampleSource& source, Loader& loader, int64_t epoch) {
  constexpr int64_t kRow = 3 * 8 * 8;
  std::map<std::string, std::vector<float>> rows;
  loader.start_epoch(epoch);
  while (auto batch = loader.next()) {
    for (int64_t i = 0; i < batch->size(); ++i) {
      const float* row = batch->images() + i * kRow;
      const std::string name = source.sample_name(batch->sample_indices()[static_cast<size_t>(i)]);
      EXPECT_TRUE(rows.emplace(name, std::vector<float>(row, row + kRow)).second) << name << " served twice";
    }
  }
  return rows;
}

TEST(ImageFolderStream, BeyondTheBudgetEachFileOnceAsInMemory) {
  TempDir dir;
  write_folder(dir);
  const ImageFolder held = open_image_folder(dir.path());
  ASSERT_FALSE(held.streaming);
  const ImageFolder streamed = open_image_folder(dir.path(), 0, held.encoded_bytes / 3);
  ASSERT_TRUE(streamed.streaming);
  EXPECT_EQ(streamed.encoded_bytes, held.encoded_bytes);
  EXPECT_EQ(streamed.classes, held.classes);
  const SampleSource& source = *streamed.source;
  ASSERT_EQ(source.size(), 200);
  EXPECT_TRUE(source.encoded());
  EXPECT_EQ(random_access(source), nullptr);
  EXPECT_EQ(source.num_blocks(), (200 + kFolderBlockFiles - 1) / kFolderBlockFiles);
  // Every block mixes the classes (a block of neighbouring files would hold one).
  const auto ranges = source.block_label_ranges();
  ASSERT_EQ(static_cast<int64_t>(ranges.size()), source.num_blocks());
  for (int64_t b = 0; b < source.num_blocks(); ++b) {
    if (source.block_rows(b) == kFolderBlockFiles) {
      EXPECT_EQ(ranges[static_cast<size_t>(b)].second - ranges[static_cast<size_t>(b)].first, 3);
    }
  }

  // The labels, listed (no file read), are each file's as in memory.
  const std::vector<int64_t> streamed_labels = read_labels(source), held_labels = read_labels(*held.source);
  ASSERT_EQ(streamed_labels.size(), 200u);
  std::map<std::string, int64_t> label_of;
  for (int64_t i = 0; i < 200; ++i) label_of[held.source->sample_name(i)] = held_labels[static_cast<size_t>(i)];
  for (int64_t i = 0; i < 200; ++i)
    EXPECT_EQ(streamed_labels[static_cast<size_t>(i)], label_of.at(source.sample_name(i))) << source.sample_name(i);

  Loader in_memory(held.source, crops(0, 0));
  const auto expected = rows_by_file(*held.source, in_memory, 2);
  ASSERT_EQ(expected.size(), 200u);
  // Random crops: each file once an epoch, the same rows for any number of workers.
  std::map<std::string, std::vector<float>> first;
  for (const int workers : {0, 3}) {
    Loader loader(streamed.source, crops(workers, held.encoded_bytes + kBatchBuffers));
    ASSERT_TRUE(loader.streaming());
    ASSERT_LT(loader.shuffle_window(), 200);
    EXPECT_TRUE(loader.shuffle_advice().empty()) << loader.shuffle_advice();
    const auto rows = rows_by_file(source, loader, 2);
    ASSERT_EQ(rows.size(), 200u) << workers;
    if (first.empty()) first = rows;
    else EXPECT_EQ(rows, first);
  }
  // The whole image resized (no draws): each file's row equals the folder's held in memory.
  LoaderOptions whole = crops(2, held.encoded_bytes + kBatchBuffers);
  ImageStageOptions resize;
  resize.height = 8;
  resize.width = 8;
  resize.crop = ImageCrop::kResize;
  whole.sample_stage = std::make_shared<ImageStage>(resize);
  LoaderOptions whole_in_memory = whole;
  whole_in_memory.memory_budget = 0;
  Loader resized_held(held.source, whole_in_memory);
  Loader resized_streamed(streamed.source, whole);
  EXPECT_EQ(rows_by_file(source, resized_streamed, 0), rows_by_file(*held.source, resized_held, 0));
}

// Held and streamed, a folder orders its files differently: a state of one mode is refused in the
// other, and the refusal says why (it said only "another dataset" of the same folder).
TEST(ImageFolderStream, AStateOfTheOtherModeIsRefusedSayingWhy) {
  TempDir dir;
  write_folder(dir);
  const ImageFolder held = open_image_folder(dir.path());
  const ImageFolder streamed = open_image_folder(dir.path(), 0, held.encoded_bytes / 3);
  ASSERT_TRUE(streamed.streaming);
  Loader in_memory(held.source, crops(0, 0));
  Loader stream(streamed.source, crops(0, held.encoded_bytes + kBatchBuffers));
  for (auto [from, to, here] : {std::tuple{&in_memory, &stream, "streamed here"},
                                std::tuple{&stream, &in_memory, "held here"}}) {
    from->start_epoch(0);
    ASSERT_TRUE(from->next());
    try {
      to->restore(from->state());
      ADD_FAILURE() << "a state of the other mode was taken";
    } catch (const OptionsError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("the dataset's fingerprint differs (another dataset; an image folder held in memory"),
                std::string::npos) << what;
      EXPECT_NE(what.find("give the memory budget it was saved with (" + std::string(here) + "))"), std::string::npos)
          << what;
    }
  }
}

TEST(ImageFolderStream, AFileChangedSinceTheListingIsNamed) {
  TempDir dir;
  write_folder(dir);
  const ImageFolder streamed = open_image_folder(dir.path(), 0, 1000);
  ASSERT_TRUE(streamed.streaming);
  const auto victim = dir / "class2" / "007.png";
  write_bytes(victim, png_of(40, 40, 1));
  Loader loader(streamed.source, crops(2, 200000));
  loader.start_epoch(0);
  try {
    while (loader.next()) {
    }
    FAIL() << "a changed file was served";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("class2/007.png: its size changed to"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace feeder
