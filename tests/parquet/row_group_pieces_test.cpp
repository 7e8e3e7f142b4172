// ParquetRowGroupReader::read_rows: parts of a row group, read from only the pages that hold them,
// equal the same rows of the whole row group, for feeder's files of every layout, codec and page
// size and for DuckDB's and arrow-rs's files; bad requests are refused.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "feeder/formats/parquet/row_group_reader.h"
#include "feeder/formats/parquet/writer.h"
#include "formats/test_files.h"
#include "parquet/reader_test_util.h"
#include "parquet/writer_test_util.h"

namespace feeder::parquet {
namespace {

using feeder::testing::TempDir;
using RowRange = ParquetRowGroupReader::RowRange;

struct Rows {
  std::vector<uint8_t> pixels;
  std::vector<int64_t> labels;
};

// Reads `parts` ([begin, end) pairs) of row group `rg` with read_rows and checks each against the
// whole row group read with read_row_group.
void expect_parts_equal_row_group(const ParquetRowGroupReader& reader, int64_t rg,
                                  const std::vector<std::pair<int64_t, int64_t>>& parts) {
  const int64_t rows = reader.row_group_rows(rg);
  const int64_t image_bytes = reader.shape().num_pixels();
  std::vector<uint8_t> scratch;
  Rows whole{std::vector<uint8_t>(static_cast<size_t>(rows * image_bytes)), std::vector<int64_t>(static_cast<size_t>(rows))};
  reader.read_row_group(rg, scratch, whole.pixels.data(), whole.labels.data());
  std::vector<Rows> got(parts.size());
  std::vector<RowRange> ranges;
  for (size_t i = 0; i < parts.size(); ++i) {
    const int64_t n = parts[i].second - parts[i].first;
    got[i].pixels.assign(static_cast<size_t>(n * image_bytes), 0xee);
    got[i].labels.assign(static_cast<size_t>(n), -7);
    ranges.push_back({parts[i].first, parts[i].second, got[i].pixels.data(), got[i].labels.data()});
  }
  reader.read_rows(rg, ranges, scratch);
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto [begin, end] = parts[i];
    SCOPED_TRACE("row group " + std::to_string(rg) + " rows " + std::to_string(begin) + ".." + std::to_string(end));
    EXPECT_TRUE(std::equal(got[i].pixels.begin(), got[i].pixels.end(), whole.pixels.begin() + begin * image_bytes));
    EXPECT_TRUE(std::equal(got[i].labels.begin(), got[i].labels.end(), whole.labels.begin() + begin));
  }
}

// Disjoint random parts of [0, rows), in random order: single rows, neighbours, page-sized runs.
std::vector<std::pair<int64_t, int64_t>> random_parts(int64_t rows, std::mt19937_64& rng) {
  std::vector<int64_t> cuts{0, rows};
  const int64_t num_cuts = std::uniform_int_distribution<int64_t>(1, std::min<int64_t>(rows - 1, 12))(rng);
  for (int64_t i = 0; i < num_cuts; ++i) cuts.push_back(std::uniform_int_distribution<int64_t>(1, rows - 1)(rng));
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<std::pair<int64_t, int64_t>> parts;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    if (rng() % 3 != 0) parts.emplace_back(cuts[i], cuts[i + 1]);  // some rows are left out
  }
  if (parts.empty()) parts.emplace_back(cuts[0], cuts[1]);
  std::shuffle(parts.begin(), parts.end(), rng);
  return parts;
}

TEST(ParquetRowGroupPieces, PartsEqualTheRowGroupForEveryLayoutCodecAndPageSize) {
  TempDir dir;
  const ImageStore store = feeder::testing::make_store(ImageShape{3, 4, 5}, 300, true);
  std::mt19937_64 rng(7);
  for (const ParquetLayout layout : {ParquetLayout::kColumns, ParquetLayout::kImage}) {
    for (const Codec codec : {Codec::kZstd, Codec::kSnappy, Codec::kUncompressed}) {
      for (const int64_t page_bytes : {int64_t{100}, int64_t{1000}, int64_t{1} << 20}) {
        SCOPED_TRACE(to_string(layout) + " " + to_string(codec) + " pages of " + std::to_string(page_bytes) + " bytes");
        ParquetWriteOptions options;
        options.layout = layout;
        options.codec = codec;
        options.row_group_size = 128;  // 128, 128, 44
        options.page_size_bytes = page_bytes;
        const auto path = dir / (to_string(layout) + to_string(codec) + std::to_string(page_bytes) + ".parquet");
        write_parquet(store, path, options);
        const ParquetRowGroupReader reader = ParquetRowGroupReader::open(path);
        EXPECT_GT(reader.max_rows_read_bytes(), 0);
        for (int64_t rg = 0; rg < reader.num_row_groups(); ++rg) {
          expect_parts_equal_row_group(reader, rg, {{0, 1}});
          expect_parts_equal_row_group(reader, rg, {{reader.row_group_rows(rg) - 1, reader.row_group_rows(rg)}});
          expect_parts_equal_row_group(reader, rg, {{0, reader.row_group_rows(rg)}});
          for (int trial = 0; trial < 4; ++trial) expect_parts_equal_row_group(reader, rg, random_parts(reader.row_group_rows(rg), rng));
        }
      }
    }
  }
}

TEST(ParquetRowGroupPieces, PartsOfDuckdbAndArrowRsFilesEqualTheRowGroup) {
  std::mt19937_64 rng(11);
  for (const char* fixture : {"generated/duckdb-1.5.6/duckdb_v1_uncompressed_rg1000.parquet",
                              "generated/duckdb-1.5.6/duckdb_v1_snappy_default.parquet",
                              "generated/duckdb-1.5.6/duckdb_v2_zstd.parquet",
                              "generated/parquet-rs-59.3.0/arrowrs_v1_snappy_rg1000.parquet",
                              "generated/parquet-rs-59.3.0/arrowrs_v2_zstd.parquet",
                              "generated/parquet-rs-59.3.0/arrowrs_v2_uncompressed_nodict.parquet"}) {
    SCOPED_TRACE(fixture);
    ParquetImageOptions options;
    for (int k = 0; k < 16; ++k) options.pixel_columns.push_back("p" + std::to_string(k));
    const ParquetRowGroupReader reader = ParquetRowGroupReader::open(testing::fixture(fixture), options);
    for (int64_t rg = 0; rg < reader.num_row_groups(); ++rg) {
      for (int trial = 0; trial < 6; ++trial) expect_parts_equal_row_group(reader, rg, random_parts(reader.row_group_rows(rg), rng));
    }
  }
}

TEST(ParquetRowGroupPieces, ThreadsReadPartsOfOneRowGroupAtOnce) {
  TempDir dir;
  const ImageStore store = feeder::testing::make_store(ImageShape{1, 4, 4}, 2000, true);
  ParquetWriteOptions options;
  options.layout = ParquetLayout::kImage;
  options.page_size_bytes = 256;
  write_parquet(store, dir / "set.parquet", options);
  const ParquetRowGroupReader reader = ParquetRowGroupReader::open(dir / "set.parquet");
  ASSERT_EQ(reader.num_row_groups(), 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t));
      for (int trial = 0; trial < 10; ++trial) expect_parts_equal_row_group(reader, 0, random_parts(2000, rng));
    });
  }
  for (std::thread& thread : threads) thread.join();
}

TEST(ParquetRowGroupPieces, PartsOutsideTheRowGroupOrOverlappingAreRefused) {
  TempDir dir;
  const ImageStore store = feeder::testing::make_store(ImageShape{1, 2, 2}, 100, true);
  write_parquet(store, dir / "set.parquet", ParquetWriteOptions{});
  const ParquetRowGroupReader reader = ParquetRowGroupReader::open(dir / "set.parquet");
  std::vector<uint8_t> scratch;
  std::vector<uint8_t> pixels(400);
  std::vector<int64_t> labels(100);
  const auto read = [&](std::vector<std::pair<int64_t, int64_t>> parts, int64_t rg = 0) {
    std::vector<RowRange> ranges;
    for (const auto& [begin, end] : parts) ranges.push_back({begin, end, pixels.data(), labels.data()});
    reader.read_rows(rg, ranges, scratch);
  };
  EXPECT_THROW(read({{90, 101}}), std::out_of_range);
  EXPECT_THROW(read({{-1, 3}}), std::out_of_range);
  EXPECT_THROW(read({{5, 5}}), std::out_of_range);
  EXPECT_THROW(read({{0, 10}, {9, 12}}), std::out_of_range);
  EXPECT_THROW(read({{0, 10}}, 1), std::out_of_range);
  read({{10, 20}, {0, 10}});  // adjacent, in any order
}

}  // namespace
}  // namespace feeder::parquet
