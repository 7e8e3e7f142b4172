// Tar shards streamed by the loader's threads (the Python tests compare them with image folders):
// each sample once an epoch within a small budget, the same batches for any number of workers, and
// a member whose header lies about its size refused. Shards are written with libarchive.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "feeder/data/loader.h"
#include "feeder/error.h"
#include "feeder/image/image_stage.h"
#include "feeder/image/tar_shards.h"
#include "formats/test_files.h"
#include "image/test_pictures.h"

namespace feeder {
namespace {

using testing::TempDir;

// `count` samples key%03d.png + key%03d.cls (label i % 3) in one ustar shard.
void write_shard(const std::filesystem::path& path, int first, int count) {
  archive* out = archive_write_new();
  archive_write_set_format_ustar(out);
  ASSERT_EQ(archive_write_open_filename(out, path.c_str()), ARCHIVE_OK);
  for (int i = first; i < first + count; ++i) {
    const std::string label = std::to_string(i % 3);
    const std::vector<uint8_t> png = png_of(12 + i % 9, 10 + i % 7, i);
    char key[16];
    std::snprintf(key, sizeof(key), "%03d", i);
    for (const auto& [extension, bytes] : {std::pair{std::string(".cls"), std::vector<uint8_t>(label.begin(), label.end())},
                                           std::pair{std::string(".png"), png}}) {
      archive_entry* entry = archive_entry_new();
      archive_entry_set_pathname(entry, (key + extension).c_str());
      archive_entry_set_size(entry, static_cast<la_int64_t>(bytes.size()));
      archive_entry_set_filetype(entry, AE_IFREG);
      archive_entry_set_perm(entry, 0644);
      ASSERT_EQ(archive_write_header(out, entry), ARCHIVE_OK);
      ASSERT_EQ(archive_write_data(out, bytes.data(), bytes.size()), static_cast<la_ssize_t>(bytes.size()));
      archive_entry_free(entry);
    }
  }
  archive_write_close(out);
  archive_write_free(out);
}

LoaderOptions resize(int workers, int64_t budget) {
  LoaderOptions options;
  options.batch_size = 5;
  options.prefetch = 2;
  options.num_workers = workers;
  options.seed = 9;
  options.memory_budget = budget;
  ImageStageOptions stage;
  stage.height = 6;
  stage.width = 6;
  stage.crop = ImageCrop::kRandomResizedCrop;
  options.sample_stage = std::make_shared<ImageStage>(stage);
  return options;
}

TEST(TarShards, StreamEachSampleOnceTheSameForAnyNumberOfWorkers) {
  TempDir dir;
  for (int shard = 0; shard < 4; ++shard) write_shard(dir / ("s" + std::to_string(shard) + ".tar"), shard * 70, 70);
  const TarShards shards = open_tar_shards(dir.path().string());
  const SampleSource& source = *shards.source;
  ASSERT_EQ(source.size(), 280);
  EXPECT_EQ(shards.num_shards, 4);
  EXPECT_TRUE(source.labeled());
  EXPECT_EQ(source.num_blocks(), 8);  // 64 + 6 per shard
  EXPECT_EQ(source.sample_name(71), (dir / "s1.tar").string() + ": 071.png");
  // dataset.targets: the shards read through, a block at a time on several threads.
  const std::vector<int64_t> labels = read_labels(source, 3);
  ASSERT_EQ(labels.size(), 280u);
  for (int64_t i = 0; i < 280; ++i) EXPECT_EQ(labels[static_cast<size_t>(i)], i % 3) << i;

  std::vector<int64_t> first_samples;
  std::vector<float> first_pixels;
  for (const int workers : {0, 3}) {
    Loader loader(shards.source, resize(workers, 2 * 65536 + 60000));
    ASSERT_TRUE(loader.streaming());
    ASSERT_LT(loader.shuffle_window(), 280);
    std::vector<int64_t> samples;
    std::vector<float> pixels;
    std::map<int64_t, int> seen;
    loader.start_epoch(1);
    while (auto batch = loader.next()) {
      for (int64_t i = 0; i < batch->size(); ++i) {
        const int64_t sample = batch->sample_indices()[static_cast<size_t>(i)];
        ++seen[sample];
        EXPECT_EQ(batch->labels()[i], sample % 3);
      }
      samples.insert(samples.end(), batch->sample_indices().begin(), batch->sample_indices().end());
      pixels.insert(pixels.end(), batch->images(), batch->images() + batch->size() * 3 * 6 * 6);
    }
    EXPECT_EQ(seen.size(), 280u);
    for (const auto& [sample, times] : seen) EXPECT_EQ(times, 1) << sample;
    if (workers == 0) {
      first_samples = samples;
      first_pixels = pixels;
    } else {
      EXPECT_EQ(samples, first_samples);
      EXPECT_EQ(pixels, first_pixels);
    }
  }
}

TEST(TarShards, AHeaderClaimingMoreThanTheShardIsRefused) {
  TempDir dir;
  write_shard(dir / "s.tar", 0, 2);
  // The second member's size field (octal, at byte 124 of its header) says 77777777777 bytes.
  const std::string text = testing::read_text(dir / "s.tar");
  std::vector<uint8_t> bytes(text.begin(), text.end());
  const size_t header = 1024;  // 000.cls: a header and one block of data
  std::memcpy(bytes.data() + header + 124, "77777777777", 11);
  unsigned checksum = 0;
  std::memset(bytes.data() + header + 148, ' ', 8);
  for (size_t i = 0; i < 512; ++i) checksum += bytes[header + i];
  std::snprintf(reinterpret_cast<char*>(bytes.data() + header + 148), 8, "%06o", checksum);
  testing::write_bytes(dir / "s.tar", bytes);
  const std::string error = testing::data_error_of([&] { open_tar_shards((dir / "s.tar").string()); });
  EXPECT_NE(error.find("s.tar: 000.png: its header claims 8589934591 bytes"), std::string::npos) << error;
}

}  // namespace
}  // namespace feeder
