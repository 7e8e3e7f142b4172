// MappedFile: a read-only mapping of a whole regular file, and the exact errors when there is none.

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "feeder/error.h"
#include "feeder/io/file.h"
#include "formats/test_files.h"

namespace feeder {
namespace {

using testing::data_error_of;
using testing::TempDir;
using testing::write_bytes;

// Sizes around the page size, so the last page is partly past the end of the file.
TEST(MappedFile, MapsTheFileBytesExactly) {
  TempDir dir;
  for (const size_t size_bytes : {size_t{1}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{70000}}) {
    std::vector<uint8_t> bytes(size_bytes);
    for (size_t i = 0; i < size_bytes; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + size_bytes);
    const auto path = dir / ("file-" + std::to_string(size_bytes));
    write_bytes(path, bytes);
    const MappedFile mapped(path);
    EXPECT_EQ(std::vector<uint8_t>(mapped.bytes().begin(), mapped.bytes().end()), bytes) << size_bytes;
  }
}

TEST(MappedFile, EmptyFileHasNoBytes) {
  TempDir dir;
  write_bytes(dir / "empty", {});
  const MappedFile mapped(dir / "empty");
  EXPECT_TRUE(mapped.bytes().empty());
}

TEST(MappedFile, MissingFileErrorNamesThePathAndTheSystemError) {
  TempDir dir;
  const auto path = dir / "absent.bin";
  EXPECT_EQ(data_error_of([&] { MappedFile mapped(path); }), path.string() + ": cannot open: No such file or directory");
}

TEST(MappedFile, DirectoryIsNotMapped) {
  TempDir dir;
  EXPECT_EQ(data_error_of([&] { MappedFile mapped(dir.path()); }),
            dir.path().string() + ": cannot map: not a regular file");
}

// fopen opens a directory; read_file must not take its "size" for a file's.
TEST(ReadFile, DirectoryGivesAnErrorNamingIt) {
  TempDir dir;
  EXPECT_EQ(data_error_of([&] { read_file(dir.path()); }), dir.path().string() + ": cannot read: is a directory");
}

// A ParquetFile returned by value carries its mapping along: the bytes must not move or go away.
TEST(MappedFile, MoveKeepsTheMappingAndEmptiesTheSource) {
  TempDir dir;
  write_bytes(dir / "file", {1, 2, 3});
  MappedFile first(dir / "file");
  const uint8_t* data = first.bytes().data();
  MappedFile second(std::move(first));
  EXPECT_TRUE(first.bytes().empty());  // the moved-from state is specified: maps nothing
  EXPECT_EQ(second.bytes().data(), data);
  EXPECT_EQ(second.bytes().size(), 3u);
  MappedFile third;
  third = std::move(second);
  EXPECT_EQ(third.bytes().data(), data);
  EXPECT_EQ(third.bytes()[2], 3);
}

// Outputs are replaced by rename (AtomicFileWriter), which must leave a live mapping as it was.
TEST(MappedFile, ReplacingTheFileByRenameKeepsTheOldBytes) {
  TempDir dir;
  write_bytes(dir / "file", {1, 2, 3});
  const MappedFile mapped(dir / "file");
  write_file_atomically(dir / "file", "replacement");
  EXPECT_EQ(std::vector<uint8_t>(mapped.bytes().begin(), mapped.bytes().end()), (std::vector<uint8_t>{1, 2, 3}));
}

}  // namespace
}  // namespace feeder
