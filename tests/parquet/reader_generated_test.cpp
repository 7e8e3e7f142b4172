// The MNIST-like files written by DuckDB and parquet-rs (tests/data/parquet-testing/generated):
// exact per-column values through the generic API, and the image path into the store.

#include "feeder/error.h"
#include "parquet/reader_test_util.h"

namespace feeder::parquet {
namespace {

using testing::int_sum_of;
using testing::open_fixture;
using testing::values_of;

const std::vector<std::string> kGeneratedFiles = {
    "generated/duckdb-1.5.6/duckdb_v1_snappy_default.parquet",
    "generated/duckdb-1.5.6/duckdb_v1_zstd.parquet",
    "generated/duckdb-1.5.6/duckdb_v1_gzip.parquet",
    "generated/duckdb-1.5.6/duckdb_v1_brotli.parquet",
    "generated/duckdb-1.5.6/duckdb_v1_lz4raw.parquet",
    "generated/duckdb-1.5.6/duckdb_v1_uncompressed_rg1000.parquet",
    "generated/duckdb-1.5.6/duckdb_v2_snappy.parquet",
    "generated/duckdb-1.5.6/duckdb_v2_zstd.parquet",
    "generated/parquet-rs-59.3.0/arrowrs_default_v1_uncompressed.parquet",
    "generated/parquet-rs-59.3.0/arrowrs_v1_snappy.parquet",
    "generated/parquet-rs-59.3.0/arrowrs_v1_snappy_rg1000.parquet",
    "generated/parquet-rs-59.3.0/arrowrs_v2_zstd.parquet",
    "generated/parquet-rs-59.3.0/arrowrs_v2_uncompressed_nodict.parquet",
};

constexpr int64_t kRows = 3000;
const int64_t kPixelSums[16] = {254784, 254944, 255176, 254640, 255056, 254776, 255008, 255168,
                                254888, 255120, 255024, 255256, 255232, 254880, 254856, 254832};

// The table both writers got, as INDEX.md defines it.
int64_t expected_pixel(int64_t row, int64_t k) { return (row + k) % 3 == 0 ? 0 : (row * 31 + k * 17) % 256; }

class GeneratedFile : public ::testing::TestWithParam<std::string> {};

TEST_P(GeneratedFile, ColumnsHoldTheTable) {
  const ParquetFile file = open_fixture(GetParam(), true);
  ASSERT_EQ(file.metadata().num_rows, kRows);
  const ColumnData label = file.read_column("label");
  EXPECT_EQ(int_sum_of<int64_t>(label), 13500);
  for (int64_t r = 0; r < kRows; ++r) ASSERT_EQ(values_of<int64_t>(label)[static_cast<size_t>(r)], r % 10);
  for (int64_t k = 0; k < 16; ++k) {
    const ColumnData p = file.read_column("p" + std::to_string(k));
    EXPECT_EQ(int_sum_of<int32_t>(p), kPixelSums[k]) << "p" << k;
    for (int64_t r = 0; r < kRows; ++r) {
      ASSERT_EQ(values_of<int32_t>(p)[static_cast<size_t>(r)], expected_pixel(r, k)) << "p" << k << " row " << r;
    }
  }
  const ColumnData opt = file.read_column("opt_i32");
  EXPECT_EQ(opt.null_count(), 429);
  EXPECT_EQ(int_sum_of<int32_t>(opt), 10282074);
  for (int64_t r = 0; r < kRows; ++r) {
    ASSERT_EQ(opt.valid[static_cast<size_t>(r)], r % 7 == 0 ? 0 : 1) << r;
    if (r % 7) {
      ASSERT_EQ(values_of<int32_t>(opt)[static_cast<size_t>(r)], 3 * r - 500);
    }
  }
  const ColumnData f64 = file.read_column("f64");
  const ColumnData f32 = file.read_column("f32");
  for (int64_t r = 0; r < kRows; ++r) {
    ASSERT_EQ(values_of<double>(f64)[static_cast<size_t>(r)], 0.25 * static_cast<double>(r) - 100);
    ASSERT_EQ(values_of<float>(f32)[static_cast<size_t>(r)], 0.5f * static_cast<float>(r));
  }
  EXPECT_EQ(testing::sum_of<double>(f64), 824625.0);
  EXPECT_EQ(testing::sum_of<float>(f32), 2249250.0);
}

TEST_P(GeneratedFile, ImagesGoStraightIntoTheStore) {
  ParquetImageOptions options;
  for (int k = 0; k < 16; ++k) options.pixel_columns.push_back("p" + std::to_string(k));
  options.num_threads = 2;
  const ImageStore store = read_parquet_images(testing::fixture(GetParam()), options);
  ASSERT_EQ(store.size(), kRows);
  EXPECT_EQ(store.shape(), (ImageShape{1, 4, 4}));
  EXPECT_TRUE(store.labeled());
  for (int64_t r = 0; r < kRows; ++r) {
    ASSERT_EQ(store.label(r), r % 10);
    for (int64_t k = 0; k < 16; ++k) ASSERT_EQ(store.image(r)[k], expected_pixel(r, k)) << "row " << r << " p" << k;
  }
}

TEST_P(GeneratedFile, DefaultPixelColumnsRejectNullsNamingColumnAndRow) {
  // Without a pixel list every number column but the label is a pixel (INT32, INT64, FLOAT and
  // DOUBLE), so opt_i32 (null in row 0) is one, and comes before f64 and f32.
  // Files of several row groups name the group (rows count from its start).
  const ParquetFile file = open_fixture(GetParam());
  const std::string first_group = file.metadata().row_groups.size() > 1 ? " row group 0" : "";
  ParquetImageOptions options;
  options.shape = ImageShape{1, 1, 19};  // p0..p15, opt_i32, f64, f32
  EXPECT_EQ(testing::expect_data_error([&] { read_parquet_images(file, options); }, "opt_i32"),
            file.name() + ": column 'opt_i32'" + first_group + " row 0: null pixel value (pixel columns must not have nulls)");
}

// Floating-point columns of other writers: f64 = 0.25i - 100 is negative in row 0; f32 = 0.5i is
// fractional in row 1. Files of several row groups name the group and count rows within it.
TEST_P(GeneratedFile, FloatPixelColumnsRejectValuesThatAreNoPixels) {
  const ParquetFile file = open_fixture(GetParam());
  const bool grouped = file.metadata().row_groups.size() > 1;
  const std::string first_group = grouped ? " row group 0" : "";
  ParquetImageOptions options;
  options.shape = ImageShape{1, 1, 1};
  options.pixel_columns = {"f64"};
  EXPECT_EQ(testing::expect_data_error([&] { read_parquet_images(file, options); }, "f64"),
            file.name() + ": column 'f64'" + first_group + " row 0: value -100 out of range 0..255");
  options.pixel_columns = {"f32"};
  EXPECT_EQ(testing::expect_data_error([&] { read_parquet_images(file, options); }, "f32"),
            file.name() + ": column 'f32'" + first_group + " row 1: value 0.5 is not an integer");
}

// A DOUBLE label column is read when its values are integers; f64 = 0.25i - 100 is not in row 1.
TEST_P(GeneratedFile, DoubleLabelColumnRejectsFractionalValues) {
  const ParquetFile file = open_fixture(GetParam());
  ParquetImageOptions options;
  options.shape = ImageShape{1, 4, 4};
  for (int k = 0; k < 16; ++k) options.pixel_columns.push_back("p" + std::to_string(k));
  options.label_column = "f64";
  const std::string message = testing::expect_data_error([&] { read_parquet_images(file, options); }, "f64");
  EXPECT_NE(message.find(" row 1: value -99.75 is not an integer"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(ParquetGenerated, GeneratedFile, ::testing::ValuesIn(kGeneratedFiles),
                         [](const auto& info) {
                           std::string name = info.param.substr(info.param.rfind('/') + 1);
                           name = name.substr(0, name.find('.'));
                           for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace feeder::parquet
