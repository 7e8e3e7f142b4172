// ParquetRowGroupReader: a file opened by its footer and read one row group at a time with pread.
// Row groups equal the store they were written from (every layout, several codecs), and the
// multi-row-group files of DuckDB and arrow-rs; INT64 / FLOAT / DOUBLE columns are accepted; every
// kind of value that is no pixel or label gives its exact message; truncation is reported.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "feeder/error.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/formats/parquet/row_group_reader.h"
#include "feeder/formats/parquet/writer.h"
#include "feeder/io/file.h"
#include "formats/test_files.h"
#include "parquet/reader_test_util.h"
#include "parquet/table_writer_test_util.h"
#include "parquet/writer_test_util.h"

namespace feeder::parquet {
namespace {

using feeder::testing::data_error_of;
using feeder::testing::TempDir;
using feeder::testing::write_bytes;
using testing::Cell;
using testing::int_column;
using testing::real_column;
using testing::TableColumn;
using testing::write_table;

// One row group's images and labels as read_row_group fills them.
struct Block {
  std::vector<uint8_t> pixels;
  std::vector<int64_t> labels;
};

Block read_block(const ParquetRowGroupReader& reader, int64_t row_group_idx, std::vector<uint8_t>& scratch) {
  const int64_t rows = reader.row_group_rows(row_group_idx);
  Block block{std::vector<uint8_t>(static_cast<size_t>(rows * reader.shape().num_pixels())),
              std::vector<int64_t>(static_cast<size_t>(rows))};
  reader.read_row_group(row_group_idx, scratch, block.pixels.data(), block.labels.data());
  return block;
}

// Every row group, read in order with one scratch buffer, must equal the store's rows.
void expect_row_groups_equal_store(const ParquetRowGroupReader& reader, const ImageStore& store) {
  ASSERT_EQ(reader.shape(), store.shape());
  ASSERT_EQ(reader.num_rows(), store.size());
  EXPECT_EQ(reader.labeled(), store.labeled());
  std::vector<uint8_t> scratch;
  int64_t first_row = 0;
  for (int64_t rg = 0; rg < reader.num_row_groups(); ++rg) {
    const Block block = read_block(reader, rg, scratch);
    const int64_t rows = reader.row_group_rows(rg);
    EXPECT_TRUE(std::equal(block.pixels.begin(), block.pixels.end(), store.image(first_row))) << "row group " << rg;
    EXPECT_TRUE(std::equal(block.labels.begin(), block.labels.end(), store.labels().begin() + first_row))
        << "row group " << rg;
    EXPECT_LE(reader.row_group_read_bytes(rg), reader.max_row_group_read_bytes());
    first_row += rows;
  }
  EXPECT_EQ(first_row, store.size());
}

std::filesystem::path write_file(const TempDir& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::filesystem::path path = dir / name;
  write_bytes(path, bytes);
  return path;
}

TEST(ParquetRowGroupReader, RowGroupsEqualTheStoreForEveryLayoutAndCodec) {
  TempDir dir;
  const ImageStore store = feeder::testing::make_store(ImageShape{3, 4, 5}, 250, true);
  for (const ParquetLayout layout : {ParquetLayout::kColumns, ParquetLayout::kImage}) {
    for (const Codec codec : {Codec::kZstd, Codec::kSnappy, Codec::kUncompressed}) {
      SCOPED_TRACE(to_string(layout) + " " + to_string(codec));
      ParquetWriteOptions options;
      options.layout = layout;
      options.codec = codec;
      options.row_group_size = 64;  // 64, 64, 64, 58
      const auto path = dir / (to_string(layout) + to_string(codec) + ".parquet");
      write_parquet(store, path, options);
      const ParquetRowGroupReader reader = ParquetRowGroupReader::open(path);
      ASSERT_EQ(reader.num_row_groups(), 4);
      EXPECT_EQ(reader.row_group_rows(3), 58);
      EXPECT_EQ(reader.size_bytes(), std::filesystem::file_size(path));
      expect_row_groups_equal_store(reader, store);
    }
  }
}

TEST(ParquetRowGroupReader, UnlabeledFileGivesNoLabel) {
  TempDir dir;
  const ImageStore store = feeder::testing::make_store(ImageShape{1, 3, 3}, 20, false);
  write_parquet(store, dir / "u.parquet");
  const ParquetRowGroupReader reader = ParquetRowGroupReader::open(dir / "u.parquet");
  EXPECT_FALSE(reader.labeled());
  EXPECT_EQ(reader.columns(), "no label, 9 pixel columns pixel1..pixel9 INT32 INT(8,false)");
  expect_row_groups_equal_store(reader, store);
}

TEST(ParquetRowGroupReader, DescribesItsColumns) {
  TempDir dir;
  const ImageStore store = feeder::testing::make_store(ImageShape{1, 2, 2}, 5, true);
  ParquetWriteOptions options;
  write_parquet(store, dir / "c.parquet", options);
  options.layout = ParquetLayout::kImage;
  write_parquet(store, dir / "i.parquet", options);
  EXPECT_EQ(ParquetRowGroupReader::open(dir / "c.parquet").columns(),
            "label INT64, 4 pixel columns pixel1..pixel4 INT32 INT(8,false)");
  EXPECT_EQ(ParquetRowGroupReader::open(dir / "i.parquet").columns(),
            "label INT64, image column 'image' FIXED_LEN_BYTE_ARRAY(4)");
}

// Threads reading different row groups at once, each with its own scratch, get the same rows.
TEST(ParquetRowGroupReader, ThreadsReadRowGroupsAtOnce) {
  TempDir dir;
  const ImageStore store = feeder::testing::make_store(ImageShape{1, 8, 8}, 400, true);
  ParquetWriteOptions options;
  options.row_group_size = 50;
  write_parquet(store, dir / "t.parquet", options);
  const ParquetRowGroupReader reader = ParquetRowGroupReader::open(dir / "t.parquet");
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> scratch;
      for (int pass = 0; pass < 5; ++pass) {
        for (int64_t rg = t; rg < reader.num_row_groups(); rg += 2) {
          const Block block = read_block(reader, rg, scratch);
          if (!std::equal(block.pixels.begin(), block.pixels.end(), store.image(rg * 50))) ++mismatches[static_cast<size_t>(t)];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

// DuckDB and arrow-rs wrote these in several row groups (see INDEX.md for the table).
TEST(ParquetRowGroupReader, ForeignFilesOfSeveralRowGroups) {
  for (const char* fixture : {"generated/duckdb-1.5.6/duckdb_v1_uncompressed_rg1000.parquet",
                              "generated/parquet-rs-59.3.0/arrowrs_v1_snappy_rg1000.parquet"}) {
    SCOPED_TRACE(fixture);
    ParquetImageOptions options;
    for (int k = 0; k < 16; ++k) options.pixel_columns.push_back("p" + std::to_string(k));
    const ParquetRowGroupReader reader = ParquetRowGroupReader::open(testing::fixture(fixture), options);
    ASSERT_GE(reader.num_row_groups(), 2);
    EXPECT_EQ(reader.shape(), (ImageShape{1, 4, 4}));
    std::vector<uint8_t> scratch;
    int64_t row = 0;
    for (int64_t rg = 0; rg < reader.num_row_groups(); ++rg) {
      const Block block = read_block(reader, rg, scratch);
      for (int64_t r = 0; r < reader.row_group_rows(rg); ++r, ++row) {
        ASSERT_EQ(block.labels[static_cast<size_t>(r)], row % 10);
        for (int64_t k = 0; k < 16; ++k) {
          const int64_t expected = (row + k) % 3 == 0 ? 0 : (row * 31 + k * 17) % 256;
          ASSERT_EQ(block.pixels[static_cast<size_t>(r * 16 + k)], expected) << "row " << row << " p" << k;
        }
      }
    }
    EXPECT_EQ(row, 3000);
    // The read buffer covers the 17 chunks needed, not the unused columns after them.
    EXPECT_LT(reader.max_row_group_read_bytes(), static_cast<int64_t>(reader.size_bytes()));
  }
}

// DuckDB's number types in two row groups, and one column per kind of bad value (INDEX.md).
const char* const kDuckdbTypes = "generated/duckdb-1.5.6/duckdb_types_rg2.parquet";

int64_t table_pixel(int64_t row, int64_t k) { return (row + k) % 3 == 0 ? 0 : (row * 31 + k * 17) % 256; }

TEST(ParquetRowGroupReader, DuckdbNumberTypesAsPixelsAndLabels) {
  for (const char* label_column : {"label", "label_f64"}) {
    SCOPED_TRACE(label_column);
    ParquetImageOptions options;
    options.label_column = label_column;
    options.pixel_columns = {"p_u8", "p_i64", "p_f32", "p_f64", "p_u32"};
    options.shape = ImageShape{1, 1, 5};
    const ParquetRowGroupReader reader = ParquetRowGroupReader::open(testing::fixture(kDuckdbTypes), options);
    ASSERT_EQ(reader.num_row_groups(), 2);
    EXPECT_EQ(reader.row_group_rows(0), 2048);
    std::vector<uint8_t> scratch;
    int64_t row = 0;
    for (int64_t rg = 0; rg < 2; ++rg) {
      const Block block = read_block(reader, rg, scratch);
      for (int64_t r = 0; r < reader.row_group_rows(rg); ++r, ++row) {
        ASSERT_EQ(block.labels[static_cast<size_t>(r)], row % 10) << row;
        for (int64_t k = 0; k < 5; ++k) ASSERT_EQ(block.pixels[static_cast<size_t>(r * 5 + k)], table_pixel(row, k)) << row << " " << k;
      }
    }
    EXPECT_EQ(row, 3000);
    // The whole-file reader agrees.
    const ImageStore store = read_parquet_images(testing::fixture(kDuckdbTypes), options);
    EXPECT_EQ(store.image(2999)[4], table_pixel(2999, 4));
  }
}

TEST(ParquetRowGroupReader, DuckdbBadValuesNameRowGroupRowAndValue) {
  const std::string path = testing::fixture(kDuckdbTypes);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"bad_fraction", "column 'bad_fraction' row group 1 row 452: value 2.5 is not an integer"},
      {"bad_nan", "column 'bad_nan' row group 1 row 52: value NaN is not a number"},
      {"bad_range", "column 'bad_range' row group 1 row 951: value 300 out of range 0..255"},
      {"bad_null", "column 'bad_null' row group 1 row 1: null pixel value (pixel columns must not have nulls)"},
  };
  for (const auto& [column, expected] : cases) {
    ParquetImageOptions options;
    options.pixel_columns = {column};
    options.shape = ImageShape{1, 1, 1};
    const ParquetRowGroupReader reader = ParquetRowGroupReader::open(path, options);
    std::vector<uint8_t> scratch;
    read_block(reader, 0, scratch);
    EXPECT_EQ(data_error_of([&] { read_block(reader, 1, scratch); }), path + ": " + expected);
    EXPECT_EQ(data_error_of([&] { read_parquet_images(path, options); }), path + ": " + expected);
  }
  ParquetImageOptions options;
  options.label_column = "bad_label";
  options.pixel_columns = {"p_u8"};
  options.shape = ImageShape{1, 1, 1};
  const ParquetRowGroupReader reader = ParquetRowGroupReader::open(path, options);
  std::vector<uint8_t> scratch;
  EXPECT_EQ(data_error_of([&] { read_block(reader, 1, scratch); }),
            path + ": column 'bad_label' row group 1 row 174: value 1e+19 out of range for an int64 label");
}

// Pixels 0..255 and labels of every accepted column type, with and without annotations.
TEST(ParquetRowGroupReader, AcceptsInt64FloatAndDoubleColumns) {
  TempDir dir;
  const std::vector<int64_t> labels = {3, -2, int64_t{1} << 40, 0, 9, 7};
  std::vector<TableColumn> columns = {
      int_column("label", PhysicalType::kInt64, labels),
      int_column("a", PhysicalType::kInt32, {0, 1, 2, 3, 4, 255}),
      int_column("b", PhysicalType::kInt64, {255, 254, 0, 1, 2, 3}),
      real_column("c", PhysicalType::kFloat, {0.0, 1.0, 128.0, 255.0, -0.0, 7.0}),
      real_column("d", PhysicalType::kDouble, {10.0, 20.0, 30.0, 40.0, 50.0, 60.0}),
  };
  columns[1].int_bits = 8;
  columns[1].int_signed = false;
  columns[2].optional = true;  // OPTIONAL without nulls is fine
  const auto path = write_file(dir, "types.parquet", write_table(columns, 4));
  const ParquetRowGroupReader reader = ParquetRowGroupReader::open(path);
  EXPECT_EQ(reader.shape(), (ImageShape{1, 2, 2}));
  EXPECT_EQ(reader.columns(), "label INT64, 4 pixel columns a..d (1 INT32 INT(8,false), 1 INT64, 1 FLOAT, 1 DOUBLE)");
  ImageStore expected(ImageShape{1, 2, 2}, 6, true);
  const uint8_t pixels[6][4] = {{0, 255, 0, 10}, {1, 254, 1, 20}, {2, 0, 128, 30},
                                {3, 1, 255, 40}, {4, 2, 0, 50},   {255, 3, 7, 60}};
  for (int64_t r = 0; r < 6; ++r) {
    std::copy(pixels[r], pixels[r] + 4, expected.image(r));
    expected.labels()[static_cast<size_t>(r)] = labels[static_cast<size_t>(r)];
  }
  expect_row_groups_equal_store(reader, expected);
  // The whole-file reader decodes the same way.
  feeder::testing::expect_same_images(read_parquet_images(path), expected);

  // Labels as INT32 (unsigned too), FLOAT and DOUBLE holding whole numbers.
  for (const PhysicalType type : {PhysicalType::kInt32, PhysicalType::kFloat, PhysicalType::kDouble}) {
    std::vector<TableColumn> typed = {columns[1]};
    typed.push_back(type == PhysicalType::kInt32 ? int_column("label", type, {5, 6, 7, 8, 9, 10})
                                                 : real_column("label", type, {5, 6, 7, 8, 9, 10}));
    const auto typed_path = write_file(dir, "label_" + to_string(type) + ".parquet", write_table(typed, 4));
    ParquetImageOptions options;
    options.shape = ImageShape{1, 1, 1};
    const ImageStore store = read_parquet_images(typed_path, options);
    EXPECT_EQ(std::vector<int64_t>(store.labels().begin(), store.labels().end()), (std::vector<int64_t>{5, 6, 7, 8, 9, 10}))
        << to_string(type);
  }
  std::vector<TableColumn> unsigned_label = {columns[1], int_column("label", PhysicalType::kInt32, {-1, 0, 1, 2, 3, 4})};
  unsigned_label[1].int_bits = 32;
  unsigned_label[1].int_signed = false;
  ParquetImageOptions options;
  options.shape = ImageShape{1, 1, 1};
  EXPECT_EQ(read_parquet_images(write_file(dir, "uint32_label.parquet", write_table(unsigned_label, 4)), options).label(0),
            4294967295);
}

// A file with one bad cell in row 517 of row group 2 (row groups of 600 rows), pixel column 'pixel12'.
struct BadCell {
  const char* name;
  PhysicalType type;
  Cell cell;
  std::string expected;  // after "<file>: column 'pixel12' row group 2 row 517: "
  int32_t int_bits = 0;
  bool int_signed = true;
};

std::vector<uint8_t> file_with_bad_pixel(const BadCell& bad, bool bad_in_label) {
  const int64_t rows = 1800;
  TableColumn pixels{"pixel12", bad_in_label ? PhysicalType::kInt32 : bad.type, {}};
  TableColumn labels{"label", bad_in_label ? bad.type : PhysicalType::kInt64, {}};
  for (int64_t r = 0; r < rows; ++r) {
    const bool floating = pixels.type == PhysicalType::kFloat || pixels.type == PhysicalType::kDouble;
    pixels.cells.push_back(floating ? Cell{static_cast<double>(r % 256)} : Cell{r % 256});
    const bool label_floating = labels.type == PhysicalType::kFloat || labels.type == PhysicalType::kDouble;
    labels.cells.push_back(label_floating ? Cell{static_cast<double>(r % 10)} : Cell{r % 10});
  }
  TableColumn& target = bad_in_label ? labels : pixels;
  target.cells[2 * 600 + 517] = bad.cell;
  target.int_bits = bad.int_bits;
  target.int_signed = bad.int_signed;
  return write_table({labels, pixels}, 600);
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(ParquetRowGroupReader, EveryKindOfBadPixelNamesFileColumnRowGroupRowAndValue) {
  const std::vector<BadCell> cases = {
      {"int32_300", PhysicalType::kInt32, int64_t{300}, "value 300 out of range 0..255"},
      {"int32_negative", PhysicalType::kInt32, int64_t{-1}, "value -1 out of range 0..255"},
      {"uint32_max", PhysicalType::kInt32, int64_t{-1}, "value 4294967295 out of range 0..255", 32, false},
      {"int64_large", PhysicalType::kInt64, int64_t{1} << 40, "value 1099511627776 out of range 0..255"},
      {"uint64_max", PhysicalType::kInt64, int64_t{-1}, "value 18446744073709551615 out of range 0..255", 64, false},
      {"float_fraction", PhysicalType::kFloat, 2.5, "value 2.5 is not an integer"},
      {"float_256", PhysicalType::kFloat, 256.0, "value 256 out of range 0..255"},
      {"float_nan", PhysicalType::kFloat, kNaN, "value NaN is not a number"},
      {"double_fraction", PhysicalType::kDouble, 0.1, "value 0.1 is not an integer"},
      {"double_negative", PhysicalType::kDouble, -3.0, "value -3 out of range 0..255"},
      {"double_inf", PhysicalType::kDouble, kInf, "value inf out of range 0..255"},
      {"double_nan", PhysicalType::kDouble, kNaN, "value NaN is not a number"},
      {"int32_null", PhysicalType::kInt32, std::monostate{}, "null pixel value (pixel columns must not have nulls)"},
      {"double_null", PhysicalType::kDouble, std::monostate{}, "null pixel value (pixel columns must not have nulls)"},
  };
  TempDir dir;
  for (const BadCell& bad : cases) {
    SCOPED_TRACE(bad.name);
    const auto path = write_file(dir, "part-00003.parquet", file_with_bad_pixel(bad, false));
    const std::string expected = path.string() + ": column 'pixel12' row group 2 row 517: " + bad.expected;
    ParquetImageOptions options;
    options.shape = ImageShape{1, 1, 1};
    const ParquetRowGroupReader reader = ParquetRowGroupReader::open(path, options);
    std::vector<uint8_t> scratch;
    read_block(reader, 0, scratch);  // the rows before are fine
    read_block(reader, 1, scratch);
    EXPECT_EQ(data_error_of([&] { read_block(reader, 2, scratch); }), expected);
    EXPECT_EQ(data_error_of([&] { read_parquet_images(path, options); }), expected);
    // A part of the row group names the row within the whole row group as well.
    std::vector<uint8_t> pixels(20);
    std::vector<int64_t> labels(20);
    const ParquetRowGroupReader::RowRange part{500, 520, pixels.data(), labels.data()};
    EXPECT_EQ(data_error_of([&] { reader.read_rows(2, {&part, 1}, scratch); }), expected);
  }
}

// Parts of a row group decode only their own rows: a bad value outside them is not theirs to
// report, one inside them is named at its row, PLAIN or dictionary-encoded (where the rows between
// the parts are passed over a run at a time).
TEST(ParquetRowGroupReader, PartsReportOnlyTheBadValuesOfTheirOwnRows) {
  TempDir dir;
  for (const bool dictionary : {false, true}) {
    SCOPED_TRACE(dictionary ? "dictionary" : "plain");
    const BadCell bad{"int32_300", PhysicalType::kInt32, int64_t{300}, "value 300 out of range 0..255"};
    TableColumn pixels{"pixel12", PhysicalType::kInt32, {}};
    TableColumn labels{"label", PhysicalType::kInt64, {}};
    for (int64_t r = 0; r < 1800; ++r) {
      pixels.cells.push_back(Cell{r % 7 == 0 ? int64_t{0} : (r * 37) % 256});  // runs and literals
      labels.cells.push_back(Cell{r % 10});
    }
    pixels.cells[2 * 600 + 517] = bad.cell;
    pixels.dictionary = dictionary;
    const auto path = write_file(dir, dictionary ? "dictionary.parquet" : "plain.parquet", write_table({labels, pixels}, 600));
    ParquetImageOptions options;
    options.shape = ImageShape{1, 1, 1};
    const ParquetRowGroupReader reader = ParquetRowGroupReader::open(path, options);
    std::vector<uint8_t> scratch;
    const auto read = [&](const std::vector<std::pair<int64_t, int64_t>>& parts) {
      std::vector<std::vector<uint8_t>> got(parts.size());
      std::vector<int64_t> label_out(600);
      std::vector<ParquetRowGroupReader::RowRange> ranges;
      for (size_t i = 0; i < parts.size(); ++i) {
        got[i].resize(static_cast<size_t>(parts[i].second - parts[i].first));
        ranges.push_back({parts[i].first, parts[i].second, got[i].data(), label_out.data() + parts[i].first});
      }
      reader.read_rows(2, ranges, scratch);
      for (size_t i = 0; i < parts.size(); ++i)
        for (int64_t r = parts[i].first; r < parts[i].second; ++r)
          EXPECT_EQ(got[i][static_cast<size_t>(r - parts[i].first)], (1200 + r) % 7 == 0 ? 0 : ((1200 + r) * 37) % 256)
              << "row " << r;
    };
    read({{0, 517}, {518, 600}});
    read({{3, 9}, {520, 521}, {100, 400}});
    EXPECT_EQ(data_error_of([&] { read({{100, 200}, {510, 520}}); }),
              path.string() + ": column 'pixel12' row group 2 row 517: " + bad.expected);
    EXPECT_EQ(data_error_of([&] { read({{517, 518}}); }),
              path.string() + ": column 'pixel12' row group 2 row 517: " + bad.expected);
  }
}

TEST(ParquetRowGroupReader, EveryKindOfBadLabelNamesFileColumnRowGroupRowAndValue) {
  const std::vector<BadCell> cases = {
      {"float_fraction", PhysicalType::kFloat, 0.5, "value 0.5 is not an integer"},
      {"float_nan", PhysicalType::kFloat, kNaN, "value NaN is not a number"},
      {"double_too_large", PhysicalType::kDouble, 1e19, "value 1e+19 out of range for an int64 label"},
      {"double_two_to_63", PhysicalType::kDouble, 9223372036854775808.0,
       "value 9223372036854775808 out of range for an int64 label"},
      {"double_inf", PhysicalType::kDouble, -kInf, "value -inf out of range for an int64 label"},
      {"uint64_max", PhysicalType::kInt64, int64_t{-1}, "value 18446744073709551615 out of range for an int64 label", 64,
       false},
      {"int64_null", PhysicalType::kInt64, std::monostate{}, "null label"},
  };
  TempDir dir;
  for (const BadCell& bad : cases) {
    SCOPED_TRACE(bad.name);
    const auto path = write_file(dir, "part-00003.parquet", file_with_bad_pixel(bad, true));
    const std::string expected = path.string() + ": column 'label' row group 2 row 517: " + bad.expected;
    ParquetImageOptions options;
    options.shape = ImageShape{1, 1, 1};
    const ParquetRowGroupReader reader = ParquetRowGroupReader::open(path, options);
    std::vector<uint8_t> scratch;
    EXPECT_EQ(data_error_of([&] { read_block(reader, 2, scratch); }), expected);
    EXPECT_EQ(data_error_of([&] { read_parquet_images(path, options); }), expected);
  }
  // The most negative int64 is a label like any other.
  const BadCell lowest{"lowest", PhysicalType::kDouble, -9223372036854775808.0, ""};
  const auto path = write_file(dir, "lowest.parquet", file_with_bad_pixel(lowest, true));
  ParquetImageOptions options;
  options.shape = ImageShape{1, 1, 1};
  EXPECT_EQ(read_parquet_images(path, options).label(1717), std::numeric_limits<int64_t>::min());
}

// A file of one row group names no row group: the row is the file's row.
TEST(ParquetRowGroupReader, SingleRowGroupFileNamesNoRowGroup) {
  TempDir dir;
  const auto path = write_file(
      dir, "one.parquet", write_table({int_column("pixel12", PhysicalType::kInt64, {1, 2, 256})}, 10));
  ParquetImageOptions options;
  options.shape = ImageShape{1, 1, 1};
  const ParquetRowGroupReader reader = ParquetRowGroupReader::open(path, options);
  std::vector<uint8_t> scratch;
  EXPECT_EQ(data_error_of([&] { read_block(reader, 0, scratch); }),
            path.string() + ": column 'pixel12' row 2: value 256 out of range 0..255");
}

TEST(ParquetRowGroupReader, ColumnsThatAreNoNumbersOrMissingAreRefusedWhenOpened) {
  // sort_columns.parquet: a INT64, b BYTE_ARRAY STRING.
  const std::string path = testing::fixture("data/sort_columns.parquet");
  ParquetImageOptions options;
  options.label_column = "b";
  EXPECT_EQ(data_error_of([&] { ParquetRowGroupReader::open(path, options); }),
            path + ": label column 'b' is BYTE_ARRAY STRING, expected INT32, INT64, FLOAT or DOUBLE");
  options.label_column = "label";
  options.pixel_columns = {"a", "b"};
  EXPECT_EQ(data_error_of([&] { ParquetRowGroupReader::open(path, options); }),
            path + ": pixel column 'b' is BYTE_ARRAY STRING, expected INT32, INT64, FLOAT or DOUBLE");
  options.pixel_columns = {"a", "c"};
  EXPECT_EQ(data_error_of([&] { ParquetRowGroupReader::open(path, options); }), path + ": no pixel column named 'c'");
}

// Opening reads the footer only: a file whose pages are garbage opens, and fails when read.
TEST(ParquetRowGroupReader, OpenReadsOnlyTheFooter) {
  TempDir dir;
  const ImageStore store = feeder::testing::make_store(ImageShape{1, 2, 2}, 10, true);
  ParquetWriteOptions options;
  options.codec = Codec::kUncompressed;
  write_parquet(store, dir / "g.parquet", options);
  std::vector<uint8_t> bytes = read_file_raw(dir / "g.parquet");
  const ParquetRowGroupReader reader0 = ParquetRowGroupReader::open(dir / "g.parquet");
  const int64_t data_bytes = reader0.row_group_read_bytes(0);
  for (int64_t i = 4; i < 4 + data_bytes; ++i) bytes[static_cast<size_t>(i)] = 0xff;
  write_bytes(dir / "g.parquet", bytes);
  const ParquetRowGroupReader reader = ParquetRowGroupReader::open(dir / "g.parquet");
  EXPECT_EQ(reader.num_rows(), 10);
  std::vector<uint8_t> scratch;
  const std::string message = data_error_of([&] { read_block(reader, 0, scratch); });
  EXPECT_EQ(message.rfind((dir / "g.parquet").string() + ": column 'label' page 0: ", 0), 0u) << message;
}

TEST(ParquetRowGroupReader, FileTruncatedWhileOpen) {
  TempDir dir;
  const ImageStore store = feeder::testing::make_store(ImageShape{1, 4, 4}, 100, true);
  ParquetWriteOptions options;
  options.row_group_size = 40;
  const auto path = dir / "t.parquet";
  write_parquet(store, path, options);
  const ParquetRowGroupReader reader = ParquetRowGroupReader::open(path);
  std::filesystem::resize_file(path, 100);
  std::vector<uint8_t> scratch;
  // Row group 0's chunks start right after the leading magic.
  EXPECT_EQ(data_error_of([&] { read_block(reader, 0, scratch); }),
            path.string() + ": row group 0: file truncated while open: bytes 4.." +
                std::to_string(4 + reader.row_group_read_bytes(0)) + " needed, the file ends at 100");
}

// Cut files fail to open exactly as ParquetFile::open fails on them.
TEST(ParquetRowGroupReader, TruncatedFileFailsToOpenLikeParquetFile) {
  TempDir dir;
  const ImageStore store = feeder::testing::make_store(ImageShape{1, 4, 4}, 100, true);
  write_parquet(store, dir / "whole.parquet");
  const std::vector<uint8_t> whole = read_file_raw(dir / "whole.parquet");
  for (const size_t cut_bytes : {size_t{0}, size_t{3}, size_t{11}, whole.size() / 2, whole.size() - 1}) {
    const auto path = write_file(dir, "cut.parquet", std::vector<uint8_t>(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut_bytes)));
    const std::string expected = data_error_of([&] { ParquetFile::open(path); });
    EXPECT_EQ(data_error_of([&] { ParquetRowGroupReader::open(path); }), expected) << cut_bytes;
  }
}

TEST(ParquetRowGroupReader, MissingFile) {
  TempDir dir;
  EXPECT_EQ(data_error_of([&] { ParquetRowGroupReader::open(dir / "absent.parquet"); }),
            (dir / "absent.parquet").string() + ": cannot open: No such file or directory");
}

// A footer whose row groups would decode past max_decoded_bytes is refused before anything is read.
TEST(ParquetRowGroupReader, RowGroupLargerThanTheDecodeLimitIsRefused) {
  TempDir dir;
  const ImageStore store = feeder::testing::make_store(ImageShape{1, 4, 4}, 100, true);
  ParquetWriteOptions write_options;
  write_options.row_group_size = 60;
  write_parquet(store, dir / "l.parquet", write_options);
  ParquetImageOptions options;
  options.max_decoded_bytes = 50 * 24;  // 50 images of 16 pixels and a label
  EXPECT_EQ(data_error_of([&] { ParquetRowGroupReader::open(dir / "l.parquet", options); }),
            (dir / "l.parquet").string() +
                ": row group 0: 60 images of 16 pixels exceed the limit of 1200 bytes (max_decoded_bytes)");
}

TEST(ParquetRowGroupReader, RowGroupOutsideTheFileIsAnInternalError) {
  TempDir dir;
  write_parquet(feeder::testing::make_store(ImageShape{1, 2, 2}, 3, true), dir / "o.parquet");
  const ParquetRowGroupReader reader = ParquetRowGroupReader::open(dir / "o.parquet");
  std::vector<uint8_t> scratch;
  uint8_t pixels[16];
  int64_t labels[4];
  EXPECT_THROW(reader.read_row_group(1, scratch, pixels, labels), std::out_of_range);
  EXPECT_THROW(reader.read_row_group(-1, scratch, pixels, labels), std::out_of_range);
}

}  // namespace
}  // namespace feeder::parquet
