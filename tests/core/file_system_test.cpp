// The local file system behind the one door to bytes: ranges read from many threads at once, the
// exact errors, stat and list (with the identity a walk finds its cycles by).

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "feeder/error.h"
#include "feeder/io/file_system.h"
#include "formats/test_files.h"

namespace feeder {
namespace {

using testing::data_error_of;
using testing::TempDir;
using testing::write_bytes;

std::vector<uint8_t> numbered_bytes(size_t count) {
  std::vector<uint8_t> bytes(count);
  for (size_t i = 0; i < count; ++i) bytes[i] = static_cast<uint8_t>(i * 13 + 5);
  return bytes;
}

TEST(LocalFileSystem, ReadsRangesFromManyThreadsAtOnce) {
  TempDir dir;
  const std::vector<uint8_t> bytes = numbered_bytes(1 << 20);
  write_bytes(dir / "data", bytes);
  const auto file = local_file_system().open(dir / "data");
  EXPECT_EQ(file->size(), 1 << 20);
  EXPECT_EQ(file->name(), (dir / "data").string());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> out(4099);
      for (int64_t offset = t * 977; offset + 4099 <= (1 << 20); offset += 8 * 977 * 13) {
        if (file->read_at(offset, out) != 4099 || !std::equal(out.begin(), out.end(), bytes.begin() + offset)) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(LocalFileSystem, AReadPastTheEndIsShortAndReadExactlyNamesWhereTheFileEnded) {
  TempDir dir;
  write_bytes(dir / "data", numbered_bytes(100));
  const auto file = local_file_system().open(dir / "data");
  std::vector<uint8_t> out(50);
  EXPECT_EQ(file->read_at(80, out), 20);
  EXPECT_EQ(file->read_at(200, out), 0);
  EXPECT_EQ(data_error_of([&] { file->read_exactly(80, 50, "its footer"); }),
            (dir / "data").string() + ": file ended after 100 bytes while reading its footer");
  const std::vector<uint8_t> first = numbered_bytes(15);
  EXPECT_EQ(file->read_exactly(10, 5, "x"), std::vector<uint8_t>(first.begin() + 10, first.end()));
}

TEST(LocalFileSystem, OpenRefusesWhatIsNotARegularFileNamingIt) {
  TempDir dir;
  EXPECT_EQ(data_error_of([&] { local_file_system().open(dir / "missing"); }),
            (dir / "missing").string() + ": cannot open: No such file or directory");
  std::filesystem::create_directory(dir / "folder");
  EXPECT_EQ(data_error_of([&] { local_file_system().open(dir / "folder"); }),
            (dir / "folder").string() + ": not a regular file");
}

TEST(LocalFileSystem, StatAndListSayWhatEachPathHolds) {
  TempDir dir;
  write_bytes(dir / "a.bin", numbered_bytes(7));
  std::filesystem::create_directory(dir / "sub");
  std::filesystem::create_symlink(dir / "gone", dir / "dangling.jpg");
  std::filesystem::create_directory_symlink(dir / "sub", dir / "link");
  const FileSystem& files = local_file_system();
  EXPECT_EQ(files.stat(dir / "a.bin").kind, FileKind::kFile);
  EXPECT_EQ(files.stat(dir / "a.bin").size, 7);
  EXPECT_EQ(files.stat(dir / "nothing").kind, FileKind::kMissing);
  std::vector<FileEntry> entries = files.list(dir.path());
  std::sort(entries.begin(), entries.end(), [](const FileEntry& a, const FileEntry& b) { return a.path < b.path; });
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].path.filename(), "a.bin");
  EXPECT_TRUE(entries[0].file());
  EXPECT_EQ(entries[1].path.filename(), "dangling.jpg");
  EXPECT_EQ(entries[1].kind, FileKind::kMissing);  // a link to nothing
  EXPECT_EQ(entries[2].path.filename(), "link");
  EXPECT_TRUE(entries[2].directory());
  EXPECT_EQ(entries[3].path.filename(), "sub");
  // A link to a directory is that directory: the same identity, which a walk finds cycles by.
  EXPECT_EQ(entries[2].identity, entries[3].identity);
  EXPECT_NE(entries[2].identity, (std::pair<uint64_t, uint64_t>{0, 0}));
  EXPECT_EQ(data_error_of([&] { files.list(dir / "a.bin"); }).rfind((dir / "a.bin").string() + ": cannot list: ", 0), 0u);
}

TEST(LocalFileSystem, ReadAllMapsARegularFile) {
  TempDir dir;
  write_bytes(dir / "data", numbered_bytes(5000));
  const FileBytes bytes = file_system_for(dir / "data").read_all(dir / "data");
  EXPECT_EQ(std::vector<uint8_t>(bytes.bytes().begin(), bytes.bytes().end()), numbered_bytes(5000));
}

TEST(LocalFileSystem, AWrittenFileAppearsWholeOnCommitAndNotAtAllWithout) {
  TempDir dir;
  const FileSystem& files = local_file_system();
  write_bytes(dir / "out", numbered_bytes(3));
  {
    const auto file = files.create(dir / "out");
    file->write("new contents");
    EXPECT_EQ(file->bytes_written(), 12u);
    // Not committed: the old file is still there, whole.
    EXPECT_EQ(files.stat(dir / "out").size, 3);
  }
  EXPECT_EQ(files.stat(dir / "out").size, 3);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()), 1);
  const auto file = files.create(dir / "out");
  file->write("new contents");
  file->commit();
  const FileBytes bytes = files.read_all(dir / "out");
  EXPECT_EQ(std::string(bytes.bytes().begin(), bytes.bytes().end()), "new contents");
  EXPECT_EQ(data_error_of([&] { files.create(dir / "no such folder" / "out"); }).rfind((dir / "no such folder" / "out").string(), 0), 0u);
}

}  // namespace
}  // namespace feeder
