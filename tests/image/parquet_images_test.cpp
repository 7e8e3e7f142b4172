// Parquet files of encoded images (tests/data/images/README.md: DuckDB's and arrow-rs's files of
// Hugging Face datasets' layout and of a plain binary column): the source reads each row group's
// images as they are stored, the loader streams them within a budget and its batches equal those
// of the same bytes held in memory, and bad rows are named.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "feeder/data/loader.h"
#include "feeder/error.h"
#include "feeder/formats/parquet/row_group_reader.h"
#include "feeder/formats/sharded.h"
#include "feeder/image/encoded_source.h"
#include "feeder/image/image_decoder.h"
#include "feeder/image/image_stage.h"
#include "image/test_pictures.h"

namespace feeder {
namespace {

const std::string kImages = std::string(FEEDER_TEST_DATA_DIR) + "/images";

std::shared_ptr<SampleSource> open_images(const std::string& spec) {
  return open_parquet_source(open_sharded_dataset(spec));
}

TEST(ParquetImages, EachWritersImagesReadAsStored) {
  for (const std::string& spec : {kImages + "/hf", kImages + "/arrowrs_rg4.parquet", kImages + "/binary.parquet"}) {
    SCOPED_TRACE(spec);
    const ShardedDataset dataset = open_sharded_dataset(spec);
    EXPECT_TRUE(dataset.encoded);
    EXPECT_EQ(dataset.shape, (ImageShape{0, 0, 0}));
    const auto source = open_images(spec);
    ASSERT_TRUE(source->encoded());
    EXPECT_EQ(random_access(*source), nullptr);
    ASSERT_EQ(source->size(), 30);
    const auto held = read_all_blocks(*source);
    for (int64_t i = 0; i < 30; ++i) {
      const SampleView sample = held->sample(i);
      EXPECT_EQ(sample.label, i / 10);  // by class, 10 each
      ASSERT_GT(sample.bytes.size(), 8u);
      EXPECT_EQ(sniff_image_format(sample.bytes), std::optional<ImageFormat>(ImageFormat::kPng)) << i;
      std::vector<uint8_t> pixels;
      const ImageHeader header = decode_image(sample.bytes, 3, held->sample_name(i), pixels);
      EXPECT_GE(header.width, 14);
      EXPECT_LE(header.width, 40);
    }
  }
  const auto source = open_images(kImages + "/arrowrs_rg4.parquet");
  EXPECT_EQ(source->num_blocks(), 8);  // one block per row group
  EXPECT_EQ(source->sample_name(13), kImages + "/arrowrs_rg4.parquet: row group 3 row 1");
}

LoaderOptions crops(int workers, int64_t memory_budget = 0) {
  LoaderOptions options;
  options.batch_size = 4;
  options.num_workers = workers;
  options.seed = 11;
  options.memory_budget = memory_budget;
  ImageStageOptions stage;
  stage.height = 10;
  stage.width = 12;
  stage.crop = ImageCrop::kRandomResizedCrop;
  options.sample_stage = std::make_shared<ImageStage>(stage);
  return options;
}

constexpr int64_t kRow = 3 * 10 * 12;

// Per sample, its row of an epoch's batches.
std::map<int64_t, std::vector<float>> epoch_rows(Loader& loader, int64_t epoch) {
  std::map<int64_t, std::vector<float>> rows;
  loader.start_epoch(epoch);
  while (auto batch = loader.next()) {
    for (int64_t i = 0; i < batch->size(); ++i) {
      const float* row = batch->images() + i * kRow;
      EXPECT_TRUE(rows.emplace(batch->sample_indices()[static_cast<size_t>(i)], std::vector<float>(row, row + kRow)).second)
          << "sample served twice";
    }
  }
  return rows;
}

TEST(ParquetImages, StreamedWithinABudgetEachSampleOnceAsInMemory) {
  const auto source = open_images(kImages + "/arrowrs_rg4.parquet");
  Loader in_memory(read_all_blocks(*source), crops(0));
  const auto expected = epoch_rows(in_memory, 1);
  ASSERT_EQ(expected.size(), 30u);
  for (const int workers : {0, 2}) {
    // 16,000 bytes for the stream, and 6 batch buffers (prefetch + 2) of 4 rows of 3x10x12 floats
    // (5,888 bytes each, with the labels and indices).
    constexpr int64_t kBuffers = 6 * 5888;
    constexpr int64_t kBudget = 16000 + kBuffers;
    Loader streamed(source, crops(workers, kBudget));
    ASSERT_TRUE(streamed.streaming());
    ASSERT_LT(streamed.shuffle_window(), 30);
    // The crops are a function of (seed, epoch, sample): each sample's row is the same in memory.
    EXPECT_EQ(epoch_rows(streamed, 1), expected) << workers;
    EXPECT_LE(streamed.peak_stream_bytes(), kBudget - kBuffers);
  }
}

TEST(ParquetImages, BadRowsAreNamed) {
  const auto expect_error = [](const std::string& spec, const std::string& text) {
    Loader loader(open_images(spec), crops(1));
    loader.start_epoch(0);
    try {
      while (loader.next()) {
      }
      FAIL() << spec << ": served";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_error(kImages + "/bad/cut.parquet", "bad/cut.parquet: row group 0 row 5: bad PNG");
  expect_error(kImages + "/bad/null.parquet", "bad/null.parquet: column 'png' row 7: null image");
  // A set of encoded images is not a store of pixels.
  EXPECT_THROW(Loader(open_images(kImages + "/hf"), LoaderOptions{}), OptionsError);
}

}  // namespace
}  // namespace feeder

namespace feeder {
namespace {

// arrow-rs's one row group of 150 images in 1 KB pages: streamed in pieces of whole pages, the
// same images and labels as the row group read whole, and the pieces' label ranges seen.
TEST(ParquetImages, ALargeRowGroupStreamsInPiecesOfWholePages) {
  const std::string spec = kImages + "/arrowrs_pages.parquet";
  const auto reader = parquet::ParquetRowGroupReader::open(spec);
  ASSERT_EQ(reader.num_row_groups(), 1);
  const auto pieces = reader.encoded_pieces(0, kEncodedPieceRows, kEncodedPieceBytes);
  ASSERT_GE(pieces.starts.size(), 6u);  // at least 5 pieces of at most 32 rows
  EXPECT_EQ(pieces.starts.front(), 0);
  EXPECT_EQ(pieces.starts.back(), 150);
  for (size_t p = 0; p + 1 < pieces.starts.size(); ++p) {
    EXPECT_LE(pieces.starts[p + 1] - pieces.starts[p], kEncodedPieceRows);
    EXPECT_GT(pieces.bytes_bound[p], 0);
  }

  const auto source = open_images(spec);
  EXPECT_EQ(source->num_blocks(), static_cast<int64_t>(pieces.starts.size()) - 1);
  const auto held = read_all_blocks(*source);
  std::vector<uint8_t> scratch;
  std::vector<uint8_t> whole(static_cast<size_t>(reader.encoded_bytes_bound(0)));
  std::vector<int64_t> ends(150), labels(150);
  reader.read_encoded_row_group(0, scratch, whole.data(), static_cast<int64_t>(whole.size()), ends.data(), labels.data());
  for (int64_t i = 0; i < 150; ++i) {
    const SampleView sample = held->sample(i);
    const int64_t begin = i == 0 ? 0 : ends[static_cast<size_t>(i) - 1];
    ASSERT_TRUE(std::equal(sample.bytes.begin(), sample.bytes.end(), whole.begin() + begin,
                           whole.begin() + ends[static_cast<size_t>(i)])) << i;
    EXPECT_EQ(sample.label, labels[static_cast<size_t>(i)]);
    EXPECT_EQ(sample.label, i / 50);
  }
  EXPECT_EQ(reader.row_group_labels(0), labels);
  // Sorted by class: most pieces hold one label, and the ranges say so.
  const auto ranges = source->block_label_ranges();
  ASSERT_EQ(ranges.size(), static_cast<size_t>(source->num_blocks()));
  EXPECT_EQ(ranges.front(), (std::pair<int64_t, int64_t>{0, 0}));
  EXPECT_EQ(ranges.back(), (std::pair<int64_t, int64_t>{2, 2}));
  // Rows that are not whole pages are refused.
  std::vector<uint8_t> bytes(whole.size());
  EXPECT_THROW(reader.read_encoded_rows(0, 1, pieces.starts[1], scratch, bytes.data(), static_cast<int64_t>(bytes.size()),
                                        ends.data(), labels.data()),
               std::invalid_argument);
}

}  // namespace
}  // namespace feeder
