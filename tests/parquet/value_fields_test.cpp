// Samples of more than an image and a label: Parquet columns read as named value fields (a float
// weight, a double score, an integer count) reach every batch, in memory and streamed, with the same
// values for the same samples in either, and every error names its file and place.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "feeder/data/loader.h"
#include "feeder/dataset/dataset.h"
#include "feeder/error.h"
#include "feeder/formats/parquet/row_group_reader.h"
#include "feeder/formats/sharded.h"
#include "formats/test_files.h"
#include "parquet/reader_test_util.h"
#include "parquet/table_writer_test_util.h"

namespace feeder {
namespace {

using feeder::testing::data_error_of;
using feeder::testing::TempDir;
using parquet::PhysicalType;
using parquet::testing::Cell;
using parquet::testing::int_column;
using parquet::testing::real_column;
using parquet::testing::TableColumn;
using parquet::testing::write_table;

constexpr int64_t kRows = 600;
constexpr int64_t kPixels = 16;  // 1x4x4

// Each row's values are functions of its index, so a batch's row can be checked on its own.
float weight_of(int64_t row) { return 0.25f * static_cast<float>(row % 9) + 0.5f; }
double score_of(int64_t row) { return 1.0 / static_cast<double>(row + 3); }
int64_t count_of(int64_t row) { return row * 1000003 % 65536 - 32768; }

// label, pixel0..pixel15 (pixel0 = row % 256, pixel1 = row / 256), weight FLOAT, score DOUBLE,
// count INT32, in row groups of `rows_per_group`.
std::filesystem::path write_set(const TempDir& dir, const std::string& name, int64_t rows_per_group,
                                int64_t num_rows = kRows) {
  std::vector<int64_t> labels, counts;
  std::vector<double> weights, scores;
  std::vector<std::vector<int64_t>> pixels(kPixels);
  for (int64_t r = 0; r < num_rows; ++r) {
    labels.push_back(r % 10);
    weights.push_back(weight_of(r));
    scores.push_back(score_of(r));
    counts.push_back(count_of(r));
    for (int64_t p = 0; p < kPixels; ++p) pixels[static_cast<size_t>(p)].push_back(p == 0 ? r % 256 : p == 1 ? r / 256 : p);
  }
  std::vector<TableColumn> columns{int_column("label", PhysicalType::kInt64, labels)};
  for (int64_t p = 0; p < kPixels; ++p)
    columns.push_back(int_column("pixel" + std::to_string(p), PhysicalType::kInt32, pixels[static_cast<size_t>(p)]));
  columns.push_back(real_column("weight", PhysicalType::kFloat, weights));
  columns.push_back(real_column("score", PhysicalType::kDouble, scores));
  columns.push_back(int_column("count", PhysicalType::kInt32, counts));
  const auto path = dir.path() / name;
  testing::write_bytes(path, write_table(columns, rows_per_group));
  return path;
}

DatasetOptions with_fields(std::vector<std::string> fields, int64_t budget = int64_t{1} << 30) {
  DatasetOptions options;
  options.fields = std::move(fields);
  options.memory_budget = budget;
  return options;
}

// Every row of every batch of epoch `epoch`: the fields agree with the row its pixels name.
// Returns the rows seen, in batch order.
std::vector<int64_t> check_epoch(Loader& loader, int64_t epoch) {
  std::vector<int64_t> rows;
  for (Batch& batch : loader.epoch(epoch)) {
    const std::span<const float> weights = batch.value("weight").as<const float>();
    const std::span<const double> scores = batch.value("score").as<const double>();
    const std::span<const int64_t> counts = batch.value("count").as<const int64_t>();
    EXPECT_EQ(static_cast<int64_t>(weights.size()), batch.size());
    for (int64_t i = 0; i < batch.size(); ++i) {
      const uint8_t* image = batch.images_u8() + i * kPixels;
      const int64_t row = image[0] + 256 * image[1];
      EXPECT_EQ(row, batch.sample_indices()[static_cast<size_t>(i)]);
      EXPECT_EQ(weights[static_cast<size_t>(i)], weight_of(row)) << "row " << row;
      EXPECT_EQ(scores[static_cast<size_t>(i)], score_of(row)) << "row " << row;
      EXPECT_EQ(counts[static_cast<size_t>(i)], count_of(row)) << "row " << row;
      EXPECT_EQ(batch.labels()[i], row % 10);
      rows.push_back(row);
    }
  }
  return rows;
}

LoaderOptions loader_options(int64_t budget = 0) {
  LoaderOptions options;
  options.batch_size = 64;
  options.dtype = ImageDtype::kUint8;
  options.num_workers = 2;
  options.shuffle_window = 200;
  options.memory_budget = budget;
  return options;
}

TEST(ValueFields, SchemaNamesEachFieldWithItsType) {
  TempDir dir;
  const Dataset dataset = open_dataset(write_set(dir, "t.parquet", 128).string(), with_fields({"weight", "score", "count"}));
  EXPECT_EQ(to_string(dataset.schema), "image: uint8[1,4,4], label: int64, weight: float32, score: float64, count: int64");
  EXPECT_EQ(to_string(dataset.source->schema()), to_string(dataset.schema));
  // 16 pixels, a label, 4 + 8 + 8 bytes of values: the budget counts them.
  EXPECT_EQ(dataset.source->decoded_sample_bytes(), 16 + 8 + 20);
  EXPECT_EQ(dataset.held_bytes, kRows * (16 + 8 + 20));
}

TEST(ValueFields, InMemoryAndStreamedGiveTheSameBatches) {
  TempDir dir;
  const std::string path = write_set(dir, "t.parquet", 128).string();
  const DatasetOptions options = with_fields({"weight", "score", "count"});
  const Dataset memory = open_dataset(path, options);
  ASSERT_FALSE(memory.streaming);
  // Streamed within a budget below the set's, in the blocks it was read into memory in.
  auto stream = open_parquet_source(*memory.parquet);
  Loader in_memory(memory.source, loader_options());
  Loader streamed(stream, loader_options(int64_t{128} << 10));
  ASSERT_TRUE(streamed.streaming());
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    const std::vector<int64_t> a = check_epoch(in_memory, epoch);
    const std::vector<int64_t> b = check_epoch(streamed, epoch);
    EXPECT_EQ(static_cast<int64_t>(a.size()), kRows);
    EXPECT_EQ(a, b) << "epoch " << epoch;
  }
}

TEST(ValueFields, AnOpenDatasetStreamsBeyondItsBudget) {
  TempDir dir;
  constexpr int64_t kMany = 20000;
  const Dataset dataset =
      open_dataset(write_set(dir, "t.parquet", 1000, kMany).string(), with_fields({"weight", "score", "count"}, 400 << 10));
  ASSERT_TRUE(dataset.streaming);
  LoaderOptions options = loader_options(dataset.memory_budget);
  options.shuffle_window = 0;  // as large as the budget allows
  Loader loader(dataset.source, options);
  std::vector<int64_t> rows;
  for (Batch& batch : loader.epoch(0)) {
    ASSERT_EQ(batch.value_fields().size(), 3u);
    const std::span<const float> weights = batch.value(0).as<const float>();
    for (int64_t i = 0; i < batch.size(); ++i) {
      const int64_t row = batch.sample_indices()[static_cast<size_t>(i)];
      EXPECT_EQ(weights[static_cast<size_t>(i)], weight_of(row));
      rows.push_back(row);
    }
  }
  std::sort(rows.begin(), rows.end());
  for (int64_t r = 0; r < kMany; ++r) ASSERT_EQ(rows[static_cast<size_t>(r)], r);
}

TEST(ValueFields, ABatchRefusesAnotherNameOrType) {
  TempDir dir;
  const Dataset dataset =
      open_dataset(write_set(dir, "t.parquet", 128).string(), with_fields({"weight", "score", "count"}));
  Loader loader(dataset.source, loader_options());
  loader.start_epoch(0);
  const std::optional<Batch> batch = loader.next();
  ASSERT_TRUE(batch);
  try {
    batch->value("wieght");
    FAIL() << "no error for a field the batch lacks";
  } catch (const std::out_of_range& error) {
    EXPECT_STREQ(error.what(), "the batch has no field 'wieght' (its fields: 'weight', 'score', 'count')");
  }
  EXPECT_THROW(batch->value("weight").as<double>(), std::logic_error);
}

TEST(ValueFields, ASetWithoutFieldsKeepsImagesAndLabelsOnly) {
  // A store in memory without fields: a batch has none, and says so when asked.
  auto store = std::make_shared<ImageStore>(ImageShape{1, 2, 2}, 4, true);
  Loader plain(store, loader_options());
  plain.start_epoch(0);
  const std::optional<Batch> batch = plain.next();
  EXPECT_TRUE(batch->value_fields().empty());
  try {
    batch->value("weight");
    FAIL() << "no error for a batch without fields";
  } catch (const std::out_of_range& error) {
    EXPECT_STREQ(error.what(), "the batch has no field 'weight' (it has images and labels only)");
  }
}

TEST(ValueFields, AMissingColumnIsNamedWithTheFileAndItsColumns) {
  TempDir dir;
  const std::string path = write_set(dir, "t.parquet", 128).string();
  try {
    open_dataset(path, with_fields({"wieght"}));
    FAIL() << "no error for a missing column";
  } catch (const DataError& error) {
    const std::string what = error.what();
    EXPECT_EQ(what.rfind(path + ": no column named 'wieght' to read as a field (its columns: 'label', 'pixel0'", 0), 0u)
        << what;
  }
  try {
    open_dataset(path, with_fields({"label"}));
    FAIL() << "no error for the label as a field";
  } catch (const DataError& error) {
    EXPECT_EQ(std::string(error.what()), path + ": column 'label' is the label column; a field is another column");
  }
}

TEST(ValueFields, ANullValueNamesItsRowGroupAndRow) {
  TempDir dir;
  std::vector<TableColumn> columns{int_column("label", PhysicalType::kInt64, {0, 1, 2, 3, 4, 5})};
  for (int p = 0; p < 4; ++p) columns.push_back(int_column("p" + std::to_string(p), PhysicalType::kInt32, {1, 2, 3, 4, 5, 6}));
  TableColumn weight = real_column("weight", PhysicalType::kFloat, {1, 2, 3, 4, 5, 6});
  weight.cells[4] = Cell{};
  columns.push_back(weight);
  const auto path = dir.path() / "nulls.parquet";
  testing::write_bytes(path, write_table(columns, 3));
  const std::string expected =
      path.string() + ": column 'weight' row group 1 row 1: null value (a field's column must not have nulls)";
  try {  // read into memory as it opens
    open_dataset(path.string(), with_fields({"weight"}));
    FAIL() << "no error for a null weight";
  } catch (const DataError& error) {
    EXPECT_EQ(std::string(error.what()), expected);
  }
  // Streamed: the batch that needs the row fails.
  Dataset dataset = open_dataset(path.string(), [] {
    DatasetOptions options = with_fields({"weight"});
    options.hold_within_budget = false;
    return options;
  }());
  LoaderOptions options = loader_options();
  options.shuffle = false;
  Loader loader(open_parquet_source(*dataset.parquet), options);
  loader.start_epoch(0);
  try {
    loader.next();
    FAIL() << "no error for a null weight";
  } catch (const DataError& error) {
    EXPECT_EQ(std::string(error.what()), expected);
  }
}

TEST(ValueFields, OnlyParquetSetsHaveFields) {
  TempDir dir;
  const auto csv = dir.path() / "t.csv";
  testing::write_text(csv, "label,p0,p1,p2,p3\n1,0,0,0,0\n");
  try {
    open_dataset(csv.string(), with_fields({"weight"}));
    FAIL() << "no error for fields of a CSV file";
  } catch (const OptionsError& error) {
    EXPECT_EQ(std::string(error.what()), csv.string() +
                                             ": fields (weight) are read from the columns of a Parquet set, and this "
                                             "is a CSV file (images and labels only)");
  }
}

TEST(ValueFields, TheReaderReadsAnyRowsOfItsValueColumns) {
  TempDir dir;
  const std::string path = write_set(dir, "t.parquet", 128).string();
  const auto reader = parquet::ParquetRowGroupReader::open(path, [] {
    parquet::ParquetImageOptions options;
    options.value_columns = {"count", "weight", "score"};
    return options;
  }());
  ASSERT_EQ(reader.value_fields().size(), 3u);
  EXPECT_EQ(reader.value_fields()[0].type, FieldType::kInt64);
  EXPECT_EQ(reader.value_fields()[1].type, FieldType::kFloat32);
  EXPECT_EQ(reader.value_fields()[2].type, FieldType::kFloat64);
  EXPECT_NE(reader.columns().find(", fields count INT32, weight FLOAT, score DOUBLE"), std::string::npos)
      << reader.columns();
  // Rows 100..130 of row group 0 alone.
  std::vector<int64_t> counts(30);
  std::vector<float> weights(30);
  std::vector<double> scores(30);
  std::vector<ValueRegion> out{{reinterpret_cast<uint8_t*>(counts.data())},
                               {reinterpret_cast<uint8_t*>(weights.data())},
                               {reinterpret_cast<uint8_t*>(scores.data())}};
  std::vector<uint8_t> scratch;
  reader.read_values(0, 100, 128, out, scratch);
  for (int64_t r = 100; r < 128; ++r) {
    EXPECT_EQ(counts[static_cast<size_t>(r - 100)], count_of(r));
    EXPECT_EQ(weights[static_cast<size_t>(r - 100)], weight_of(r));
    EXPECT_EQ(scores[static_cast<size_t>(r - 100)], score_of(r));
  }
}

// Several ranges of a row group in one call, out of order, from DuckDB's table (one page per column
// chunk, which the call decodes once for all of them): each range gets its own rows.
TEST(ValueFields, TheReaderReadsSeveralRangesOfARowGroupAtOnce) {
  const auto reader = parquet::ParquetRowGroupReader::open(
      parquet::testing::fixture("generated/duckdb-1.5.6/duckdb_fields.parquet"), [] {
        parquet::ParquetImageOptions options;
        options.value_columns = {"weight", "count", "score"};
        return options;
      }());
  struct Range {
    int64_t begin, end;
    std::vector<float> weights;
    std::vector<int64_t> counts;
    std::vector<double> scores;
    std::vector<ValueRegion> places;
  };
  std::vector<Range> ranges{{1500, 2048, {}, {}, {}, {}}, {0, 700, {}, {}, {}, {}}, {700, 701, {}, {}, {}, {}}};
  std::vector<parquet::ParquetRowGroupReader::RowRange> rows;
  for (Range& range : ranges) {
    range.weights.resize(static_cast<size_t>(range.end - range.begin));
    range.counts.resize(static_cast<size_t>(range.end - range.begin));
    range.scores.resize(static_cast<size_t>(range.end - range.begin));
    range.places = {{reinterpret_cast<uint8_t*>(range.weights.data())},
                    {reinterpret_cast<uint8_t*>(range.counts.data())},
                    {reinterpret_cast<uint8_t*>(range.scores.data())}};
    rows.push_back({.begin = range.begin, .end = range.end, .values = range.places});
  }
  std::vector<uint8_t> scratch;
  reader.read_values(0, rows, scratch);
  for (const Range& range : ranges) {
    for (int64_t r = range.begin; r < range.end; ++r) {
      ASSERT_EQ(range.weights[static_cast<size_t>(r - range.begin)], 0.25f * static_cast<float>(r % 9) + 0.5f) << r;
      ASSERT_EQ(range.counts[static_cast<size_t>(r - range.begin)], r * 7 - 5000) << r;
      ASSERT_EQ(range.scores[static_cast<size_t>(r - range.begin)], 1.0 / static_cast<double>(r + 3)) << r;
    }
  }
  // Overlapping ranges are refused by name, as read_rows refuses them.
  rows[2] = {.begin = 600, .end = 800, .values = ranges[2].places};
  EXPECT_THROW(reader.read_values(0, rows, scratch), std::out_of_range);
}

// DuckDB's table (tests/compat/make_field_fixture.mjs): its FLOAT, DOUBLE and INTEGER columns in
// every batch, in memory and streamed in pieces of its 2,048-row row groups (one page per column).
TEST(ValueFields, ATableWrittenByDuckDbTrainsWithItsWeights) {
  const std::string path = parquet::testing::fixture("generated/duckdb-1.5.6/duckdb_fields.parquet");
  const DatasetOptions options = with_fields({"weight", "score", "count"});
  const Dataset memory = open_dataset(path, options);
  ASSERT_FALSE(memory.streaming);
  EXPECT_EQ(to_string(memory.schema), "image: uint8[1,4,4], label: int64, weight: float32, score: float64, count: int64");
  auto stream = open_parquet_source(*memory.parquet);
  Loader in_memory(memory.source, loader_options());
  Loader streamed(stream, loader_options(int64_t{1} << 20));
  ASSERT_TRUE(streamed.streaming());
  for (Loader* loader : {&in_memory, &streamed}) {
    std::vector<int64_t> rows;
    for (Batch& batch : loader->epoch(3)) {
      const auto weights = batch.value("weight").as<const float>();
      const auto scores = batch.value("score").as<const double>();
      const auto counts = batch.value("count").as<const int64_t>();
      for (int64_t i = 0; i < batch.size(); ++i) {
        const uint8_t* image = batch.images_u8() + i * kPixels;
        const int64_t row = image[0] + 256 * image[1];
        const auto at = static_cast<size_t>(i);
        ASSERT_EQ(weights[at], 0.25f * static_cast<float>(row % 9) + 0.5f) << "row " << row;
        ASSERT_EQ(scores[at], 1.0 / static_cast<double>(row + 3)) << "row " << row;
        ASSERT_EQ(counts[at], row * 7 - 5000) << "row " << row;
        rows.push_back(row);
      }
    }
    std::sort(rows.begin(), rows.end());
    ASSERT_EQ(rows.size(), 3000u);
    for (int64_t r = 0; r < 3000; ++r) ASSERT_EQ(rows[static_cast<size_t>(r)], r);
  }
}


// DuckDB's arrays (FLOAT[4], INTEGER[3]), written as Parquet LISTs: fields of shape {4} and {3}, each
// sample's array in its row of the batch, in memory and streamed in pieces of the row groups.
TEST(ValueFields, DuckDbArraysAreFieldsOfAShape) {
  const std::string path = parquet::testing::fixture("generated/duckdb-1.5.6/duckdb_arrays.parquet");
  const DatasetOptions options = with_fields({"embedding", "ids"});
  const Dataset memory = open_dataset(path, options);
  ASSERT_FALSE(memory.streaming);
  EXPECT_EQ(to_string(memory.schema), "image: uint8[1,4,4], label: int64, embedding: float32[4], ids: int64[3]");
  // 16 pixels, a label, 4 floats and 3 int64s a sample: the budget counts them.
  EXPECT_EQ(memory.source->decoded_sample_bytes(), 16 + 8 + 16 + 24);
  auto stream = open_parquet_source(*memory.parquet);
  // Pieces of the two row groups (each list chunk one page, read whole for each piece).
  EXPECT_GT(stream->num_blocks(), 2);
  Loader in_memory(memory.source, loader_options());
  Loader streamed(stream, loader_options(int64_t{1} << 20));
  ASSERT_TRUE(streamed.streaming());
  std::vector<std::vector<int64_t>> orders;
  for (Loader* loader : {&in_memory, &streamed}) {
    std::vector<int64_t> rows;
    for (Batch& batch : loader->epoch(1)) {
      const auto embedding = batch.value("embedding").as<const float>();
      const auto ids = batch.value("ids").as<const int64_t>();
      ASSERT_EQ(static_cast<int64_t>(embedding.size()), batch.size() * 4);
      ASSERT_EQ(static_cast<int64_t>(ids.size()), batch.size() * 3);
      for (int64_t i = 0; i < batch.size(); ++i) {
        const uint8_t* image = batch.images_u8() + i * kPixels;
        const int64_t row = image[0] + 256 * image[1];
        const float* e = embedding.data() + i * 4;
        ASSERT_EQ(e[0], static_cast<float>(row) / 2) << "row " << row;
        ASSERT_EQ(e[1], static_cast<float>(row) / 2 + 1) << "row " << row;
        ASSERT_EQ(e[2], -static_cast<float>(row)) << "row " << row;
        ASSERT_EQ(e[3], static_cast<float>(row % 7)) << "row " << row;
        for (int64_t k = 0; k < 3; ++k) ASSERT_EQ(ids[static_cast<size_t>(i * 3 + k)], row + k) << "row " << row;
        rows.push_back(row);
      }
    }
    orders.push_back(rows);
    std::sort(rows.begin(), rows.end());
    ASSERT_EQ(rows.size(), 3000u);
    for (int64_t r = 0; r < 3000; ++r) ASSERT_EQ(rows[static_cast<size_t>(r)], r);
  }
  EXPECT_EQ(orders[0], orders[1]);  // the same order in memory and streamed
}

// Each row's values of the fixtures' `tokens` sequence: i, ..., i + i % 5 - 1 (none when i % 5 is 0).
std::vector<int64_t> tokens_of(int64_t row) {
  std::vector<int64_t> tokens;
  for (int64_t k = 0; k < row % 5; ++k) tokens.push_back(row + k);
  return tokens;
}

// Every batch of `loader`'s epoch 2: each sample's tokens those of the row its pixels name, the
// batch's offsets rising from 0 to its values; returns the rows in batch order.
std::vector<int64_t> check_tokens(Loader& loader) {
  std::vector<int64_t> rows;
  for (Batch& batch : loader.epoch(2)) {
    const FieldView tokens = batch.value("tokens");
    EXPECT_EQ(static_cast<int64_t>(tokens.offsets.size()), batch.size() + 1);
    EXPECT_EQ(tokens.offsets.front(), 0);
    EXPECT_EQ(static_cast<int64_t>(tokens.as<const int64_t>().size()), tokens.offsets.back());
    for (int64_t i = 0; i < batch.size(); ++i) {
      const uint8_t* image = batch.images_u8() + i * kPixels;
      const int64_t row = image[0] + 256 * image[1];
      const std::span<const int64_t> have = tokens.row<const int64_t>(i);
      const std::vector<int64_t> want = tokens_of(row);
      if (!std::equal(have.begin(), have.end(), want.begin(), want.end())) {
        ADD_FAILURE() << "row " << row << ": " << have.size() << " tokens, want " << want.size();
        return rows;
      }
      rows.push_back(row);
    }
  }
  return rows;
}

// A list whose rows hold different numbers of values (DuckDB's INTEGER[]) is a sequence field: each
// sample's values in the batch, back to back with their offsets; the same in memory and streamed in
// pieces of the row groups (DuckDB's one page per chunk; arrow-rs's many small v2 pages); a list not
// named as a field is not read (nor taken for pixels).
TEST(ValueFields, ListsOfVaryingLengthAreSequences) {
  for (const char* name : {"generated/duckdb-1.5.6/duckdb_arrays.parquet",
                           "generated/parquet-rs-59.3.0/arrowrs_sequences_v2.parquet"}) {
    SCOPED_TRACE(name);
    const std::string path = parquet::testing::fixture(name);
    const Dataset memory = open_dataset(path, with_fields({"ids", "tokens"}));
    ASSERT_FALSE(memory.streaming);
    EXPECT_EQ(to_string(memory.schema), "image: uint8[1,4,4], label: int64, ids: int64[3], tokens: int64[*]");
    auto stream = open_parquet_source(*memory.parquet);
    EXPECT_GT(stream->num_blocks(), 3);
    // A piece's sequence bytes are bounded by its row group's values (8 bytes each) and counted.
    EXPECT_GT(stream->block_bytes(0), stream->block_rows(0) * (16 + 8 + 24 + 8));
    Loader in_memory(memory.source, loader_options());
    Loader streamed(stream, loader_options(int64_t{4} << 20));
    ASSERT_TRUE(streamed.streaming());
    std::vector<int64_t> in_memory_rows = check_tokens(in_memory);
    const std::vector<int64_t> streamed_rows = check_tokens(streamed);
    EXPECT_EQ(in_memory_rows, streamed_rows);  // the same order
    std::sort(in_memory_rows.begin(), in_memory_rows.end());
    ASSERT_EQ(in_memory_rows.size(), 3000u);
    for (int64_t r = 0; r < 3000; ++r) ASSERT_EQ(in_memory_rows[static_cast<size_t>(r)], r);
  }
  const Dataset dataset =
      open_dataset(parquet::testing::fixture("generated/duckdb-1.5.6/duckdb_arrays.parquet"), with_fields({"ids"}));
  EXPECT_EQ(to_string(dataset.schema), "image: uint8[1,4,4], label: int64, ids: int64[3]");
}

// The reader writes a sequence's rows of several ranges, each into its own region, with the ends of
// its rows; a region too small for its rows (a footer that understates them) is an error by name.
TEST(ValueFields, TheReaderReadsRangesOfASequence) {
  parquet::ParquetImageOptions options;
  options.value_columns = {"tokens"};
  const auto reader = parquet::ParquetRowGroupReader::open(
      parquet::testing::fixture("generated/parquet-rs-59.3.0/arrowrs_sequences_v2.parquet"), options);
  ASSERT_EQ(reader.num_row_groups(), 3);
  // Row group 1 holds rows 1000..1999: 2,000 values (0 to 4 a row) and 200 empty lists, each an
  // entry of the chunk.
  EXPECT_EQ(reader.sequence_bytes(1, 0), 2200 * 8);
  struct Range {
    int64_t begin, end;
    std::vector<int64_t> values, ends;
    ValueRegion region;
  };
  std::vector<Range> ranges{{700, 1000, {}, {}, {}}, {3, 9, {}, {}, {}}};
  std::vector<parquet::ParquetRowGroupReader::RowRange> rows;
  for (Range& range : ranges) {
    range.values.resize(2000);
    range.ends.resize(static_cast<size_t>(range.end - range.begin));
    range.region = {reinterpret_cast<uint8_t*>(range.values.data()), 2000 * 8, range.ends.data()};
    rows.push_back({.begin = range.begin, .end = range.end, .values = std::span(&range.region, 1)});
  }
  std::vector<uint8_t> scratch;
  reader.read_values(1, rows, scratch);
  for (const Range& range : ranges) {
    for (int64_t r = range.begin; r < range.end; ++r) {
      const Field field{"tokens", FieldType::kInt64, {kAnyLength}};
      const ValueBytes bytes = row_value(field, range.region, r - range.begin);
      const std::vector<int64_t> want = tokens_of(1000 + r);
      ASSERT_EQ(bytes.size(), want.size() * 8) << "row " << r;
      ASSERT_TRUE(want.empty() || std::memcmp(bytes.data(), want.data(), bytes.size()) == 0) << "row " << r;
    }
  }
  ranges[0].region.capacity = 16;  // rows 700, 701 and 702 hold 0, 1 and 2 values
  rows[0].values = std::span(&ranges[0].region, 1);
  const std::string message = data_error_of([&] { reader.read_values(1, rows, scratch); });
  EXPECT_NE(message.find("arrowrs_sequences_v2.parquet: column 'tokens.list.element' row group 1 row 702: more values "
                         "than the column chunk's metadata declares"),
            std::string::npos)
      << message;
}

// A null list or a null element of a sequence is refused where the read meets it, naming its row
// (an empty list is a sample of no values: ListsOfVaryingLengthAreSequences).
TEST(ValueFields, ANullInASequenceIsRefusedByName) {
  const std::string path = parquet::testing::fixture("generated/duckdb-1.5.6/duckdb_sequences_null.parquet");
  for (const auto& [column, what] : {std::pair<std::string, std::string>{"null_list", "row 41: null list"},
                                     {"null_element", "row 43: null element"}}) {
    const std::string field = column;  // a structured binding cannot be captured before C++20's clang 16
    // Small enough to be read into memory when opened: the read is the open's.
    const std::string message = data_error_of([&] { open_dataset(path, with_fields({field})); });
    EXPECT_NE(message.find("duckdb_sequences_null.parquet: column '" + field + ".list.element' " + what), std::string::npos)
        << message;
  }
}

// A NULL in an array is an error naming the column: at open, from the statistics' null count
// (DuckDB's), or, without statistics (arrow-rs's copy), where the read meets it, naming its row.
TEST(ValueFields, ANullInAnArrayIsRefusedByName) {
  try {
    open_dataset(parquet::testing::fixture("generated/duckdb-1.5.6/duckdb_arrays_null.parquet"), with_fields({"embedding"}));
    FAIL() << "no error for the NULL in row 37's array";
  } catch (const DataError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("duckdb_arrays_null.parquet: column 'embedding': 1 null or empty lists or null elements "
                           "(its statistics' null count)"),
              std::string::npos)
        << message;
  }
  try {
    open_dataset(parquet::testing::fixture("generated/parquet-rs-59.3.0/arrowrs_arrays_null_nostats.parquet"),
                 with_fields({"embedding"}));
    FAIL() << "no error for the NULL in row 37's array";
  } catch (const DataError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("arrowrs_arrays_null_nostats.parquet: column 'embedding.list.element' row 37: null or "
                           "empty list, or a null element"),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace feeder
