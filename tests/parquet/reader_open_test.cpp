// ParquetFile::open on files from disk, which it maps: the same values and errors as the same bytes
// given to from_buffer, empty and truncated files, and a file replaced by rename while open.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feeder/error.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/io/file.h"
#include "formats/test_files.h"
#include "parquet/reader_test_util.h"

namespace feeder::parquet {
namespace {

using feeder::testing::data_error_of;
using feeder::testing::TempDir;
using feeder::testing::write_bytes;

// Every column readable (no INT96), several pages and row values worth comparing.
const char* const kFixture = "data/delta_binary_packed.parquet";

void expect_same_columns(const ParquetFile& actual, const ParquetFile& expected) {
  ASSERT_EQ(actual.metadata().columns.size(), expected.metadata().columns.size());
  for (int64_t c = 0; c < static_cast<int64_t>(expected.metadata().columns.size()); ++c) {
    const ColumnData a = actual.read_column(c);
    const ColumnData e = expected.read_column(c);
    EXPECT_EQ(a.valid, e.valid) << "column " << c;
    EXPECT_TRUE(a.values == e.values) << "column " << c;
  }
}

TEST(ParquetOpen, MappedFileReadsLikeItsBytesInMemory) {
  const std::string path = testing::fixture(kFixture);
  const std::vector<uint8_t> bytes = read_file_raw(path);
  const ParquetFile mapped = ParquetFile::open(path);
  EXPECT_EQ(std::vector<uint8_t>(mapped.bytes().begin(), mapped.bytes().end()), bytes);
  expect_same_columns(mapped, ParquetFile::from_buffer(bytes, path));
}

TEST(ParquetOpen, EmptyFileIsTooShort) {
  TempDir dir;
  const auto path = dir / "empty.parquet";
  write_bytes(path, {});
  EXPECT_EQ(data_error_of([&] { ParquetFile::open(path); }),
            path.string() + ": not a Parquet file: 0 bytes is too short (truncated?)");
}

TEST(ParquetOpen, MissingFileNamesThePathAndTheSystemError) {
  TempDir dir;
  const auto path = dir / "absent.parquet";
  EXPECT_EQ(data_error_of([&] { ParquetFile::open(path); }), path.string() + ": cannot open: No such file or directory");
}

// A cut file on disk fails exactly as the same cut bytes in memory do.
TEST(ParquetOpen, TruncatedFileFailsLikeTheTruncatedBuffer) {
  TempDir dir;
  const std::vector<uint8_t> whole = read_file_raw(testing::fixture(kFixture));
  for (const size_t cut_bytes : {size_t{3}, size_t{11}, whole.size() / 2, whole.size() - 1}) {
    const std::vector<uint8_t> cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut_bytes));
    const auto path = dir / ("cut-" + std::to_string(cut_bytes) + ".parquet");
    write_bytes(path, cut);
    const std::string expected = data_error_of([&] { ParquetFile::from_buffer(cut, path.string()); });
    EXPECT_EQ(data_error_of([&] { ParquetFile::open(path); }), expected) << cut_bytes;
  }
}

// Outputs are replaced by rename (AtomicFileWriter); an open file keeps reading the old bytes.
TEST(ParquetOpen, FileReplacedByRenameKeepsReadingTheOldBytes) {
  TempDir dir;
  const std::vector<uint8_t> whole = read_file_raw(testing::fixture(kFixture));
  const auto path = dir / "replaced.parquet";
  write_bytes(path, whole);
  const ParquetFile file = ParquetFile::open(path);
  write_file_atomically(path, "not parquet any more");
  expect_same_columns(file, ParquetFile::from_buffer(whole, path.string()));
}

}  // namespace
}  // namespace feeder::parquet
