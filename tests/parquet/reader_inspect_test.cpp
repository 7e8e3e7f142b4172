// `feeder inspect` on Parquet files: what it prints and its exit codes.

#include <gtest/gtest.h>

#include "cli/commands.h"
#include "feeder/formats/sharded.h"
#include "formats/test_files.h"
#include "parquet/reader_test_util.h"
#include "parquet/writer_test_util.h"

namespace feeder::cli {
namespace {

std::pair<int, std::string> run_inspect(const std::vector<std::string>& args, std::string* err = nullptr) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = inspect_main(args);
  std::string out = ::testing::internal::GetCapturedStdout();
  const std::string error = ::testing::internal::GetCapturedStderr();
  if (err) *err = error;
  return {rc, out};
}

TEST(ParquetInspect, ShowsSchemaRowGroupsCodecsAndPages) {
  const auto [rc, out] = run_inspect({parquet::testing::fixture("generated/parquet-rs-59.3.0/arrowrs_v1_snappy_rg1000.parquet")});
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("rows: 3000, row groups: 3, columns: 20"), std::string::npos) << out;
  EXPECT_NE(out.find("p0 (INT32, REQUIRED, INT(8,false))"), std::string::npos) << out;
  EXPECT_NE(out.find("row group 2: 1000 rows"), std::string::npos) << out;
  EXPECT_NE(out.find("  p0: SNAPPY, encodings ["), std::string::npos) << out;
  EXPECT_NE(out.find("pages: 1 dictionary, 1 v1, 0 v2 (RLE_DICTIONARY)"), std::string::npos) << out;
}

TEST(ParquetInspect, ShowsNestedSchemaWithANote) {
  const auto [rc, out] = run_inspect({parquet::testing::fixture("data/nulls.snappy.parquet")});
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("b_struct (group, 1 children, OPTIONAL)"), std::string::npos) << out;
  EXPECT_NE(out.find("note: nested schema"), std::string::npos) << out;
}

TEST(ParquetInspect, BadFileExitsOneWithTheError) {
  std::string err;
  const auto [rc, out] = run_inspect({parquet::testing::fixture("data/uniform_encryption.parquet.encrypted")}, &err);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find("encrypted parquet not supported"), std::string::npos) << err;
}

TEST(ParquetInspect, UsageErrorExitsTwo) {
  EXPECT_EQ(run_inspect({}).first, 2);
  EXPECT_EQ(run_inspect({"a.parquet", "b.parquet"}).first, 2);
}

TEST(ParquetInspect, ADirectoryOrGlobIsSummarisedAsASet) {
  feeder::testing::TempDir dir;
  ShardWriteOptions options;
  options.shard_rows = 4;
  write_sharded(feeder::testing::make_store(ImageShape{1, 2, 2}, 10, true), dir.path(), options);
  const ShardedDataset dataset = open_sharded_dataset(dir.path().string());
  auto [rc, out] = run_inspect({dir.path().string()});
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out, describe_sharded_dataset(dataset));
  EXPECT_NE(out.find("shards: 3, rows: 10, row groups: 3\n"), std::string::npos) << out;
  std::tie(rc, out) = run_inspect({(dir / "part-0000[01].parquet").string()});
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("(no index; described from the footers)"), std::string::npos) << out;
  EXPECT_NE(out.find("shards: 2, rows: 8, row groups: 2\n"), std::string::npos) << out;
  std::string err;
  std::tie(rc, out) = run_inspect({(dir / "none-*.parquet").string()}, &err);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(err, "feeder inspect: " + (dir / "none-*.parquet").string() + ": no files match\n");
}

}  // namespace
}  // namespace feeder::cli
