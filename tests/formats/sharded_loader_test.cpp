// The loader over real Parquet shards: streamed and in memory give the same batches, a shard that
// vanishes mid-epoch surfaces from next() naming file and row group, and the loader then closes.

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "feeder/data/loader.h"
#include "feeder/error.h"
#include "feeder/formats/sharded.h"
#include "feeder/image/encoded_rows.h"
#include "formats/test_files.h"
#include "parquet/writer_test_util.h"

namespace feeder {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::vector<std::vector<int64_t>> epoch_indices(Loader& loader, int64_t epoch) {
  std::vector<std::vector<int64_t>> batches;
  loader.start_epoch(epoch);
  while (auto batch = loader.next()) {
    batches.emplace_back(batch->sample_indices().begin(), batch->sample_indices().end());
  }
  return batches;
}

TEST(ShardedLoader, StreamedAndInMemoryGiveTheSameBatchesAndResumeAcrossModes) {
  TempDir dir;
  const ImageStore store = testing::make_store({1, 4, 4}, 500, true);
  ShardWriteOptions write;
  write.shard_rows = 120;
  write.parquet.row_group_size = 25;
  write_sharded(store, dir / "set", write);
  const ShardedDataset dataset = open_sharded_dataset((dir / "set").string());
  const std::shared_ptr<SampleSource> stream = open_parquet_source(dataset);
  const std::shared_ptr<InMemorySource> memory = read_into_memory(*stream);
  EXPECT_EQ(memory->fingerprint(), stream->fingerprint());

  LoaderOptions options;
  options.batch_size = 32;
  options.num_workers = 2;
  options.shuffle_window = 100;
  options.memory_budget = 64 * 1024;
  Loader streamed(stream, options);
  Loader in_memory(memory, options);
  ASSERT_TRUE(streamed.streaming());
  const auto expected = epoch_indices(in_memory, 3);
  EXPECT_EQ(epoch_indices(streamed, 3), expected);

  in_memory.start_epoch(3);
  for (int i = 0; i < 5; ++i) in_memory.next();
  streamed.restore(in_memory.state());
  std::vector<std::vector<int64_t>> rest;
  while (auto batch = streamed.next()) rest.emplace_back(batch->sample_indices().begin(), batch->sample_indices().end());
  EXPECT_EQ(rest, std::vector<std::vector<int64_t>>(expected.begin() + 5, expected.end()));
}

// A row group written as one page per column (DuckDB's way), streamed in pieces far smaller than
// its pages: every window decodes the whole pages again, and the loader says so when it is built.
// The same rows in pages of one piece each get no such note.
TEST(ShardedLoader, PagesFarLargerThanThePiecesAreReportedWithTheirCost) {
  TempDir dir;
  const ImageShape shape{1, 16, 16};
  const int64_t rows = 4000;
  const ImageStore store = testing::make_store(shape, rows, true);
  const int64_t piece_rows = stream_piece_rows(shape, rows);
  LoaderOptions options;
  options.batch_size = 16;
  options.num_workers = 0;
  options.memory_budget = 640 << 10;  // 60% of the decoded set: several windows
  for (const bool large_pages : {true, false}) {
    SCOPED_TRACE(large_pages ? "one page per column" : "pages of a piece");
    parquet::ParquetWriteOptions write;
    write.layout = parquet::ParquetLayout::kColumns;
    write.row_group_size = rows;
    if (large_pages) {
      write.page_size_bytes = int64_t{1} << 30;
    } else {
      write.page_rows = piece_rows;
    }
    const fs::path file = dir / (large_pages ? "large_pages.parquet" : "piece_pages.parquet");
    parquet::write_parquet(store, file, write);
    const std::shared_ptr<SampleSource> stream = open_parquet_source(open_sharded_dataset(file.string()));
    ASSERT_GT(stream->num_blocks(), 1);
    Loader loader(stream, options);
    ASSERT_TRUE(loader.streaming());
    const int64_t windows = (rows + loader.shuffle_window() - 1) / loader.shuffle_window();
    ASSERT_GE(windows, 4);
    const std::string advice = loader.shuffle_advice();
    if (large_pages) {
      EXPECT_EQ(stream->largest_page_rows(), rows);
      EXPECT_NE(advice.find(stream->name() + ": its pages hold up to 4000 rows each"), std::string::npos) << advice;
      EXPECT_NE(advice.find("each of an epoch's " + std::to_string(windows) + " windows"), std::string::npos) << advice;
      EXPECT_NE(advice.find("feeder convert"), std::string::npos) << advice;
    } else {
      EXPECT_LE(stream->largest_page_rows(), piece_rows);
      EXPECT_EQ(advice.find("pages hold"), std::string::npos) << advice;
    }
    // Without a shuffle, a page is read once by each window it spans: as many windows as with one
    // here (the same budget), each with a part of the page.
    LoaderOptions in_order = options;
    in_order.shuffle = false;
    const Loader unshuffled(stream, in_order);
    EXPECT_EQ(unshuffled.shuffle_window(), loader.shuffle_window());
    EXPECT_EQ(unshuffled.shuffle_advice().find("pages hold") != std::string::npos, large_pages)
        << unshuffled.shuffle_advice();
  }
}

// Row groups split into pieces: a window mixes pieces of many row groups, a row group larger than
// the budget streams, and streamed, in memory and resumed give the same batches.
TEST(ShardedLoader, PiecesOfRowGroupsStreamLikeTheSetInMemory) {
  TempDir dir;
  struct Case {
    parquet::ParquetLayout layout;
    ImageShape shape;
    int64_t rows;
    int64_t budget;
  };
  // Default pieces: 64 KiB of samples, 15 rows of 64x64 and 248 of 16x16.
  for (const Case& c : {Case{parquet::ParquetLayout::kImage, {1, 64, 64}, 600, 2 << 20},
                        Case{parquet::ParquetLayout::kColumns, {1, 16, 16}, 4000, 1 << 20}}) {
    SCOPED_TRACE(to_string(c.layout));
    const ImageStore store = testing::make_store(c.shape, c.rows, true);
    const fs::path set = dir / to_string(c.layout);
    ShardWriteOptions write;
    write.shard_rows = c.rows;  // one shard of one row group, as DuckDB writes a set this size
    write.parquet.layout = c.layout;
    const int64_t piece_rows = stream_piece_rows(c.shape, c.rows);
    write.parquet.page_size_bytes = piece_rows * c.shape.num_pixels();  // image pages of a piece each
    write_sharded(store, set, write);
    const ShardedDataset dataset = open_sharded_dataset(set.string());
    const std::shared_ptr<SampleSource> stream = open_parquet_source(dataset);
    ASSERT_EQ(stream->num_blocks(), (c.rows + piece_rows - 1) / piece_rows);
    EXPECT_EQ(stream->read_group(0), stream->read_group(stream->num_blocks() - 1));
    const std::shared_ptr<InMemorySource> memory = read_into_memory(*stream);
    ASSERT_TRUE(std::equal(memory->store()->pixels().begin(), memory->store()->pixels().end(), store.pixels().begin()));

    LoaderOptions options;
    options.batch_size = 16;
    options.num_workers = 2;
    options.memory_budget = c.budget;  // below the decoded set
    ASSERT_LT(c.budget, stream->decoded_bytes());
    Loader streamed(stream, options);
    ASSERT_TRUE(streamed.streaming());
    ASSERT_LT(streamed.shuffle_window(), c.rows / 2);
    options.shuffle_window = streamed.shuffle_window();
    Loader in_memory(memory, options);
    const auto expected = epoch_indices(in_memory, 2);
    EXPECT_EQ(epoch_indices(streamed, 2), expected);
    std::set<int64_t> seen;
    for (const auto& batch : expected) seen.insert(batch.begin(), batch.end());
    EXPECT_EQ(seen.size(), static_cast<size_t>(c.rows));
    // The first batch mixes several pieces, not one.
    std::set<int64_t> pieces;
    for (const int64_t sample : expected[0]) pieces.insert(sample / piece_rows);
    EXPECT_GE(pieces.size(), 4u);

    in_memory.start_epoch(2);
    for (int i = 0; i < 9; ++i) in_memory.next();
    streamed.restore(in_memory.state());
    std::vector<std::vector<int64_t>> rest;
    while (auto batch = streamed.next()) rest.emplace_back(batch->sample_indices().begin(), batch->sample_indices().end());
    EXPECT_EQ(rest, std::vector<std::vector<int64_t>>(expected.begin() + 9, expected.end()));
    EXPECT_LE(streamed.peak_decoded_bytes(), options.memory_budget);
  }
}

// Shards sorted by label: the row groups' label statistics make the loader say that a small window
// mixes too few of them; the same rows shuffled when written need no advice.
TEST(ShardedLoader, SortedShardsGetShuffleAdviceAndShuffledOnWriteNone) {
  TempDir dir;
  ImageStore store = testing::make_store({1, 4, 4}, 2000, true);
  for (int64_t row = 0; row < store.size(); ++row) store.labels()[static_cast<size_t>(row)] = row / 200;
  ShardWriteOptions write;
  write.shard_rows = 500;
  write.parquet.row_group_size = 100;
  write_sharded(store, dir / "sorted", write);
  write.shuffle_seed = 3;
  write_sharded(store, dir / "shuffled", write);
  LoaderOptions options;
  options.batch_size = 16;
  options.num_workers = 1;
  options.shuffle_window = 300;
  options.memory_budget = 1 << 20;
  Loader sorted(open_parquet_source(open_sharded_dataset((dir / "sorted").string())), options);
  EXPECT_NE(sorted.shuffle_advice().find("the labels are clustered"), std::string::npos) << sorted.shuffle_advice();
  Loader shuffled(open_parquet_source(open_sharded_dataset((dir / "shuffled").string())), options);
  EXPECT_EQ(shuffled.shuffle_advice(), "");

  // One row group for the whole set (every label in its statistics), written as feeder convert
  // writes it: the label pages of each piece carry statistics, and those tell.
  ImageStore large = testing::make_store({1, 16, 16}, 2000, true);
  for (int64_t row = 0; row < large.size(); ++row) large.labels()[static_cast<size_t>(row)] = row / 200;
  ShardWriteOptions one;
  one.shard_rows = 2000;
  one.parquet.layout = parquet::ParquetLayout::kImage;
  one.parquet.page_rows = stream_piece_rows(large.shape(), large.size());
  write_sharded(large, dir / "one", one);
  const std::shared_ptr<SampleSource> single = open_parquet_source(open_sharded_dataset((dir / "one").string()));
  ASSERT_GT(single->num_blocks(), 20);
  Loader one_group(single, options);
  EXPECT_NE(one_group.shuffle_advice().find("the labels are clustered"), std::string::npos) << one_group.shuffle_advice();
}

// The default window fills the budget, but never with what depends on num_workers (the readers'
// buffers beyond the first two, the batches in flight without workers): the order, and a saved
// state, are the same for any number of workers. Before, 0 and 2 workers gave different windows,
// a state saved with 2 was refused with 0, and 4 workers did not fit the budget at all.
TEST(ShardedLoader, TheDefaultWindowAndOrderDoNotDependOnTheNumberOfWorkers) {
  TempDir dir;
  const ImageStore store = testing::make_store({1, 8, 8}, 2000, true);
  ShardWriteOptions write;
  write.shard_rows = 1000;
  write.parquet.row_group_size = 50;
  write.parquet.codec = parquet::Codec::kUncompressed;  // read buffers as large as the decoded row groups
  write_sharded(store, dir / "set", write);
  const std::shared_ptr<SampleSource> stream = open_parquet_source(open_sharded_dataset((dir / "set").string()));

  LoaderOptions options;
  options.batch_size = 16;
  options.memory_budget = 96 * 1024;  // 25 KiB of it for the batch buffers
  std::optional<int64_t> window;
  std::vector<std::vector<int64_t>> expected;
  LoaderState saved;
  for (const int workers : {2, 0, 1, 4}) {
    SCOPED_TRACE("num_workers " + std::to_string(workers));
    options.num_workers = workers;
    Loader loader(stream, options);
    ASSERT_TRUE(loader.streaming());
    if (!window) {
      window = loader.shuffle_window();
      EXPECT_LT(*window, stream->size());  // a window the budget limits, not the whole set
      expected = epoch_indices(loader, 1);
      loader.start_epoch(1);
      for (int i = 0; i < 7; ++i) loader.next();
      saved = loader.state();
      continue;
    }
    EXPECT_EQ(loader.shuffle_window(), *window);
    EXPECT_EQ(epoch_indices(loader, 1), expected);
    loader.restore(saved);
    std::vector<std::vector<int64_t>> rest;
    while (auto batch = loader.next()) rest.emplace_back(batch->sample_indices().begin(), batch->sample_indices().end());
    EXPECT_EQ(rest, std::vector<std::vector<int64_t>>(expected.begin() + 7, expected.end()));
    EXPECT_LE(loader.peak_decoded_bytes(), options.memory_budget);
  }
}

TEST(ShardedLoader, AShardDeletedMidEpochSurfacesFromNextAndTheLoaderCloses) {
  TempDir dir;
  const ImageStore store = testing::make_store({1, 4, 4}, 300, true);
  ShardWriteOptions write;
  write.shard_rows = 100;
  write.parquet.row_group_size = 50;
  write_sharded(store, dir / "set", write);
  for (int workers : {0, 2}) {
    const std::shared_ptr<SampleSource> stream = open_parquet_source(open_sharded_dataset((dir / "set").string()));
    LoaderOptions options;
    options.batch_size = 10;
    options.num_workers = workers;
    options.shuffle = false;  // shard 1 is samples 100..199
    options.shuffle_window = 10;  // read as the batches come: the first window is shard 0's
    options.memory_budget = 32 * 1024;
    auto loader = std::make_unique<Loader>(stream, options);
    // The shard goes after the set was opened, before its row groups are read.
    const fs::path shard = dir / "set" / "part-00001.parquet";
    const fs::path kept = dir / "kept.parquet";
    fs::rename(shard, kept);
    loader->start_epoch(0);
    int64_t delivered = 0;
    try {
      while (loader->next()) ++delivered;
      FAIL() << "the epoch ended without the vanished shard's error";
    } catch (const DataError& e) {
      EXPECT_EQ(std::string(e.what()), shard.string() + ": row group 0: file vanished after the set was opened");
    }
    EXPECT_EQ(delivered, 10);  // shard 0's samples, then the error
    loader.reset();            // destroying it with reads and batches in flight does not hang
    fs::rename(kept, shard);
  }
}

}  // namespace
}  // namespace feeder

namespace feeder {
namespace {

// torchvision's dataset.targets: every label in the set's order, streamed (a block at a time, on
// several threads, pieces of row groups among them), in memory, and of encoded images.
TEST(ReadLabels, EverySampleLabelInOrderStreamedInMemoryAndEncoded) {
  TempDir dir;
  const ImageStore store = testing::make_store({1, 4, 4}, 500, true);
  const std::vector<int64_t> expected(store.labels().begin(), store.labels().end());
  ShardWriteOptions write;
  write.shard_rows = 120;
  write.parquet.row_group_size = 50;
  write.parquet.page_rows = 10;
  write_sharded(store, dir / "set", write);
  const std::shared_ptr<SampleSource> stream =
      open_parquet_source(open_sharded_dataset((dir / "set").string()), {}, /*piece_rows=*/10);
  ASSERT_GT(stream->num_blocks(), 10);
  EXPECT_EQ(read_labels(*stream, 3), expected);
  EXPECT_EQ(read_labels(*read_into_memory(*stream)), expected);

  auto shared = std::make_shared<const ImageStore>(testing::make_store({1, 4, 4}, 500, true));
  const std::unique_ptr<EncodedRowReader> png = png_row_reader(shared, "png", 2);
  write.parquet.row_group_size = 16;
  write_encoded_sharded(*png, dir / "png", write);
  const std::shared_ptr<SampleSource> encoded = open_parquet_source(open_sharded_dataset((dir / "png").string()));
  ASSERT_TRUE(encoded->encoded());
  EXPECT_EQ(read_labels(*encoded, 2), expected);

  const ImageStore unlabeled = testing::make_store({1, 4, 4}, 10, false);
  ShardWriteOptions one_shard;
  one_shard.shard_rows = 10;
  write_sharded(unlabeled, dir / "unlabeled", one_shard);
  EXPECT_TRUE(read_labels(*open_parquet_source(open_sharded_dataset((dir / "unlabeled").string()))).empty());
}

}  // namespace
}  // namespace feeder
