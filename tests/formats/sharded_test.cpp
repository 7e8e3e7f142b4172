// Sharded Parquet sets: write_sharded and its index, opening a set by directory (with and without
// an index), glob or file, the checks across shards, the streaming source over the row groups, and
// the exact message for each way a shard can change under an open set.

#include "feeder/formats/sharded.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "feeder/error.h"
#include "feeder/formats/parquet/row_group_reader.h"
#include "feeder/formats/parquet/writer.h"
#include "feeder/io/file.h"
#include "feeder/util/byte_size.h"
#include "feeder/util/interrupt.h"
#include "formats/test_files.h"
#include "parquet/writer_test_util.h"

namespace feeder {
namespace {

namespace fs = std::filesystem;

using testing::data_error_of;
using testing::TempDir;

const ImageShape kShape{1, 4, 4};

ShardWriteOptions rows_per_shard(int64_t shard_rows, int64_t row_group_size) {
  ShardWriteOptions options;
  options.shard_rows = shard_rows;
  options.parquet.row_group_size = row_group_size;
  options.parquet.num_threads = 1;
  return options;
}

// Reads every block of the source in order into one store.
ImageStore read_all(const SampleSource& source) {
  ImageStore store(source.shape(), source.size(), source.labeled());
  std::vector<uint8_t> scratch;
  for (int64_t block = 0; block < source.num_blocks(); ++block) {
    const int64_t first = source.block_starts()[static_cast<size_t>(block)];
    source.read_block(block, scratch, {.payload = store.image(first), .labels = store.labels().data() + first});
  }
  return store;
}

// Reads block `block_idx` into fresh buffers; for the expected-error tests.
void read_one(const SampleSource& source, int64_t block_idx) {
  std::vector<uint8_t> scratch;
  std::vector<uint8_t> pixels(static_cast<size_t>(source.block_rows(block_idx) * source.shape().num_pixels()));
  std::vector<int64_t> labels(static_cast<size_t>(source.block_rows(block_idx)));
  source.read_block(block_idx, scratch, {.payload = pixels.data(), .labels = labels.data()});
}

std::vector<std::string> file_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ShardedWrite, RoundTripThroughTheStreamingSource) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 1000, true);
  const ShardedDataset written = write_sharded(store, dir / "set", rows_per_shard(300, 128));
  EXPECT_EQ(file_names(dir / "set"), (std::vector<std::string>{"index.json", "part-00000.parquet", "part-00001.parquet",
                                                               "part-00002.parquet", "part-00003.parquet"}));
  const ShardedDataset dataset = open_sharded_dataset((dir / "set").string());
  EXPECT_TRUE(dataset.indexed);
  EXPECT_EQ(dataset.num_rows, 1000);
  EXPECT_EQ(dataset.shape, kShape);
  EXPECT_TRUE(dataset.labeled);
  EXPECT_EQ(dataset.label_min, -7);  // make_store plants -7 and 2^40
  EXPECT_EQ(dataset.label_max, int64_t{1} << 40);
  ASSERT_EQ(dataset.shards.size(), 4u);
  EXPECT_EQ(dataset.shards[0].row_group_rows, (std::vector<int64_t>{128, 128, 44}));
  EXPECT_EQ(dataset.shards[3].row_group_rows, (std::vector<int64_t>{100}));
  EXPECT_EQ(dataset.num_row_groups(), 10);
  EXPECT_EQ(dataset.fingerprint, written.fingerprint);
  EXPECT_EQ(dataset.columns, "label INT64, 16 pixel columns pixel1..pixel16 INT32 INT(8,false)");
  for (size_t i = 0; i < dataset.shards.size(); ++i) {
    EXPECT_EQ(dataset.shards[i].size_bytes, fs::file_size(dataset.shards[i].path));
    EXPECT_EQ(dataset.shards[i].content_hash, written.shards[i].content_hash);
    EXPECT_TRUE(dataset.shards[i].content_hash.has_value());
  }

  const std::shared_ptr<SampleSource> source = open_parquet_source(dataset);
  EXPECT_EQ(source->size(), 1000);
  EXPECT_EQ(source->num_blocks(), 10);
  EXPECT_EQ(std::vector<int64_t>(source->block_starts().begin(), source->block_starts().end()),
            (std::vector<int64_t>{0, 128, 256, 300, 428, 556, 600, 728, 856, 900, 1000}));
  EXPECT_EQ(source->fingerprint(), dataset.fingerprint);
  EXPECT_EQ(random_access(*source), nullptr);
  EXPECT_EQ(source->name(), (dir / "set").string());
  int64_t largest = 0;
  for (const ShardInfo& shard : dataset.shards) largest = std::max(largest, shard.row_group_max_compressed_bytes);
  EXPECT_EQ(source->max_read_bytes(), largest);
  EXPECT_GT(largest, 0);
  testing::expect_same_images(read_all(*source), store);
}

// Pieces over a megabyte of pixels have their pages read together, one read a piece (a run): the
// same samples as a page at a time, with pieces that begin and end inside pages of 7 rows, and
// the run counted in what a read takes.
TEST(ShardedWrite, LargePiecesReadTheirPagesTogether) {
  TempDir dir;
  const ImageShape shape{1, 64, 64};
  const ImageStore store = testing::make_store(shape, 700, true);
  ShardWriteOptions options = rows_per_shard(700, 700);
  options.parquet.layout = parquet::ParquetLayout::kImage;
  options.parquet.page_rows = 7;
  write_sharded(store, dir.path(), options);
  const ShardedDataset dataset = open_sharded_dataset(dir.path().string());
  const auto pages = open_parquet_source(dataset, {}, 7);
  const auto pieces = open_parquet_source(dataset, {}, 300);  // 1.2 MB of pixels: above a megabyte
  EXPECT_EQ(pieces->num_blocks(), 3);
  EXPECT_GE(pieces->max_read_bytes(), pages->max_read_bytes() + 300 * shape.num_pixels());
  testing::expect_same_images(read_all(*pieces), store);
  testing::expect_same_images(read_all(*pages), store);
}

TEST(ShardedWrite, ImageLayoutAndUnlabeledSetsRoundTrip) {
  TempDir dir;
  const ImageStore store = testing::make_store(ImageShape{3, 2, 5}, 77, false);
  ShardWriteOptions options = rows_per_shard(20, 8);
  options.parquet.layout = parquet::ParquetLayout::kImage;
  write_sharded(store, dir.path(), options);
  const ShardedDataset dataset = open_sharded_dataset(dir.path().string());
  EXPECT_FALSE(dataset.labeled);
  EXPECT_FALSE(dataset.label_min.has_value());
  EXPECT_EQ(dataset.columns, "no label, image column 'image' FIXED_LEN_BYTE_ARRAY(30)");
  testing::expect_same_images(read_all(*open_parquet_source(dataset)), store);
}

TEST(ShardedWrite, TheIndexIsWrittenLast) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 50, true);
  std::vector<std::pair<int64_t, int64_t>> calls;
  write_sharded(store, dir.path(), rows_per_shard(20, 64), [&](int64_t done, int64_t total) {
    calls.emplace_back(done, total);
    EXPECT_FALSE(fs::exists(dir / "index.json")) << "after shard " << done;
    EXPECT_TRUE(fs::exists(dir / ("part-0000" + std::to_string(done - 1) + ".parquet")));
  });
  EXPECT_EQ(calls, (std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {2, 3}, {3, 3}}));
  EXPECT_TRUE(fs::exists(dir / "index.json"));
}

// A write that fails part-way leaves neither an index nor the shards it wrote.
TEST(ShardedWrite, AFailingWriteLeavesNoIndexAndNoShards) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 50, true);
  EXPECT_THROW(write_sharded(store, dir.path(), rows_per_shard(20, 64),
                             [](int64_t done, int64_t) {
                               if (done == 2) throw DataError("disk full");
                             }),
               DataError);
  EXPECT_EQ(file_names(dir.path()), std::vector<std::string>{});
}

// An interrupt (Ctrl-C in feeder convert) stops the write at the next shard, which then removes the
// shards and the marker, and the directory when the write made it; one that existed is left, empty.
TEST(ShardedWrite, AnInterruptRemovesTheShardsTheMarkerAndTheDirectoryItMade) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 50, true);
  const fs::path made = dir / "new" / "set";
  const auto interrupt_after_first = [](int64_t done, int64_t) {
    if (done == 1) request_interrupt();
  };
  EXPECT_THROW(write_sharded(store, made, rows_per_shard(20, 64), interrupt_after_first), Interrupted);
  clear_interrupt();
  EXPECT_FALSE(fs::exists(made));
  EXPECT_TRUE(fs::exists(dir / "new"));  // made by create_directories too, but not the set's own directory
  EXPECT_THROW(write_sharded(store, dir.path(), rows_per_shard(20, 64), interrupt_after_first), Interrupted);
  clear_interrupt();
  EXPECT_EQ(file_names(dir.path()), std::vector<std::string>{"new"});
  // Nothing pending afterwards: the next write completes, and takes its marker away.
  write_sharded(store, made, rows_per_shard(20, 64));
  EXPECT_EQ(file_names(made), (std::vector<std::string>{"index.json", "part-00000.parquet", "part-00001.parquet",
                                                        "part-00002.parquet"}));
}

// While a write runs the directory holds kUnfinishedMarker; a set still marked (its process was
// killed) is refused when opened, with what to do.
TEST(ShardedWrite, ASetLeftMarkedUnfinishedIsRefused) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 50, true);
  write_sharded(store, dir.path(), rows_per_shard(20, 64), [&](int64_t, int64_t) {
    EXPECT_TRUE(fs::exists(dir / std::string(kUnfinishedMarker)));
  });
  EXPECT_FALSE(fs::exists(dir / std::string(kUnfinishedMarker)));
  EXPECT_EQ(open_sharded_dataset(dir.path().string()).num_rows, 50);
  testing::write_text(dir / std::string(kUnfinishedMarker), "x");
  EXPECT_EQ(data_error_of([&] { open_sharded_dataset(dir.path().string()); }),
            dir.path().string() + ": feeder convert has not finished writing this set (.feeder-convert-unfinished is "
                                  "there): it is being written, or it was cut short (the process killed), and shards "
                                  "may be missing; then convert it again into an empty directory");
  // Its shards through a glob or one by one: refused too (they read as a whole set of fewer rows).
  const std::string glob = (dir / "part-*.parquet").string();
  EXPECT_NE(data_error_of([&] { open_sharded_dataset(glob); }).find(glob + ": feeder convert has not finished writing "
                                                                     "the set in " + dir.path().string()),
            std::string::npos);
  const std::string shard = (dir / "part-00001.parquet").string();
  EXPECT_NE(data_error_of([&] { open_sharded_dataset(shard); }).find("shards may be missing"), std::string::npos);
}

TEST(ShardedWrite, RefusesADirectoryHoldingParquetFilesOrAnIndex) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 10, true);
  testing::write_text(dir / "old.parquet", "x");
  testing::write_text(dir / "notes.txt", "x");
  const auto refused = [&] {
    try {
      write_sharded(store, dir.path(), rows_per_shard(5, 5));
    } catch (const OptionsError& error) {
      return std::string(error.what());
    }
    ADD_FAILURE() << "nothing thrown";
    return std::string();
  };
  EXPECT_EQ(refused(), dir.path().string() + ": already holds old.parquet; write a sharded set into an empty or new directory");
  testing::write_text(dir / "index.json", "{}");
  EXPECT_EQ(refused(),
            dir.path().string() + ": already holds index.json and 1 more; write a sharded set into an empty or new directory");
  EXPECT_EQ(file_names(dir.path()), (std::vector<std::string>{"index.json", "notes.txt", "old.parquet"}));
}

TEST(ShardedWrite, OptionsNeedExactlyOneShardBound) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 10, true);
  ShardWriteOptions options;
  EXPECT_THROW(write_sharded(store, dir.path(), options), OptionsError);
  options.shard_rows = 5;
  options.shard_size_bytes = 1000;
  EXPECT_THROW(write_sharded(store, dir.path(), options), OptionsError);
  options.shard_size_bytes = -1;
  EXPECT_THROW(write_sharded(store, dir.path(), options), OptionsError);
}

// Shards larger than a row group hold whole row groups and land within one row group under the target.
TEST(ShardedWrite, ShardSizeInWholeRowGroups) {
  TempDir dir;
  const ImageStore store = testing::make_store(ImageShape{1, 16, 16}, 500, true);
  ShardWriteOptions options;
  options.shard_size_bytes = 100'000;
  options.parquet.row_group_size = 32;
  const ShardedDataset dataset = write_sharded(store, dir.path(), options);
  ASSERT_GE(dataset.shards.size(), 3u);
  const int64_t shard_rows = dataset.shards[0].num_rows;
  EXPECT_EQ(shard_rows % 32, 0);
  EXPECT_GE(shard_rows, 64);
  const uint64_t group_bytes = dataset.shards[0].size_bytes / static_cast<uint64_t>(shard_rows / 32);
  for (size_t i = 0; i + 1 < dataset.shards.size(); ++i) {
    EXPECT_EQ(dataset.shards[i].num_rows, shard_rows);
    EXPECT_LE(dataset.shards[i].size_bytes, 100'000u * 102 / 100) << i;
    EXPECT_GE(dataset.shards[i].size_bytes + group_bytes, 100'000u) << i;
  }
  // The candidates are gone: only the shards and the index are left.
  EXPECT_EQ(file_names(dir.path()).size(), dataset.shards.size() + 1);
}

// Shards smaller than a row group land within 90..100% of the target (for rows alike).
TEST(ShardedWrite, ShardSizeWithinARowGroup) {
  TempDir dir;
  const ImageStore store = testing::make_store(ImageShape{1, 16, 16}, 400, true);
  ShardWriteOptions options;
  options.shard_size_bytes = 80'000;  // about 40 kB of footer and page headers for 256 columns, and rows
  const ShardedDataset dataset = write_sharded(store, dir.path(), options);
  ASSERT_GE(dataset.shards.size(), 3u);
  for (size_t i = 0; i + 1 < dataset.shards.size(); ++i) {
    EXPECT_LE(dataset.shards[i].size_bytes, 80'000u * 102 / 100) << i;
    EXPECT_GE(dataset.shards[i].size_bytes, 80'000u * 88 / 100) << i;
    EXPECT_EQ(dataset.shards[i].num_rows, dataset.shards[0].num_rows);
  }
  EXPECT_EQ(file_names(dir.path()).size(), dataset.shards.size() + 1);
}

TEST(ShardedWrite, EmptyStoreGivesOneEmptyShard) {
  TempDir dir;
  const ImageStore store(kShape, 0, true);
  write_sharded(store, dir.path(), rows_per_shard(10, 10));
  const ShardedDataset dataset = open_sharded_dataset(dir.path().string());
  EXPECT_EQ(dataset.num_rows, 0);
  ASSERT_EQ(dataset.shards.size(), 1u);
  const auto source = open_parquet_source(dataset);
  EXPECT_EQ(source->size(), 0);
  EXPECT_EQ(source->num_blocks(), 0);
}

TEST(ShardedOpen, DirectoryWithoutIndexIsDescribedFromTheFooters) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 100, true);
  const ShardedDataset written = write_sharded(store, dir.path(), rows_per_shard(30, 16));
  fs::remove(dir / "index.json");
  testing::write_text(dir / "_SUCCESS", "");  // Spark's marker is not a shard
  testing::write_text(dir / "README.txt", "not a shard");
  const ShardedDataset dataset = open_sharded_dataset(dir.path().string());
  EXPECT_FALSE(dataset.indexed);
  EXPECT_EQ(dataset.shards.size(), 4u);
  EXPECT_EQ(dataset.num_rows, 100);
  EXPECT_EQ(dataset.shape, kShape);
  EXPECT_EQ(dataset.label_min, -7);  // from the label chunks' statistics
  EXPECT_EQ(dataset.label_max, int64_t{1} << 40);
  EXPECT_FALSE(dataset.shards[0].content_hash.has_value());
  EXPECT_NE(dataset.fingerprint, written.fingerprint);
  EXPECT_EQ(open_sharded_dataset(dir.path().string()).fingerprint, dataset.fingerprint);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(dataset.shards[i].row_group_rows, written.shards[i].row_group_rows);
    EXPECT_EQ(dataset.shards[i].row_group_max_compressed_bytes, written.shards[i].row_group_max_compressed_bytes);
  }
  testing::expect_same_images(read_all(*open_parquet_source(dataset)), store);
}

// A set DuckDB wrote as one COPY to a directory: three files, no index (INDEX.md).
TEST(ShardedOpen, DirectoryWrittenByDuckdb) {
  const std::string dir = std::string(FEEDER_TEST_DATA_DIR) + "/parquet-testing/generated/duckdb-1.5.6/sharded";
  for (const std::string& spec : {dir, dir + "/data_*.parquet"}) {
    SCOPED_TRACE(spec);
    const ShardedDataset dataset = open_sharded_dataset(spec);
    EXPECT_FALSE(dataset.indexed);
    ASSERT_EQ(dataset.shards.size(), 3u);
    EXPECT_EQ(dataset.shards[2].path.filename(), "data_2.parquet");
    EXPECT_EQ(dataset.num_rows, 5000);
    EXPECT_EQ(dataset.shape, (ImageShape{1, 2, 2}));
    EXPECT_EQ(dataset.label_min, 0);
    EXPECT_EQ(dataset.label_max, 9);
    const ImageStore store = read_all(*open_parquet_source(dataset));
    for (int64_t row = 0; row < 5000; ++row) {
      ASSERT_EQ(store.label(row), row % 10);
      for (int64_t k = 0; k < 4; ++k) {
        ASSERT_EQ(store.image(row)[k], (row + k) % 3 == 0 ? 0 : (row * 31 + k * 17) % 256) << row << " " << k;
      }
    }
  }
}

TEST(ShardedOpen, GlobsMatchTheLastComponent) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 100, true);
  write_sharded(store, dir.path(), rows_per_shard(30, 16));
  const ShardedDataset middle = open_sharded_dataset((dir / "part-0000[12].parquet").string());
  EXPECT_FALSE(middle.indexed);
  ASSERT_EQ(middle.shards.size(), 2u);
  EXPECT_EQ(middle.shards[0].path, dir / "part-00001.parquet");
  EXPECT_EQ(middle.shards[1].path, dir / "part-00002.parquet");
  EXPECT_EQ(middle.num_rows, 60);
  EXPECT_EQ(middle.root, dir.path());
  const ImageStore read = read_all(*open_parquet_source(middle));
  EXPECT_TRUE(std::equal(read.pixels().begin(), read.pixels().end(), store.image(30)));
  // index.json matches "*" but is never a shard.
  EXPECT_EQ(open_sharded_dataset((dir / "*").string()).num_rows, 100);
  EXPECT_EQ(open_sharded_dataset((dir / "part-?????.parquet").string()).shards.size(), 4u);
  EXPECT_EQ(data_error_of([&] { open_sharded_dataset((dir / "shard-*.parquet").string()); }),
            (dir / "shard-*.parquet").string() + ": no files match");
  EXPECT_EQ(data_error_of([&] { open_sharded_dataset((dir / "*" / "part-*.parquet").string()); }),
            (dir / "*" / "part-*.parquet").string() + ": only the last path component may hold a glob (*, ?, [...])");
}

TEST(ShardedOpen, SingleFile) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 40, true);
  parquet::ParquetWriteOptions options;
  options.row_group_size = 16;
  parquet::write_parquet(store, dir / "one.parquet", options);
  const ShardedDataset dataset = open_sharded_dataset((dir / "one.parquet").string());
  EXPECT_EQ(dataset.root, dir.path());
  ASSERT_EQ(dataset.shards.size(), 1u);
  EXPECT_EQ(dataset.num_row_groups(), 3);
  testing::expect_same_images(read_all(*open_parquet_source(dataset)), store);
}

TEST(ShardedOpen, WhatNamesASetOfShards) {
  TempDir dir;
  parquet::write_parquet(testing::make_store(kShape, 4, true), dir / "one.parquet");
  EXPECT_EQ(data_error_of([&] { open_sharded_dataset((dir / "absent").string()); }),
            (dir / "absent").string() + ": no such file or directory");
  fs::create_directory(dir / "empty");
  EXPECT_EQ(data_error_of([&] { open_sharded_dataset((dir / "empty").string()); }),
            (dir / "empty").string() + ": no .parquet files and no index.json");
}

// Shards of one set must agree with the first; the message names the file and what differs.
TEST(ShardedOpen, ShardsThatDisagreeWithTheFirstAreNamed) {
  TempDir dir;
  parquet::write_parquet(testing::make_store(kShape, 10, true), dir / "a.parquet");
  parquet::write_parquet(testing::make_store(ImageShape{1, 3, 3}, 10, true), dir / "b.parquet");
  EXPECT_EQ(data_error_of([&] { open_sharded_dataset(dir.path().string()); }),
            (dir / "b.parquet").string() + ": images are 1x3x3, but a.parquet has 1x4x4");
  parquet::write_parquet(testing::make_store(kShape, 10, false), dir / "b.parquet");
  EXPECT_EQ(data_error_of([&] { open_sharded_dataset(dir.path().string()); }),
            (dir / "b.parquet").string() + ": no label column 'label', but a.parquet has one");
  parquet::ParquetWriteOptions image_layout;
  image_layout.layout = parquet::ParquetLayout::kImage;
  parquet::write_parquet(testing::make_store(kShape, 10, true), dir / "b.parquet", image_layout);
  EXPECT_EQ(data_error_of([&] { open_sharded_dataset(dir.path().string()); }),
            (dir / "b.parquet").string() +
                ": columns label INT64, image column 'image' FIXED_LEN_BYTE_ARRAY(16) differ from those of a.parquet: "
                "label INT64, 16 pixel columns pixel1..pixel16 INT32 INT(8,false)");
}

TEST(ShardedOpen, IndexedShardsMustExistWithTheirRecordedSizes) {
  TempDir dir;
  write_sharded(testing::make_store(kShape, 100, true), dir.path(), rows_per_shard(30, 16));
  const auto size = fs::file_size(dir / "part-00002.parquet");
  fs::resize_file(dir / "part-00002.parquet", size - 1);
  EXPECT_EQ(data_error_of([&] { open_sharded_dataset(dir.path().string()); }),
            (dir / "part-00002.parquet").string() + ": " + std::to_string(size - 1) + " bytes, but index.json records " +
                std::to_string(size) + " (changed after the index was written)");
  fs::remove(dir / "part-00002.parquet");
  EXPECT_EQ(data_error_of([&] { open_sharded_dataset(dir.path().string()); }),
            (dir / "part-00002.parquet").string() + ": listed in index.json but missing");
}

TEST(ShardedOpen, MalformedIndexIsNamed) {
  TempDir dir;
  write_sharded(testing::make_store(kShape, 10, true), dir.path(), rows_per_shard(5, 5));
  const std::string index_path = (dir / "index.json").string();
  nlohmann::json index = nlohmann::json::parse(testing::read_text(dir / "index.json"));
  const auto with = [&](const nlohmann::json& changed) {
    write_file_atomically(dir / "index.json", changed.dump());
    return data_error_of([&] { open_sharded_dataset(dir.path().string()); });
  };
  nlohmann::json bad = index;
  bad["num_rows"] = 11;
  EXPECT_EQ(with(bad), index_path + ": \"num_rows\" is 11 but the shards add up to 10");
  bad = index;
  bad["shards"][1]["file"] = "../part-00001.parquet";
  EXPECT_EQ(with(bad), index_path + ": shard 1: \"file\" is \"../part-00001.parquet\", not a plain file name");
  bad = index;
  bad["shards"][0]["row_group_rows"] = {2, 2};
  EXPECT_EQ(with(bad), index_path + ": shard 0 (part-00000.parquet): \"rows\" is 5 but its row groups add up to 4");
  bad = index;
  bad["version"] = 2;
  EXPECT_EQ(with(bad), index_path + ": index version 2, this feeder reads version 1");
  bad = index;
  bad.erase("shape");
  EXPECT_EQ(with(bad), index_path + ": no \"shape\"");
  testing::write_text(dir / "index.json", "{\"format\": ");
  EXPECT_EQ(data_error_of([&] { open_sharded_dataset(dir.path().string()); }).rfind(index_path + ": not valid JSON: ", 0), 0u);
}

// The ways a shard can change under an open set, each with its message from read_block.
class ShardChanged : public ::testing::Test {
 protected:
  void SetUp() override {
    write_sharded(store_, dir_.path(), rows_per_shard(30, 16));  // shards of 16 + 14 rows, the last 10
  }
  fs::path shard(int idx) const { return dir_ / ("part-0000" + std::to_string(idx) + ".parquet"); }
  std::string where(int idx, int row_group) const {
    return shard(idx).string() + ": row group " + std::to_string(row_group) + ": ";
  }
  // Block 5 is shard 2's row group 1.
  std::string error_of_block_5(const SampleSource& source) const { return data_error_of([&] { read_one(source, 5); }); }

  TempDir dir_;
  const ImageStore store_ = testing::make_store(kShape, 100, true);
};

TEST_F(ShardChanged, FileDeletedAfterOpen) {
  const auto source = open_parquet_source(open_sharded_dataset(dir_.path().string()));
  fs::remove(shard(2));
  EXPECT_EQ(error_of_block_5(*source), where(2, 1) + "file vanished after the set was opened");
  read_one(*source, 0);  // the other shards still read
}

TEST_F(ShardChanged, FileTruncated) {
  const auto source = open_parquet_source(open_sharded_dataset(dir_.path().string()));
  const auto size = fs::file_size(shard(2));
  fs::resize_file(shard(2), size / 2);
  EXPECT_EQ(error_of_block_5(*source), where(2, 1) + "file truncated to " + std::to_string(size / 2) +
                                           " bytes (index.json records " + std::to_string(size) + ")");
}

TEST_F(ShardChanged, FileTruncatedWithoutAnIndex) {
  fs::remove(dir_ / "index.json");
  const auto source = open_parquet_source(open_sharded_dataset(dir_.path().string()));
  const auto size = fs::file_size(shard(2));
  fs::resize_file(shard(2), size / 2);
  EXPECT_EQ(error_of_block_5(*source), where(2, 1) + "file truncated to " + std::to_string(size / 2) + " bytes (" +
                                           std::to_string(size) + " when the set was opened)");
}

TEST_F(ShardChanged, DifferentShape) {
  const auto source = open_parquet_source(open_sharded_dataset(dir_.path().string()));
  parquet::ParquetWriteOptions options;
  options.row_group_size = 16;
  parquet::write_parquet(testing::make_store(ImageShape{1, 3, 3}, 30, true), shard(2), options);
  EXPECT_EQ(error_of_block_5(*source),
            where(2, 1) + "images are 1x3x3, the set's are 1x4x4 (file changed after the set was opened)");
}

TEST_F(ShardChanged, DifferentSchema) {
  const auto source = open_parquet_source(open_sharded_dataset(dir_.path().string()));
  parquet::ParquetWriteOptions options;
  options.row_group_size = 16;
  parquet::write_parquet(testing::make_store(kShape, 30, false), shard(2), options);
  EXPECT_EQ(error_of_block_5(*source),
            where(2, 1) +
                "columns changed after the set was opened: no label, 16 pixel columns pixel1..pixel16 INT32 INT(8,false) "
                "(the set's: label INT64, 16 pixel columns pixel1..pixel16 INT32 INT(8,false))");
}

TEST_F(ShardChanged, DifferentRowGroups) {
  const auto source = open_parquet_source(open_sharded_dataset(dir_.path().string()));
  parquet::ParquetWriteOptions options;
  options.row_group_size = 10;
  parquet::write_parquet(store_, 60, 30, shard(2), options);
  EXPECT_EQ(error_of_block_5(*source),
            where(2, 1) + "row groups changed after the set was opened: rows [10 10 10] (the set's: [16 14])");
}

// Same shape, columns and row groups, other pixels: only the size tells.
TEST_F(ShardChanged, SizeDiffersFromTheIndex) {
  const auto source = open_parquet_source(open_sharded_dataset(dir_.path().string()));
  const auto size = fs::file_size(shard(2));
  ImageStore other(kShape, 30, true);
  std::fill(other.pixels().begin(), other.pixels().end(), uint8_t{0});
  std::fill(other.labels().begin(), other.labels().end(), 1);
  parquet::ParquetWriteOptions options;
  options.row_group_size = 16;
  parquet::write_parquet(other, shard(2), options);
  const auto new_size = fs::file_size(shard(2));
  ASSERT_NE(new_size, size);
  EXPECT_EQ(error_of_block_5(*source), where(2, 1) + "file size changed to " + std::to_string(new_size) +
                                           " bytes (index.json records " + std::to_string(size) + ")");
}

// Once a shard's footer is open, a truncation shows as a short read.
TEST_F(ShardChanged, FileTruncatedWhileItsFooterIsOpen) {
  const auto source = open_parquet_source(open_sharded_dataset(dir_.path().string()));
  read_one(*source, 4);  // shard 2's row group 0: its footer is now open
  fs::resize_file(shard(2), 10);
  const std::string message = error_of_block_5(*source);
  EXPECT_EQ(message.rfind(where(2, 1) + "file truncated while open: bytes ", 0), 0u) << message;
  EXPECT_TRUE(message.ends_with(" needed, the file ends at 10")) << message;
}

// More shards than stay open, read by several threads at once.
TEST(ShardedSource, ThreadsReadBlocksOfManyShards) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 400, true);
  write_sharded(store, dir.path(), rows_per_shard(20, 5));  // 20 shards, 80 blocks
  const auto source = open_parquet_source(open_sharded_dataset(dir.path().string()));
  ASSERT_EQ(source->num_blocks(), 80);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> scratch;
      std::vector<uint8_t> pixels(5 * 16);
      std::vector<int64_t> labels(5);
      for (int pass = 0; pass < 3; ++pass) {
        for (int64_t block = (t * 7 + pass * 13) % 80, n = 0; n < 80; block = (block + 3) % 80, ++n) {
          source->read_block(block, scratch, {.payload = pixels.data(), .labels = labels.data()});
          const int64_t first = block * 5;
          if (!std::equal(pixels.begin(), pixels.end(), store.image(first)) ||
              !std::equal(labels.begin(), labels.end(), store.labels().begin() + first)) {
            ++mismatches;
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0);
  std::vector<uint8_t> scratch;
  uint8_t pixels[16];
  int64_t labels[1];
  EXPECT_THROW(source->read_block(80, scratch, {.payload = pixels, .labels = labels}), std::out_of_range);
  EXPECT_THROW(source->read_block(-1, scratch, {.payload = pixels, .labels = labels}), std::out_of_range);
}

TEST(ShardedDescribe, ASmallSet) {
  TempDir dir;
  write_sharded(testing::make_store(kShape, 100, true), dir / "set", rows_per_shard(40, 16));
  const ShardedDataset dataset = open_sharded_dataset((dir / "set").string());
  std::string expected = "sharded Parquet set: " + (dir / "set").string() + " (indexed by index.json)\n" +
                         "shards: 3, rows: 100, row groups: 8\n"
                         "images: 1x4x4, labels -7..1099511627776\n"
                         "columns: label INT64, 16 pixel columns pixel1..pixel16 INT32 INT(8,false)\n";
  uint64_t size_bytes = 0;
  for (const ShardInfo& shard : dataset.shards) size_bytes += shard.size_bytes;
  int64_t largest = 0;
  for (const ShardInfo& shard : dataset.shards) largest = std::max(largest, shard.row_group_max_compressed_bytes);
  expected += "on disk: " + format_byte_size(static_cast<int64_t>(size_bytes)) + ", decoded: 2.3 KiB, largest row group read: " +
              format_byte_size(largest) + "\n";
  char fingerprint[17];
  std::snprintf(fingerprint, sizeof(fingerprint), "%016llx", static_cast<unsigned long long>(dataset.fingerprint));
  expected += std::string("fingerprint: ") + fingerprint + "\n";
  for (int i = 0; i < 3; ++i) {
    const ShardInfo& shard = dataset.shards[static_cast<size_t>(i)];
    expected += "  part-0000" + std::to_string(i) + ".parquet: " + std::to_string(shard.num_rows) + " rows, " +
                std::to_string(shard.row_group_rows.size()) + " row groups, " +
                format_byte_size(static_cast<int64_t>(shard.size_bytes)) + "\n";
  }
  EXPECT_EQ(describe_sharded_dataset(dataset), expected);
}

TEST(ShardedDescribe, ALargeSetListsTheFirstAndLastShards) {
  TempDir dir;
  write_sharded(testing::make_store(kShape, 100, false), dir.path(), rows_per_shard(10, 10));
  fs::remove(dir / "index.json");
  const std::string text = describe_sharded_dataset(open_sharded_dataset(dir.path().string()));
  EXPECT_NE(text.find("(no index; described from the footers)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("images: 1x4x4, unlabeled\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  part-00005.parquet: 10 rows, 1 row group, "), std::string::npos) << text;
  EXPECT_NE(text.find("  ... 3 more\n  part-00009.parquet: "), std::string::npos) << text;
  EXPECT_EQ(text.find("part-00006"), std::string::npos) << text;
}

}  // namespace
}  // namespace feeder
