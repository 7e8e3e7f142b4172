// The disk cache of remote objects (StorageOptions::cache_dir), over a file that counts its reads:
// what was read once is read from the disk after, by this cache or another on the same directory
// (another process's); neighbouring missing blocks come in one read; a damaged block is read
// again, never handed on; the limit holds, evicting the least recently used; threads missing the
// same block make one read.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "feeder/error.h"
#include "feeder/io/object_storage.h"
#include "io/detail/cache_key.h"
#include "io/detail/disk_cache.h"

namespace feeder::detail {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kBlock = DiskCache::kBlockBytes;

// An object in memory that counts the reads made of it; each read takes `delay`.
class CountingFile final : public RandomAccessFile {
 public:
  explicit CountingFile(int64_t size, std::chrono::milliseconds delay = {}) : bytes_(static_cast<size_t>(size)), delay_(delay) {
    std::mt19937_64 random(7);
    for (auto& byte : bytes_) byte = static_cast<uint8_t>(random());
  }
  const std::string& name() const override { return name_; }
  int64_t size() const override { return static_cast<int64_t>(bytes_.size()); }
  int64_t size_now() const override { return size(); }
  std::string version() const override { return "\"v1\""; }
  int64_t read_at(int64_t offset, std::span<uint8_t> out) const override {
    std::this_thread::sleep_for(delay_);
    reads++;
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(out.size()), size() - offset);
    std::copy_n(bytes_.begin() + offset, n, out.begin());
    bytes_read += n;
    return n;
  }
  std::vector<uint8_t> expected(int64_t offset, int64_t size) const {
    return {bytes_.begin() + offset, bytes_.begin() + offset + size};
  }
  mutable std::atomic<int> reads{0};
  mutable std::atomic<int64_t> bytes_read{0};

 private:
  std::string name_ = "s3://bucket/object";
  std::vector<uint8_t> bytes_;
  std::chrono::milliseconds delay_;
};

class DiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("feeder-disk-cache-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    key_ = directory_.string() + "-key";  // the signing key, kept out of the user's home
    fs::remove(key_);
    ::setenv("FEEDER_CACHE_KEY", key_.c_str(), 1);
  }
  void TearDown() override {
    fs::remove_all(directory_);
    fs::remove(key_);
    ::unsetenv("FEEDER_CACHE_KEY");
  }

  static std::vector<uint8_t> read(const RandomAccessFile& file, int64_t offset, int64_t size) {
    std::vector<uint8_t> out(static_cast<size_t>(size));
    EXPECT_EQ(file.read_at(offset, out), size);
    return out;
  }
  std::vector<fs::path> block_files() const {
    std::vector<fs::path> out;
    for (const auto& entry : fs::recursive_directory_iterator(directory_ / "blocks"))
      if (entry.is_regular_file()) out.push_back(entry.path());
    return out;
  }
  int64_t block_bytes_on_disk() const {
    int64_t total = 0;
    for (const fs::path& path : block_files()) total += static_cast<int64_t>(fs::file_size(path));
    return total;
  }

  fs::path directory_;
  fs::path key_;
};

TEST_F(DiskCacheTest, WhatWasReadOnceIsReadFromTheDiskAfterwardsAlsoByAnotherCache) {
  auto source = std::make_shared<CountingFile>(5 * kBlock + 12345);
  const std::vector<std::pair<int64_t, int64_t>> ranges = {
      {0, 100}, {kBlock - 10, 20}, {3 * kBlock + 5, 2 * kBlock + 12345 - 5}, {5 * kBlock, 12345}, {2 * kBlock + 7, 70000}};
  {
    DiskCache cache(directory_, 0);
    auto file = cache.wrap(source, "s3://bucket/object\n\"v1\"");
    EXPECT_EQ(file->size(), source->size());
    EXPECT_EQ(file->version(), "\"v1\"");
    for (const auto& [offset, size] : ranges) EXPECT_EQ(read(*file, offset, size), source->expected(offset, size));
  }
  const int reads_first = source->reads.load();
  EXPECT_GT(reads_first, 0);
  const StorageStats before = storage_stats();
  DiskCache again(directory_, 0);  // as another process would open it
  auto file = again.wrap(source, "s3://bucket/object\n\"v1\"");
  for (const auto& [offset, size] : ranges) EXPECT_EQ(read(*file, offset, size), source->expected(offset, size));
  EXPECT_EQ(source->reads.load(), reads_first) << "blocks read once were read from the store again";
  int64_t wanted = 0;
  for (const auto& range : ranges) wanted += range.second;
  EXPECT_EQ((storage_stats() - before).cache_bytes, wanted);

  // Another identity (the object replaced: another ETag) shares none of its blocks.
  auto other = again.wrap(source, "s3://bucket/object\n\"v2\"");
  EXPECT_EQ(read(*other, 0, 100), source->expected(0, 100));
  EXPECT_EQ(source->reads.load(), reads_first + 1);
}

TEST_F(DiskCacheTest, NeighbouringMissingBlocksComeInOneRead) {
  auto source = std::make_shared<CountingFile>(8 * kBlock);
  DiskCache cache(directory_, 0);
  auto file = cache.wrap(source, "object");
  EXPECT_EQ(read(*file, 2 * kBlock, kBlock), source->expected(2 * kBlock, kBlock));
  EXPECT_EQ(source->reads.load(), 1);
  // Blocks 1..4 asked: 1 is missing, 2 is kept, 3 and 4 missing: two reads, block 2 from the disk.
  EXPECT_EQ(read(*file, kBlock + 1, 4 * kBlock - 2), source->expected(kBlock + 1, 4 * kBlock - 2));
  EXPECT_EQ(source->reads.load(), 3);
  // A small read fetches its whole block: its neighbours within the block are then on the disk.
  EXPECT_EQ(read(*file, 6 * kBlock + 10, 10), source->expected(6 * kBlock + 10, 10));
  EXPECT_EQ(read(*file, 7 * kBlock - 100, 100), source->expected(7 * kBlock - 100, 100));
  EXPECT_EQ(source->reads.load(), 4);
  EXPECT_EQ(block_files().size(), 5u);  // blocks 1, 2, 3, 4 and 6
}

TEST_F(DiskCacheTest, WhenNothingCanBeKeptOnlyWhatIsAskedIsRead) {
  // The cache's folder of blocks replaced by a file: every block written fails, as on a full disk.
  auto source = std::make_shared<CountingFile>(2 * kBlock);
  DiskCache cache(directory_, 0);
  auto file = cache.wrap(source, "object");
  fs::remove_all(directory_ / "blocks");
  std::ofstream(directory_ / "blocks") << "not a folder";
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(read(*file, 10, 100), source->expected(10, 100));  // a block fetched, and not kept
  for (int64_t i = 1; i <= 50; ++i) EXPECT_EQ(read(*file, i * 1000, 100), source->expected(i * 1000, 100));
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("cannot keep remote data in the cache"), std::string::npos) << said;
  EXPECT_EQ(said.find("cannot keep", said.find("cannot keep") + 1), std::string::npos) << "said twice: " << said;
  // One block for the first read, then the 50 reads' own bytes: not 50 blocks more.
  EXPECT_EQ(source->bytes_read.load(), kBlock + 50 * 100);
}

// Rewrites block file `path` (of a 1 MiB block) with byte 100 changed and its XXH3s recomputed, as
// someone who can write the cache directory and knows the format can.
void forge(const fs::path& path) {
  std::vector<uint8_t> bytes(static_cast<size_t>(fs::file_size(path)));
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  bytes[100] ^= 0xff;
  for (int64_t chunk = 0; chunk < kBlock / (64 << 10); ++chunk) {
    const uint64_t sum = XXH3_64bits(bytes.data() + chunk * (64 << 10), 64 << 10);
    std::memcpy(bytes.data() + kBlock + 8 * chunk, &sum, 8);
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(bytes.data()),
                                                                 static_cast<std::streamsize>(bytes.size()));
}

TEST_F(DiskCacheTest, AForgedBlockWithItsChecksumsRecomputedIsReadAgain) {
  auto source = std::make_shared<CountingFile>(3 * kBlock);
  {
    DiskCache cache(directory_, 0);
    auto file = cache.wrap(source, "object");
    EXPECT_EQ(read(*file, 0, 3 * kBlock), source->expected(0, 3 * kBlock));
  }
  ASSERT_EQ(block_files().size(), 3u);
  EXPECT_EQ((fs::status(key_).permissions() & fs::perms::all), fs::perms::owner_read | fs::perms::owner_write);
  const int reads = source->reads.load();
  std::vector<fs::path> blocks = block_files();
  std::sort(blocks.begin(), blocks.end());
  forge(blocks[0]);
  // Block 2's file put in place of block 1's, whole and with its own good XXH3s and signature.
  fs::copy_file(blocks[2], blocks[1], fs::copy_options::overwrite_existing);
  DiskCache again(directory_, 0);  // as another process would open it
  auto file = again.wrap(source, "object");
  EXPECT_EQ(read(*file, 0, 3 * kBlock), source->expected(0, 3 * kBlock));
  EXPECT_EQ(source->reads.load(), reads + 2) << "blocks 0 and 1 each read from the store again";
  // Read again from the store, they are kept again, signed.
  EXPECT_EQ(read(*file, 0, 3 * kBlock), source->expected(0, 3 * kBlock));
  EXPECT_EQ(source->reads.load(), reads + 2);
  // Another key (another user) takes none of them.
  fs::remove(key_);
  DiskCache other_key(directory_, 0);
  EXPECT_EQ(read(*other_key.wrap(source, "object"), 0, 10), source->expected(0, 10));
  EXPECT_EQ(source->reads.load(), reads + 3);
}

TEST_F(DiskCacheTest, ADamagedBlockIsReadAgainNeverHandedOn) {
  auto source = std::make_shared<CountingFile>(2 * kBlock);
  DiskCache cache(directory_, 0);
  auto file = cache.wrap(source, "object");
  read(*file, 0, 2 * kBlock);
  ASSERT_EQ(source->reads.load(), 1);
  const std::vector<fs::path> blocks = block_files();
  ASSERT_EQ(blocks.size(), 2u);
  // One byte changed in the first block's data, the second cut short.
  const fs::path first = blocks[0].filename().string().ends_with(".0") ? blocks[0] : blocks[1];
  const fs::path second = first == blocks[0] ? blocks[1] : blocks[0];
  {
    std::fstream changed(first, std::ios::in | std::ios::out | std::ios::binary);
    changed.seekp(kBlock / 2);
    char byte = 0;
    changed.seekg(kBlock / 2);
    changed.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x40);
    changed.seekp(kBlock / 2);
    changed.write(&byte, 1);
  }
  fs::resize_file(second, fs::file_size(second) - 1);
  EXPECT_EQ(read(*file, kBlock / 2 - 5, 10), source->expected(kBlock / 2 - 5, 10));
  EXPECT_EQ(read(*file, kBlock + 3, 10), source->expected(kBlock + 3, 10));
  EXPECT_EQ(source->reads.load(), 3);
  // Kept again, whole: read from the disk now.
  EXPECT_EQ(read(*file, 0, 2 * kBlock), source->expected(0, 2 * kBlock));
  EXPECT_EQ(source->reads.load(), 3);
}

TEST_F(DiskCacheTest, TheLimitHoldsAndTheLeastRecentlyUsedGoFirst) {
  auto source = std::make_shared<CountingFile>(12 * kBlock);
  const int64_t block_file = kBlock + 8 * (kBlock / (64 << 10)) + 32;  // data, XXH3s, signature
  DiskCache cache(directory_, 6 * block_file);
  auto file = cache.wrap(source, "object");
  for (int64_t block = 0; block < 6; ++block) read(*file, block * kBlock, 1);
  ASSERT_EQ(block_files().size(), 6u);
  // Blocks 0..5 last used long ago, block 0 the oldest; then block 0 read again (renewed).
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const time_t seconds = std::chrono::duration_cast<std::chrono::seconds>(now).count();
  for (const fs::path& path : block_files()) {
    const int64_t block = std::stoll(path.extension().string().substr(1));
    const timespec times[2] = {{seconds - 10000 + block, 0}, {seconds - 10000 + block, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  }
  read(*file, 0, 1);
  const int reads = source->reads.load();
  EXPECT_EQ(reads, 6);
  // A seventh block passes the limit: down to seven eighths of it, blocks 1 and 2 removed first.
  read(*file, 6 * kBlock, 1);
  EXPECT_LE(block_bytes_on_disk(), 6 * block_file);
  EXPECT_EQ(cache.bytes_estimate(), block_bytes_on_disk());
  std::vector<int64_t> kept;
  for (const fs::path& path : block_files()) kept.push_back(std::stoll(path.extension().string().substr(1)));
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<int64_t>{0, 3, 4, 5, 6}));
  // Everything read through a small cache is still right.
  EXPECT_EQ(read(*file, 0, 12 * kBlock), source->expected(0, 12 * kBlock));
  EXPECT_LE(block_bytes_on_disk(), 6 * block_file);
  // A cache opened with a smaller limit brings the directory within it at once.
  DiskCache smaller(directory_, 2 * block_file);
  EXPECT_LE(block_bytes_on_disk(), 2 * block_file);
}

TEST_F(DiskCacheTest, ThreadsMissingTheSameBlockMakeOneRead) {
  auto source = std::make_shared<CountingFile>(3 * kBlock, std::chrono::milliseconds(50));
  DiskCache cache(directory_, 0);
  auto file = cache.wrap(source, "object");
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      const int64_t offset = kBlock + 1000 * t;
      std::vector<uint8_t> out(5000);
      if (file->read_at(offset, out) != 5000 || out != source->expected(offset, 5000)) wrong++;
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(source->reads.load(), 1);
}

TEST_F(DiskCacheTest, ADirectoryThatCannotBeMadeIsAnOptionsErrorNamingIt) {
  const fs::path file = directory_.string() + "-file";
  { std::ofstream(file) << "x"; }
  try {
    DiskCache cache(file / "cache", 0);
    FAIL() << "no error";
  } catch (const OptionsError& error) {
    EXPECT_NE(std::string(error.what()).find(file.string()), std::string::npos) << error.what();
  }
  fs::remove(file);
}

}  // namespace
}  // namespace feeder::detail
