// Every file of tests/data/parquet-testing that INDEX.md marks readable by a flat reader, checked
// against the values INDEX.md gives (numeric columns; a few string columns too).

#include <algorithm>
#include <fstream>
#include <sstream>

#include "feeder/error.h"
#include "parquet/reader_test_util.h"

namespace feeder::parquet {
namespace {

using testing::expect_data_error;
using testing::int_sum_of;
using testing::open_fixture;
using testing::sum_of;
using testing::values_of;

void expect_alltypes_prefix(const ParquetFile& file, const std::vector<int32_t>& ids) {
  const size_t n = ids.size();
  ASSERT_EQ(file.metadata().num_rows, static_cast<int64_t>(n));
  EXPECT_EQ(values_of<int32_t>(file.read_column("id")), ids);
  const auto bools = values_of<uint8_t>(file.read_column("bool_col"));
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(bools[i], i % 2 == 0 ? 1 : 0) << i;
  for (const char* name : {"tinyint_col", "smallint_col", "int_col"}) {
    const auto v = values_of<int32_t>(file.read_column(name));
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(v[i], static_cast<int32_t>(i % 2)) << name << " " << i;
  }
  const auto bigint = values_of<int64_t>(file.read_column("bigint_col"));
  const auto floats = values_of<float>(file.read_column("float_col"));
  const auto doubles = values_of<double>(file.read_column("double_col"));
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(bigint[i], static_cast<int64_t>(i % 2) * 10);
    EXPECT_EQ(floats[i], i % 2 ? 1.1f : 0.0f);
    EXPECT_EQ(doubles[i], i % 2 ? 10.1 : 0.0);
  }
  EXPECT_EQ(file.read_column("string_col").null_count(), 0);
}

TEST(ParquetFixtures, AlltypesPlain) {
  const ParquetFile file = open_fixture("data/alltypes_plain.parquet");
  expect_alltypes_prefix(file, {4, 5, 6, 7, 2, 3, 0, 1});
  EXPECT_EQ(values_of<std::string>(file.read_column("date_string_col")),
            (std::vector<std::string>{"03/01/09", "03/01/09", "04/01/09", "04/01/09", "02/01/09", "02/01/09",
                                      "01/01/09", "01/01/09"}));
  EXPECT_EQ(values_of<std::string>(file.read_column("string_col"))[1], "1");
}

TEST(ParquetFixtures, AlltypesPlainSnappy) { expect_alltypes_prefix(open_fixture("data/alltypes_plain.snappy.parquet"), {6, 7}); }

TEST(ParquetFixtures, AlltypesDictionary) { expect_alltypes_prefix(open_fixture("data/alltypes_dictionary.parquet"), {0, 1}); }

void expect_tiny_pages(const std::string& path) {
  const ParquetFile file = open_fixture(path);
  ASSERT_EQ(file.metadata().num_rows, 7300);
  const ColumnData id = file.read_column("id");
  EXPECT_EQ(values_of<int32_t>(id)[0], 122);
  EXPECT_EQ(int_sum_of<int32_t>(id), 26641350);
  const auto bools = values_of<uint8_t>(file.read_column("bool_col"));
  EXPECT_EQ(std::count(bools.begin(), bools.end(), 1), 3650);
  for (const char* name : {"tinyint_col", "smallint_col", "int_col"}) {
    EXPECT_EQ(int_sum_of<int32_t>(file.read_column(name)), 32850) << name;
  }
  EXPECT_EQ(int_sum_of<int64_t>(file.read_column("bigint_col")), 328500);
  EXPECT_NEAR(sum_of<float>(file.read_column("float_col")), 36135.0, 0.5);
  EXPECT_NEAR(sum_of<double>(file.read_column("double_col")), 331785.0, 1e-6);
  EXPECT_EQ(int_sum_of<int32_t>(file.read_column("year")), 14669350);
  EXPECT_EQ(int_sum_of<int32_t>(file.read_column("month")), 47640);
  for (int64_t c = 0; c < static_cast<int64_t>(file.metadata().columns.size()); ++c) {
    if (file.metadata().columns[static_cast<size_t>(c)].physical_type == PhysicalType::kInt96) continue;
    EXPECT_EQ(file.read_column(c).null_count(), 0);
  }
  EXPECT_EQ(file.metadata().columns[1].physical_type, PhysicalType::kBoolean);
}

TEST(ParquetFixtures, AlltypesTinyPages) { expect_tiny_pages("data/alltypes_tiny_pages.parquet"); }
TEST(ParquetFixtures, AlltypesTinyPagesPlain) { expect_tiny_pages("data/alltypes_tiny_pages_plain.parquet"); }

TEST(ParquetFixtures, ByteStreamSplitZstd) {
  const ParquetFile file = open_fixture("data/byte_stream_split.zstd.parquet");
  const ColumnData f32 = file.read_column("f32");
  const ColumnData f64 = file.read_column("f64");
  ASSERT_EQ(f32.num_rows(), 300);
  EXPECT_EQ(values_of<float>(f32)[0], 1.7640524f);
  EXPECT_EQ(values_of<double>(f64)[0], -1.3065268517353166);
  const auto& fv = values_of<float>(f32);
  const auto& dv = values_of<double>(f64);
  EXPECT_EQ(*std::min_element(fv.begin(), fv.end()), -2.7725928f);
  EXPECT_EQ(*std::max_element(fv.begin(), fv.end()), 2.3831449f);
  EXPECT_EQ(*std::min_element(dv.begin(), dv.end()), -3.0461430547999266);
  EXPECT_EQ(*std::max_element(dv.begin(), dv.end()), 2.6962240525635797);
  EXPECT_NEAR(sum_of<float>(f32), 8.25887, 1e-4);
  EXPECT_NEAR(sum_of<double>(f64), -41.2291902275, 1e-9);
}

TEST(ParquetFixtures, ByteStreamSplitExtendedMatchesPlainTwins) {
  const ParquetFile file = open_fixture("data/byte_stream_split_extended.gzip.parquet");
  ASSERT_EQ(file.metadata().num_rows, 200);
  int pairs = 0;
  for (const ColumnSchema& column : file.metadata().columns) {
    const std::string suffix = "_byte_stream_split";
    if (column.name.size() <= suffix.size() || !column.name.ends_with(suffix)) continue;
    const std::string twin = column.name.substr(0, column.name.size() - suffix.size()) + "_plain";
    const ColumnData a = file.read_column(column.name);
    const ColumnData b = file.read_column(twin);
    EXPECT_EQ(a.values, b.values) << column.name;
    EXPECT_EQ(a.null_count(), 0);
    ++pairs;
  }
  EXPECT_EQ(pairs, 7);
  EXPECT_EQ(values_of<float>(file.read_column("float_byte_stream_split"))[0], 10.337575f);
  EXPECT_EQ(values_of<double>(file.read_column("double_byte_stream_split"))[0], 9.82038858616854);
  EXPECT_EQ(values_of<int32_t>(file.read_column("int32_byte_stream_split"))[0], 24191);
  EXPECT_EQ(values_of<int64_t>(file.read_column("int64_byte_stream_split"))[0], 293650000000);
}

TEST(ParquetFixtures, ColumnChunkKeyValueMetadataHasNoRows) {
  const ParquetFile file = open_fixture("data/column_chunk_key_value_metadata.parquet");
  EXPECT_EQ(file.metadata().num_rows, 0);
  EXPECT_EQ(file.read_column(0).num_rows(), 0);
  EXPECT_EQ(file.read_column(1).num_rows(), 0);
}

TEST(ParquetFixtures, ConcatenatedGzipMembers) {
  const ParquetFile file = open_fixture("data/concatenated_gzip_members.parquet");
  const ColumnData column = file.read_column(0);
  ASSERT_EQ(column.num_rows(), 513);
  for (int64_t i = 0; i < 513; ++i) EXPECT_EQ(values_of<int64_t>(column)[static_cast<size_t>(i)], i + 1);
  EXPECT_EQ(int_sum_of<int64_t>(column), 131841);
  EXPECT_EQ(file.metadata().columns[0].int_bit_width, 64);
  EXPECT_FALSE(file.metadata().columns[0].int_signed);
}

void expect_checksum_values(const ParquetFile& file) {
  const ColumnData a = file.read_column("a");
  const ColumnData b = file.read_column("b");
  ASSERT_EQ(a.num_rows(), 5120);
  EXPECT_EQ(int_sum_of<int32_t>(a), 43118090240);
  EXPECT_EQ(values_of<int32_t>(a)[0], 50462976);
  const auto& av = values_of<int32_t>(a);
  EXPECT_EQ(*std::min_element(av.begin(), av.end()), -2122153084);
  EXPECT_EQ(*std::max_element(av.begin(), av.end()), 2138996092);
  EXPECT_EQ(int_sum_of<int32_t>(b), 129016125440);
  EXPECT_EQ(values_of<int32_t>(b)[0], 1734763876);
}

TEST(ParquetFixtures, DataPageV1UncompressedChecksumVerifies) {
  expect_checksum_values(open_fixture("data/datapage_v1-uncompressed-checksum.parquet", true));
}

TEST(ParquetFixtures, DataPageV1SnappyChecksumVerifies) {
  expect_checksum_values(open_fixture("data/datapage_v1-snappy-compressed-checksum.parquet", true));
}

TEST(ParquetFixtures, CorruptChecksumWithoutVerificationReadsAlteredValues) {
  const ParquetFile file = open_fixture("data/datapage_v1-corrupt-checksum.parquet", false);
  EXPECT_EQ(int_sum_of<int32_t>(file.read_column("a")), 43118090496);
  EXPECT_EQ(int_sum_of<int32_t>(file.read_column("b")), 129016190976);
}

TEST(ParquetFixtures, DataPageV2Snappy) {
  const ParquetFile file = open_fixture("data/datapage_v2.snappy.parquet");
  EXPECT_EQ(values_of<int32_t>(file.read_column("b")), (std::vector<int32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(values_of<double>(file.read_column("c")), (std::vector<double>{2, 3, 4, 5, 2}));
  EXPECT_EQ(values_of<uint8_t>(file.read_column("d")), (std::vector<uint8_t>{1, 1, 1, 0, 1}));
  const ColumnData a = file.read_column("a");
  EXPECT_EQ(a.valid, (std::vector<uint8_t>{1, 1, 1, 0, 1}));
  EXPECT_EQ(values_of<std::string>(a)[0], "abc");
  // The LIST column is rejected cleanly by a flat reader.
  expect_data_error([&] { file.read_column("e.list.element"); }, "nested schema not supported");
}

TEST(ParquetFixtures, DataPageV2EmptyDataPage) {
  const ColumnData column = open_fixture("data/datapage_v2_empty_datapage.snappy.parquet").read_column("value");
  ASSERT_EQ(column.num_rows(), 1);
  EXPECT_EQ(column.null_count(), 1);
}

// Parses a CSV column of integers; empty fields are nulls.
std::vector<std::optional<int64_t>> csv_column(const std::string& path, const std::string& name) {
  std::ifstream in(testing::fixture(path));
  std::string line;
  std::getline(in, line);
  auto split = [](const std::string& text) {
    std::vector<std::string> fields;
    std::string field;
    std::stringstream stream(text);
    while (std::getline(stream, field, ',')) {
      if (field.size() >= 2 && field.front() == '"') field = field.substr(1, field.size() - 2);
      fields.push_back(field);
    }
    if (!text.empty() && text.back() == ',') fields.push_back("");
    return fields;
  };
  const auto header = split(line);
  const size_t idx = static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  EXPECT_LT(idx, header.size()) << name;
  std::vector<std::optional<int64_t>> out;
  while (std::getline(in, line)) {
    const auto fields = split(line);
    if (idx >= fields.size() || fields[idx].empty()) {
      out.push_back(std::nullopt);
    } else {
      out.push_back(std::stoll(fields[idx]));
    }
  }
  return out;
}

template <class T>
void expect_matches_csv(const ParquetFile& file, const std::string& csv, const std::string& name) {
  const ColumnData column = file.read_column(name);
  const auto expected = csv_column(csv, name);
  ASSERT_EQ(static_cast<int64_t>(expected.size()), column.num_rows()) << name;
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(expected[i].has_value(), column.valid[i] == 1) << name << " row " << i;
    if (expected[i]) {
      ASSERT_EQ(*expected[i], static_cast<int64_t>(values_of<T>(column)[i])) << name << " row " << i;
    }
  }
}

TEST(ParquetFixtures, DeltaBinaryPackedMatchesExpectCsv) {
  const ParquetFile file = open_fixture("data/delta_binary_packed.parquet");
  ASSERT_EQ(file.metadata().num_rows, 200);
  for (int width = 0; width <= 64; ++width) {
    expect_matches_csv<int64_t>(file, "data/delta_binary_packed_expect.csv", "bitwidth" + std::to_string(width));
  }
  expect_matches_csv<int32_t>(file, "data/delta_binary_packed_expect.csv", "int_value");
  EXPECT_EQ(int_sum_of<int32_t>(file.read_column("int_value")), -10114055485);
  const auto& w64 = values_of<int64_t>(file.read_column("bitwidth64"));
  EXPECT_EQ(*std::min_element(w64.begin(), w64.end()), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*std::max_element(w64.begin(), w64.end()), 8846115173408951296);
}

TEST(ParquetFixtures, DeltaEncodingRequiredColumn) {
  const ParquetFile file = open_fixture("data/delta_encoding_required_column.parquet");
  for (const ColumnSchema& column : file.metadata().columns) {
    if (column.physical_type != PhysicalType::kInt32) continue;
    std::string csv_name = column.name;
    if (csv_name.ends_with(":")) csv_name.pop_back();
    const ColumnData data = file.read_column(column.name);
    const auto expected = csv_column("data/delta_encoding_required_column_expect.csv", csv_name);
    ASSERT_EQ(static_cast<int64_t>(expected.size()), data.num_rows());
    for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(*expected[i], values_of<int32_t>(data)[i]) << column.name;
  }
  EXPECT_EQ(int_sum_of<int32_t>(file.read_column("c_customer_sk:")), 5408);
  EXPECT_EQ(int_sum_of<int32_t>(file.read_column("c_birth_year:")), 195733);
}

TEST(ParquetFixtures, DeltaEncodingOptionalColumn) {
  const ParquetFile file = open_fixture("data/delta_encoding_optional_column.parquet");
  for (const ColumnSchema& column : file.metadata().columns) {
    if (column.physical_type != PhysicalType::kInt64) continue;
    expect_matches_csv<int64_t>(file, "data/delta_encoding_optional_column_expect.csv", column.name);
  }
  const ColumnData sk = file.read_column("c_customer_sk");
  EXPECT_EQ(sk.null_count(), 0);
  EXPECT_EQ(int_sum_of<int64_t>(sk), 5050);
  const ColumnData cdemo = file.read_column("c_current_cdemo_sk");
  EXPECT_EQ(cdemo.num_rows() - cdemo.null_count(), 97);
  EXPECT_EQ(int_sum_of<int64_t>(cdemo), 91166331);
  EXPECT_EQ(int_sum_of<int64_t>(file.read_column("c_birth_year")), 189928);
}

TEST(ParquetFixtures, DictPageOffsetZero) {
  const ParquetFile file = open_fixture("data/dict-page-offset-zero.parquet");
  const ColumnData column = file.read_column("l_partkey");
  ASSERT_EQ(column.num_rows(), 39);
  for (int32_t v : values_of<int32_t>(column)) EXPECT_EQ(v, 1552);
}

TEST(ParquetFixtures, Int32Decimal) {
  const ParquetFile file = open_fixture("data/int32_decimal.parquet");
  const ColumnData column = file.read_column(0);
  ASSERT_EQ(column.num_rows(), 24);
  for (size_t i = 0; i < 24; ++i) EXPECT_EQ(values_of<int32_t>(column)[i], static_cast<int32_t>(100 * (i + 1)));
  EXPECT_EQ(file.metadata().columns[0].annotation, "DECIMAL(4,2)");
}

TEST(ParquetFixtures, Int64Decimal) {
  const ColumnData column = open_fixture("data/int64_decimal.parquet").read_column(0);
  ASSERT_EQ(column.num_rows(), 24);
  for (size_t i = 0; i < 24; ++i) EXPECT_EQ(values_of<int64_t>(column)[i], static_cast<int64_t>(100 * (i + 1)));
}

TEST(ParquetFixtures, FloatingOrdersNanCount) {
  const ParquetFile file = open_fixture("data/floating_orders_nan_count.parquet", true);
  ASSERT_EQ(file.metadata().row_groups.size(), 5u);
  ASSERT_EQ(file.metadata().num_rows, 50);
  for (int64_t c = 0; c < static_cast<int64_t>(file.metadata().columns.size()); ++c) {
    const ColumnData column = file.read_column(c);
    EXPECT_EQ(column.null_count(), 0);
    if (column.physical_type == PhysicalType::kFloat) {
      const auto& v = values_of<float>(column);
      EXPECT_EQ(std::count_if(v.begin(), v.end(), [](float x) { return std::isnan(x); }), 14);
      EXPECT_DOUBLE_EQ(sum_of<float>(column), 13.5);
    } else if (column.physical_type == PhysicalType::kDouble) {
      const auto& v = values_of<double>(column);
      EXPECT_EQ(std::count_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), 14);
      EXPECT_DOUBLE_EQ(sum_of<double>(column), 13.5);
    }
  }
}

void expect_lz4_rows(const ParquetFile& file) {
  EXPECT_EQ(values_of<int64_t>(file.read_column("c0")),
            (std::vector<int64_t>{1593604800, 1593604800, 1593604801, 1593604801}));
  EXPECT_EQ(values_of<std::string>(file.read_column("c1")), (std::vector<std::string>{"abc", "def", "abc", "def"}));
  EXPECT_EQ(values_of<double>(file.read_column("v11")), (std::vector<double>{42.0, 7.7, 42.125, 7.7}));
}

TEST(ParquetFixtures, HadoopLz4) { expect_lz4_rows(open_fixture("data/hadoop_lz4_compressed.parquet")); }
TEST(ParquetFixtures, NonHadoopLz4FallsBackToRawBlock) { expect_lz4_rows(open_fixture("data/non_hadoop_lz4_compressed.parquet")); }
TEST(ParquetFixtures, Lz4Raw) { expect_lz4_rows(open_fixture("data/lz4_raw_compressed.parquet")); }

void expect_uuids(const ParquetFile& file) {
  const auto& v = values_of<std::string>(file.read_column("a"));
  ASSERT_EQ(v.size(), 10000u);
  EXPECT_EQ(v[0], "c7ce6bef-d5b0-4863-b199-8ea8c7fb117b");
}

TEST(ParquetFixtures, HadoopLz4Larger) { expect_uuids(open_fixture("data/hadoop_lz4_compressed_larger.parquet", true)); }
TEST(ParquetFixtures, Lz4RawLarger) { expect_uuids(open_fixture("data/lz4_raw_compressed_larger.parquet")); }

TEST(ParquetFixtures, Int32WithNullPages) {
  const ColumnData column = open_fixture("data/int32_with_null_pages.parquet", true).read_column(0);
  ASSERT_EQ(column.num_rows(), 1000);
  EXPECT_EQ(column.null_count(), 275);
  EXPECT_EQ(int_sum_of<int32_t>(column), -12383254597);
  int32_t lo = INT32_MAX, hi = INT32_MIN;
  for (size_t i = 0; i < 1000; ++i) {
    if (!column.valid[i]) continue;
    lo = std::min(lo, values_of<int32_t>(column)[i]);
    hi = std::max(hi, values_of<int32_t>(column)[i]);
  }
  EXPECT_EQ(lo, -2136906554);
  EXPECT_EQ(hi, 2145722375);
}

TEST(ParquetFixtures, NanInStats) {
  const ColumnData column = open_fixture("data/nan_in_stats.parquet").read_column("x");
  ASSERT_EQ(column.num_rows(), 2);
  EXPECT_EQ(values_of<double>(column)[0], 1.0);
  EXPECT_TRUE(std::isnan(values_of<double>(column)[1]));
}

TEST(ParquetFixtures, NestedNullsRejected) {
  const ParquetFile file = open_fixture("data/nulls.snappy.parquet");
  expect_data_error([&] { file.read_column(0); }, "column 'b_struct.b_c_int': nested schema not supported");
}

TEST(ParquetFixtures, Overflow16BitPageCount) {
  const ColumnData column = open_fixture("data/overflow_i16_page_cnt.parquet").read_column("inc");
  ASSERT_EQ(column.num_rows(), 40000);
  for (uint8_t v : values_of<uint8_t>(column)) ASSERT_EQ(v, 0);
}

TEST(ParquetFixtures, PageV2EmptyCompressed) {
  const ColumnData column = open_fixture("data/page_v2_empty_compressed.parquet").read_column(0);
  ASSERT_EQ(column.num_rows(), 10);
  EXPECT_EQ(column.null_count(), 10);
}

TEST(ParquetFixtures, PlainDictUncompressedChecksum) {
  const ParquetFile file = open_fixture("data/plain-dict-uncompressed-checksum.parquet", true);
  const ColumnData longs = file.read_column("long_field");
  ASSERT_EQ(longs.num_rows(), 1000);
  for (int64_t v : values_of<int64_t>(longs)) ASSERT_EQ(v, 0);
  for (const auto& s : values_of<std::string>(file.read_column("binary_field"))) {
    ASSERT_EQ(s, "a655fd0e-9949-4059-bcae-fd6a002a4652");
  }
}

TEST(ParquetFixtures, RleDictSnappyChecksum) {
  const ParquetFile file = open_fixture("data/rle-dict-snappy-checksum.parquet", true);
  const ColumnData longs = file.read_column("long_field");
  ASSERT_EQ(longs.num_rows(), 1000);
  for (int64_t v : values_of<int64_t>(longs)) ASSERT_EQ(v, 0);
  for (const auto& s : values_of<std::string>(file.read_column("binary_field"))) {
    ASSERT_EQ(s, "c95e263a-f5d4-401f-8107-5ca7146a1f98");
  }
}

TEST(ParquetFixtures, CorruptDictionaryChecksumWithoutVerification) {
  const ParquetFile file = open_fixture("data/rle-dict-uncompressed-corrupt-checksum.parquet", false);
  for (int64_t v : values_of<int64_t>(file.read_column("long_field"))) ASSERT_EQ(v, 0);
  for (const auto& s : values_of<std::string>(file.read_column("binary_field"))) {
    ASSERT_EQ(s, "6325c32b-f417-41aa-9e02-9b8601542aff");
  }
}

TEST(ParquetFixtures, RleBooleanEncoding) {
  const ColumnData column = open_fixture("data/rle_boolean_encoding.parquet").read_column(0);
  const std::string expected = "TFNTTFFTTTFFTTFNTTFFTTFNTTFFTTTFFFFTTFNTTFFTTTFFNTTFFTTTFTTFNTTFFTTT";
  ASSERT_EQ(column.num_rows(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == 'N') {
      EXPECT_EQ(column.valid[i], 0) << i;
    } else {
      EXPECT_EQ(column.valid[i], 1) << i;
      EXPECT_EQ(values_of<uint8_t>(column)[i], expected[i] == 'T' ? 1 : 0) << i;
    }
  }
}

TEST(ParquetFixtures, SingleNanIsNullWithEmptyDictionary) {
  const ColumnData column = open_fixture("data/single_nan.parquet").read_column("mycol");
  ASSERT_EQ(column.num_rows(), 1);
  EXPECT_EQ(column.null_count(), 1);
}

TEST(ParquetFixtures, SortColumnsTwoRowGroups) {
  const ParquetFile file = open_fixture("data/sort_columns.parquet");
  ASSERT_EQ(file.metadata().row_groups.size(), 2u);
  const ColumnData a = file.read_column("a");
  EXPECT_EQ(a.valid, (std::vector<uint8_t>{0, 1, 1, 0, 1, 1}));
  EXPECT_EQ(values_of<int64_t>(a), (std::vector<int64_t>{0, 2, 1, 0, 2, 1}));
  EXPECT_EQ(values_of<std::string>(file.read_column("b")), (std::vector<std::string>{"a", "b", "c", "a", "b", "c"}));
}

TEST(ParquetFixtures, UnknownLogicalTypeReadsAsBytes) {
  const ParquetFile file = open_fixture("data/unknown-logical-type.parquet");
  const auto& known = values_of<std::string>(file.read_column(0));
  const auto& unknown = values_of<std::string>(file.read_column(1));
  EXPECT_EQ(known, (std::vector<std::string>{"known string 1", "known string 2", "known string 3"}));
  EXPECT_EQ(unknown, (std::vector<std::string>{"unknown string 1", "unknown string 2", "unknown string 3"}));
}

}  // namespace
}  // namespace feeder::parquet
