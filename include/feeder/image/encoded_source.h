#pragma once

// Encoded images (a JPEG, PNG or WebP file's bytes each) with integer labels, held in memory: a
// SampleSource whose samples an ImageStage decodes on the loader's workers. What an image folder
// (image_folder.h) is read into. Memory is the encoded bytes (about a tenth of the decoded pixels
// for photographs).
//
// Thread safety: immutable once made; any number of threads read it. The fingerprint is computed
// on first use, once.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "feeder/data/source.h"

namespace feeder {

class EncodedImageSource : public RandomAccessSource {
 public:
  // `bytes` holds every sample back to back: sample i is [offsets[i], offsets[i + 1]); `labels` and
  // `names` (for messages: a path, a member) have one entry per sample.
  EncodedImageSource(std::string name, std::vector<uint8_t> bytes, std::vector<int64_t> offsets,
                     std::vector<int64_t> labels, std::vector<std::string> names, bool labeled);

  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  // Encoded images (each of its size; the batch's shape is the sample stage's output) and labels.
  const Schema& schema() const override { return schema_; }
  // XXH3 of the samples' bytes, their boundaries and labels.
  uint64_t fingerprint() const override;
  std::string name() const override { return name_; }
  SampleView sample(int64_t i) const override;
  std::string sample_name(int64_t i) const override { return names_[static_cast<size_t>(i)]; }
  std::vector<int64_t> labels_alone() const override { return labeled_ ? labels_ : std::vector<int64_t>{}; }
  std::span<const int64_t> block_starts() const override { return block_starts_; }
  int64_t max_read_bytes() const override { return 0; }
  // A block's images' bytes, as a stream counts them.
  int64_t variable_bytes(int64_t block_idx, size_t field) const override {
    if (field != 0) return 0;
    const int64_t first = block_starts_.at(static_cast<size_t>(block_idx));
    const int64_t last = block_starts_[static_cast<size_t>(block_idx) + 1];
    return offsets_[static_cast<size_t>(last)] - offsets_[static_cast<size_t>(first)];
  }
  // A block's samples copied back to back, as a stream of the same images would read them.
  void read_blocks(std::span<const int64_t> blocks, std::vector<uint8_t>& scratch,
                   std::span<const BlockBuffers> out) const override;

  // The encoded bytes held.
  int64_t encoded_bytes() const { return static_cast<int64_t>(bytes_.size()); }

 private:
  std::string name_;
  std::vector<uint8_t> bytes_;
  std::vector<int64_t> offsets_;  // size() + 1
  std::vector<int64_t> labels_;
  std::vector<std::string> names_;
  bool labeled_ = true;
  Schema schema_;
  std::vector<int64_t> block_starts_;
  mutable std::once_flag fingerprint_once_;
  mutable uint64_t fingerprint_ = 0;
};

// Builds an EncodedImageSource an image at a time, in order.
class EncodedImagesBuilder {
 public:
  // Appends an image of `size` bytes with its label and name; returns where its bytes go (valid
  // until the next add).
  uint8_t* add(int64_t size, int64_t label, std::string name);
  // The images added, as a source called `name`; the builder is left empty.
  std::shared_ptr<const EncodedImageSource> finish(std::string name, bool labeled);

 private:
  std::vector<uint8_t> bytes_;
  std::vector<int64_t> offsets_ = {0};
  std::vector<int64_t> labels_;
  std::vector<std::string> names_;
};

}  // namespace feeder
