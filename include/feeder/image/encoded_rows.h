#pragma once

// A set of encoded images read a few rows at a time, in any order: what `feeder convert` writes
// Parquet shards from (sharded.h, write_encoded_sharded), so that a set larger than memory
// converts while holding one shard's images at a time.
//
//   - an image folder: the listed files, each read when its row is asked for;
//   - a streaming source (tar shards): its blocks read in order. Rows asked for in order are taken
//     as the blocks come. Rows asked for in any other order (a shuffle on write) need a first pass
//     that copies every image into a spill file beside the output, read back by offset; the file
//     is unlinked as soon as it is created, so nothing is left behind, even after kill -9.
//
// Thread safety: one thread uses a reader (a stream advances).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "feeder/data/source.h"
#include "feeder/image/encoded_source.h"
#include "feeder/image/image_folder.h"
#include "feeder/store/image_store.h"

namespace feeder {

class EncodedRowReader {
 public:
  virtual ~EncodedRowReader() = default;
  virtual int64_t size() const = 0;
  virtual bool labeled() const = 0;
  // Every image's bytes, together (known before any is read).
  virtual int64_t encoded_bytes() const = 0;

  // Rows `rows` (indices in [0, size())) read into memory, in that order. Throws DataError naming
  // the file or member that cannot be read.
  std::shared_ptr<const EncodedImageSource> read(std::span<const int64_t> rows);

  // What has been read: the distinct labels and the seconds spent reading.
  const std::set<int64_t>& labels_seen() const { return labels_seen_; }
  double read_seconds() const { return read_seconds_; }
  // Images whose header does not read (not an image, empty, cut short, too large): written as they
  // are, they fail a loader's batch (or are skipped with its skip option). Their count and the
  // first few errors.
  int64_t unreadable() const { return unreadable_; }
  const std::vector<std::string>& first_unreadable() const { return first_unreadable_; }

 protected:
  virtual std::shared_ptr<const EncodedImageSource> read_rows(std::span<const int64_t> rows) = 0;

 private:
  std::set<int64_t> labels_seen_;
  double read_seconds_ = 0;
  int64_t unreadable_ = 0;
  std::vector<std::string> first_unreadable_;
};

// The files of a listed image folder, read on `num_threads` threads (0: one per core).
std::unique_ptr<EncodedRowReader> folder_row_reader(ImageFolderListing listing, std::string name, int num_threads = 0);

// A pixel set's images (uint8, 1 or 3 channels), each encoded as a lossless PNG of its own as its
// row is read, on `num_threads` threads (0: one per core): `feeder convert --layout png`. Named
// "name: image i". encoded_bytes() is estimated from up to 256 of the images (a shard is cut by
// bytes before any is written). Throws OptionsError for float pixels or other channel counts.
std::unique_ptr<EncodedRowReader> png_row_reader(std::shared_ptr<const ImageStore> store, std::string name,
                                                 int num_threads = 0);

// The rows of a streaming source of encoded images (`source.encoded()`, not in memory), whose
// images take `encoded_bytes`. With `any_order`, every block is copied into a spill file in
// `spill_dir` first (progress(blocks_done, blocks) after each); otherwise rows must be asked for
// in order, from 0, and an OptionsError says so when they are not.
std::unique_ptr<EncodedRowReader> stream_row_reader(std::shared_ptr<const SampleSource> source, int64_t encoded_bytes,
                                                    bool any_order, const std::filesystem::path& spill_dir,
                                                    const std::function<void(int64_t, int64_t)>& progress = nullptr);

}  // namespace feeder
