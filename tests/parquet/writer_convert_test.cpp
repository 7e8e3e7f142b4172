// `feeder convert`: conversions between CSV, IDX and Parquet, exit codes and error text.

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "feeder/data/sampler.h"
#include "feeder/formats/csv.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/formats/parquet/row_group_reader.h"
#include "feeder/formats/parquet/writer.h"
#include "feeder/formats/sharded.h"
#include "feeder/io/file.h"
#include "formats/parquet/detail/chunk_reader.h"
#include "parquet/writer_test_util.h"

namespace feeder {
namespace {

using testing::TempDir;

struct RunResult {
  int exit_code = 0;
  std::string err;
};

// Runs convert_main with std::cerr captured (the report goes to stdout and is left alone).
RunResult run_convert(const std::vector<std::string>& args) {
  std::ostringstream err;
  std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
  RunResult result;
  try {
    result.exit_code = cli::convert_main(args);
  } catch (...) {
    std::cerr.rdbuf(old);
    throw;
  }
  std::cerr.rdbuf(old);
  result.err = err.str();
  return result;
}

TEST(ParquetConvert, CsvToParquetToCsvKeepsEveryValue) {
  TempDir dir;
  ImageStore store = testing::make_store(ImageShape{1, 28, 28}, 30, true);
  for (int64_t row = 0; row < store.size(); ++row) store.labels()[static_cast<size_t>(row)] = row % 10;  // CSV labels are 0..255
  write_csv(store, dir / "in.csv");
  for (const std::string layout : {"columns", "image"}) {
    SCOPED_TRACE(layout);
    ASSERT_EQ(run_convert({(dir / "in.csv").string(), (dir / "mid.parquet").string(), "--layout", layout, "--codec", "gzip",
                           "--row-group-size", "7"}).exit_code, 0);
    testing::expect_same_images(parquet::read_parquet_images(dir / "mid.parquet"), store);
    ASSERT_EQ(run_convert({(dir / "mid.parquet").string(), (dir / "out.csv").string()}).exit_code, 0);
    const std::vector<uint8_t> in = read_file_raw(dir / "in.csv");
    const std::vector<uint8_t> out = read_file_raw(dir / "out.csv");
    EXPECT_EQ(in, out);  // the article's CSV layout both ways, byte for byte
  }
}

TEST(ParquetConvert, ShapeOptionIsRecordedInTheFile) {
  TempDir dir;
  const ImageStore store = testing::make_store(ImageShape{3, 4, 5}, 6, true);
  parquet::write_parquet(store, dir / "in.parquet");
  ASSERT_EQ(run_convert({(dir / "in.parquet").string(), (dir / "out.parquet").string(), "--shape", "3x2x10"}).exit_code, 0);
  EXPECT_EQ(parquet::read_parquet_images(dir / "out.parquet").shape(), (ImageShape{3, 2, 10}));
}

// IDX files carry (N,H,W) only; --shape gives them channels.
TEST(ParquetConvert, ShapeOptionReshapesIdxImages) {
  TempDir dir;
  const std::string idx = std::string("\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x03", 16) +
                          std::string("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\xff", 12);
  write_file_atomically(dir / "x-images-idx3-ubyte", idx);
  const std::string in = (dir / "x-images-idx3-ubyte").string();
  ASSERT_EQ(run_convert({in, (dir / "out.parquet").string(), "--shape", "2x1x3"}).exit_code, 0);
  const ImageStore store = parquet::read_parquet_images(dir / "out.parquet");
  EXPECT_EQ(store.shape(), (ImageShape{2, 1, 3}));
  EXPECT_FALSE(store.labeled());
  EXPECT_EQ(std::vector<uint8_t>(store.pixels().begin(), store.pixels().end()),
            (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 255}));

  const RunResult mismatch = run_convert({in, (dir / "bad.parquet").string(), "--shape", "1x2x2"});
  EXPECT_EQ(mismatch.exit_code, 1);
  EXPECT_EQ(mismatch.err, "feeder convert: " + in + ": images have 6 pixels, --shape 1x2x2 needs 4\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.parquet"));
}

TEST(ParquetConvert, UsageErrorsExitTwoWithTheUsageLine) {
  TempDir dir;
  write_csv(testing::make_store(ImageShape{1, 2, 2}, 3, true), dir / "in.csv");
  const std::string in = (dir / "in.csv").string();
  const std::string out = (dir / "out.parquet").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "IN is required"},
      {{in}, "OUT is required"},
      {{in, out, "--codec", "zip"}, "--codec: unknown Parquet codec 'zip'"},
      {{in, out, "--layout", "rows"}, "--layout: unknown layout 'rows' (use columns, image or png)"},
      {{in, out, "--row-group-size", "0"}, "--row-group-size: needs an integer >= 1, got '0'"},
      {{in, out, "--level", "0"}, "--level: needs an integer >= 1, got '0'"},  // was taken as the default
      {{in, out, "--row-group-size"}, "--row-group-size"},
      {{in, out, "--shape", "1x28"}, "--shape"},
      {{in, out, "--shape", "1x0x28"}, "--shape: needs an integer >= 1, got '0'"},
      {{in, out, "--frobnicate", "1"}, "--frobnicate"},
  };
  for (const auto& [args, message] : cases) {
    const RunResult result = run_convert(args);
    EXPECT_EQ(result.exit_code, 2) << message;
    EXPECT_EQ(result.err.rfind("feeder convert: ", 0), 0u) << result.err;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("Usage: feeder convert"), std::string::npos) << result.err;
  }
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(ParquetConvert, UnknownOutputFormatExitsTwo) {
  TempDir dir;
  write_csv(testing::make_store(ImageShape{1, 2, 2}, 3, true), dir / "in.csv");
  const RunResult result = run_convert({(dir / "in.csv").string(), (dir / "out.txt").string()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "feeder convert: cannot tell the output format of '" + (dir / "out.txt").string() +
                            "' (use .parquet or .csv)\n");
}

TEST(ParquetConvert, MissingInputExitsOneNamingTheFile) {
  TempDir dir;
  const RunResult result = run_convert({(dir / "nope.csv").string(), (dir / "out.parquet").string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err, "feeder convert: " + (dir / "nope.csv").string() + ": no such file or directory\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "out.parquet"));
}

TEST(ParquetConvert, CorruptInputExitsOneAndKeepsTheOldOutput) {
  TempDir dir;
  write_file_atomically(dir / "bad.parquet", "PAR1 this is not a parquet file PAR1");
  write_file_atomically(dir / "out.csv", "old");
  const RunResult result = run_convert({(dir / "bad.parquet").string(), (dir / "out.csv").string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err.rfind("feeder convert: " + (dir / "bad.parquet").string(), 0), 0u) << result.err;
  const std::vector<uint8_t> old = read_file_raw(dir / "out.csv");
  EXPECT_EQ(std::string(old.begin(), old.end()), "old");
}

// Reads a sharded set back through its streaming source.
ImageStore read_sharded(const std::filesystem::path& dir) {
  const std::shared_ptr<SampleSource> source = open_parquet_source(open_sharded_dataset(dir.string()));
  ImageStore store(source->shape(), source->size(), source->labeled());
  std::vector<uint8_t> scratch;
  for (int64_t block = 0; block < source->num_blocks(); ++block) {
    const int64_t first = source->block_starts()[static_cast<size_t>(block)];
    source->read_block(block, scratch, {.payload = store.image(first), .labels = store.labels().data() + first});
  }
  return store;
}

TEST(ParquetConvert, ShardRowsWriteASetAndListItsShards) {
  TempDir dir;
  ImageStore store = testing::make_store(ImageShape{1, 4, 4}, 25, true);
  for (int64_t row = 0; row < store.size(); ++row) store.labels()[static_cast<size_t>(row)] = row % 10;
  write_csv(store, dir / "in.csv");
  ::testing::internal::CaptureStdout();
  const RunResult result = run_convert({(dir / "in.csv").string(), (dir / "shards").string() + "/", "--shard-rows", "10",
                                        "--row-group-size", "4"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");  // no progress lines when stderr is not a terminal
  testing::expect_same_images(read_sharded(dir / "shards"), store);
  // A sharded set's defaults are those that stream well: the image layout and lz4.
  EXPECT_NE(out.find("| in.csv | shards/ | parquet image LZ4_RAW | 25 | 1x4x4 | 3 | "), std::string::npos) << out;
  EXPECT_NE(out.find("| shard | rows | row groups | MB |\n|---|---|---|---|\n| part-00000.parquet | 10 | 3 | "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("| part-00002.parquet | 5 | 2 | "), std::string::npos) << out;
}

TEST(ParquetConvert, ShuffleOnWriteWritesTheRowsInTheSeedsOrderAndRecordsIt) {
  TempDir dir;
  ImageStore store = testing::make_store(ImageShape{1, 4, 4}, 200, true);
  for (int64_t row = 0; row < store.size(); ++row) store.labels()[static_cast<size_t>(row)] = row / 20;  // sorted
  write_csv(store, dir / "in.csv");
  ::testing::internal::CaptureStdout();
  const RunResult result = run_convert({(dir / "in.csv").string(), (dir / "shards").string() + "/", "--shard-rows", "50",
                                        "--shuffle-on-write", "7", "--layout", "columns", "--codec", "zstd"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(out.find("parquet columns ZSTD"), std::string::npos) << out;  // what is given is kept
  EXPECT_NE(out.find("rows shuffled with seed 7 (recorded in index.json)"), std::string::npos) << out;
  const ShardedDataset dataset = open_sharded_dataset((dir / "shards").string());
  ASSERT_TRUE(dataset.shuffled_on_write.has_value());
  EXPECT_EQ(*dataset.shuffled_on_write, 7u);
  EXPECT_NE(describe_sharded_dataset(dataset).find("rows shuffled when written, seed 7"), std::string::npos);
  const ImageStore written = read_sharded(dir / "shards");
  const std::vector<int64_t> order = epoch_order(200, true, 7, 0);
  for (int64_t row = 0; row < 200; ++row) {
    const int64_t from = order[static_cast<size_t>(row)];
    ASSERT_EQ(written.labels()[static_cast<size_t>(row)], store.labels()[static_cast<size_t>(from)]) << row;
    ASSERT_TRUE(std::equal(written.image(row), written.image(row) + 16, store.image(from))) << row;
  }
  // The first shard of 50 rows now holds most labels, not two.
  std::set<int64_t> labels(written.labels().begin(), written.labels().begin() + 50);
  EXPECT_GE(labels.size(), 8u);

  const RunResult file = run_convert({(dir / "in.csv").string(), (dir / "one.parquet").string(), "--shuffle-on-write", "7"});
  EXPECT_NE(file.exit_code, 0);
  EXPECT_NE(file.err.find("--shuffle-on-write applies to a sharded set (an output directory)"), std::string::npos)
      << file.err;
}

// Rows of each data page of `column` in the first row group of a file, from the page headers.
std::vector<int64_t> page_rows_of(const std::filesystem::path& path, const std::string& column) {
  const std::vector<uint8_t> bytes = read_file_raw(path);
  const parquet::ParquetRowGroupReader reader = parquet::ParquetRowGroupReader::open(path);
  const parquet::FileMetadata& metadata = reader.metadata();
  size_t column_idx = 0;
  while (column_idx < metadata.columns.size() && metadata.columns[column_idx].name != column) ++column_idx;
  EXPECT_LT(column_idx, metadata.columns.size()) << column;
  if (column_idx == metadata.columns.size()) return {};
  const std::string name = path.string();
  parquet::detail::ChunkLocation where;
  where.file_bytes = bytes;
  where.file_name = &name;
  where.column = &metadata.columns[column_idx];
  where.chunk = &metadata.row_groups[0].columns[column_idx];
  where.num_row_groups = reader.num_row_groups();
  where.num_rows = metadata.row_groups[0].num_rows;
  const auto read = [&](int64_t offset, int64_t size) {
    return std::span<const uint8_t>(bytes).subspan(static_cast<size_t>(offset),
                                                   std::min<size_t>(static_cast<size_t>(size), bytes.size() - static_cast<size_t>(offset)));
  };
  std::vector<int64_t> rows;
  for (const parquet::detail::PageSpan& page : parquet::detail::locate_pages(where, read).data) rows.push_back(page.num_values);
  return rows;
}

TEST(ParquetConvert, ShardedSetsHavePagesOfOnePiece) {
  TempDir dir;
  ImageStore store = testing::make_store(ImageShape{1, 32, 32}, 100, true);  // pieces of 15 rows
  for (int64_t row = 0; row < store.size(); ++row) store.labels()[static_cast<size_t>(row)] = row % 10;
  write_csv(store, dir / "in.csv");
  ::testing::internal::CaptureStdout();
  const RunResult result = run_convert({(dir / "in.csv").string(), (dir / "shards").string() + "/"});
  ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const ShardedDataset dataset = open_sharded_dataset((dir / "shards").string());
  ASSERT_EQ(dataset.shards.size(), 1u);
  const std::shared_ptr<SampleSource> source = open_parquet_source(dataset);
  EXPECT_EQ(stream_piece_rows(store.shape(), store.size()), 15);
  EXPECT_EQ(source->num_blocks(), 7);  // 6 pieces of 15 and one of 10
  testing::expect_same_images(read_sharded(dir / "shards"), store);
  EXPECT_EQ(page_rows_of(dataset.shards[0].path, "image"), (std::vector<int64_t>{15, 15, 15, 15, 15, 15, 10}));
  EXPECT_EQ(page_rows_of(dataset.shards[0].path, "label"), (std::vector<int64_t>{15, 15, 15, 15, 15, 15, 10}));
}

TEST(ParquetConvert, ShardSizeOrAnExistingDirectoryWriteASet) {
  TempDir dir;
  const ImageStore store = testing::make_store(ImageShape{1, 8, 8}, 300, true);
  parquet::write_parquet(store, dir / "in.parquet");
  ::testing::internal::CaptureStdout();
  RunResult result = run_convert({(dir / "in.parquet").string(), (dir / "sized").string(), "--shard-size", "16kB"});
  ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const ShardedDataset sized = open_sharded_dataset((dir / "sized").string());
  EXPECT_GE(sized.shards.size(), 2u);
  EXPECT_LE(sized.shards.size(), 6u);
  for (const ShardInfo& shard : sized.shards) EXPECT_LE(shard.size_bytes, 16'000u * 102 / 100);
  testing::expect_same_images(read_sharded(dir / "sized"), store);
  // An existing directory without a bound: shards of 256MB, so one here.
  std::filesystem::create_directory(dir / "existing");
  ::testing::internal::CaptureStdout();
  result = run_convert({(dir / "in.parquet").string(), (dir / "existing").string()});
  ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(open_sharded_dataset((dir / "existing").string()).shards.size(), 1u);
}

TEST(ParquetConvert, ShardedOutputErrors) {
  TempDir dir;
  write_csv(testing::make_store(ImageShape{1, 2, 2}, 3, true), dir / "in.csv");
  const std::string in = (dir / "in.csv").string();
  const std::string out = (dir / "out").string();
  RunResult result = run_convert({in, out, "--shard-rows", "2", "--shard-size", "1MB"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--shard-rows excludes --shard-size"), std::string::npos) << result.err;
  result = run_convert({in, out, "--shard-size", "lots"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--shard-size 'lots': expected a size such as 16MB, 256MiB or 2GB"), std::string::npos)
      << result.err;
  result = run_convert({in, out, "--shard-rows", "0"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--shard-rows: needs an integer >= 1, got '0'"), std::string::npos) << result.err;
  result = run_convert({in, (dir / "out.csv").string(), "--shard-rows", "2"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "feeder convert: a sharded set is Parquet; '" + (dir / "out.csv").string() +
                            "' names a CSV file (give a directory)\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
  std::filesystem::create_directory(dir / "out");
  write_csv(testing::make_store(ImageShape{1, 2, 2}, 3, true), dir / "out" / "x.parquet");
  result = run_convert({in, out + "/"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "feeder convert: " + out + "/: already holds x.parquet; write a sharded set into an empty or new directory\n");
}

}  // namespace
}  // namespace feeder
