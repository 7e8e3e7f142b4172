#pragma once

// The in-memory image set: one contiguous uint8 (N,C,H,W) array and int64 labels.
//
// Thread safety: immutable once filled, so any number of threads read it at once; it is filled by
// one reader before it is shared. Ownership: the store owns its labels and its pixels, or shares the
// ownership of a caller's pixel array (the borrowing constructor); loaders share it
// as shared_ptr<const ImageStore>, so it lives as long as any loader or source reading it.

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "feeder/io/large_buffer.h"

namespace feeder {

// Shape of one image, channels first.
struct ImageShape {
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;

  int64_t num_pixels() const { return channels * height * width; }
  bool operator==(const ImageShape&) const = default;
};

std::string to_string(const ImageShape& shape);

// What one stored pixel value is. uint8 for every reader (raw pixels, scaled and normalised per
// batch); float32 for values a program computed already (feeder.cached() of a Python Dataset whose
// values are not 256 evenly spaced levels), served as they are, without scaling or normalisation.
enum class PixelType : uint8_t { kUint8, kFloat32 };

// Label stored for images of an unlabeled set (a file with no label column), as in the article.
inline constexpr int64_t kNoLabel = -1;

// A decoded image set held in memory once, as readers produce it and the loader consumes it:
// pixels (N,C,H,W) uint8 in one contiguous array, labels (N) int64 (kNoLabel when unlabeled).
// uint8 rather than float keeps it 4x smaller than a float copy; conversion happens per batch.
// Immutable once filled, so any number of loader threads may read it concurrently.
class ImageStore {
 public:
  ImageStore() = default;
  // Allocates a store for num_images images; readers then fill every pixel in place. Pixels start
  // uninitialised on purpose: a reader's threads then touch the memory first, in parallel, instead
  // of one thread zero-filling tens of megabytes up front. Labels start as kNoLabel.
  ImageStore(ImageShape shape, int64_t num_images, bool labeled);
  // Uses `pixels` ((num_images,C,H,W) uint8, contiguous) where it lies instead of copying it: the
  // caller's array, kept alive by the shared_ptr (an aliasing one that owns the array's holder) for
  // as long as the store lives. The caller must not change those pixels while a loader reads them.
  // `labels` has num_images entries (all kNoLabel when `labeled` is false).
  // `type` says what the pixel bytes hold: image_bytes() per image either way.
  ImageStore(ImageShape shape, int64_t num_images, std::shared_ptr<uint8_t> pixels, std::vector<int64_t> labels,
             bool labeled, PixelType type = PixelType::kUint8);
  // Move-only: a copy would share the pixels it looks as if it owned.
  ImageStore(ImageStore&&) = default;
  ImageStore& operator=(ImageStore&&) = default;
  ImageStore(const ImageStore&) = delete;
  ImageStore& operator=(const ImageStore&) = delete;

  int64_t size() const { return num_images_; }
  const ImageShape& shape() const { return shape_; }
  PixelType pixel_type() const { return pixel_type_; }
  // Bytes of one image: its pixel values times their size.
  int64_t image_bytes() const { return shape_.num_pixels() * (pixel_type_ == PixelType::kFloat32 ? 4 : 1); }
  // True when the source had labels; otherwise every label is kNoLabel.
  bool labeled() const { return labeled_; }

  // The pixel bytes (image_bytes() per image).
  std::span<uint8_t> pixels() { return {pixels_.get(), num_pixel_bytes()}; }
  std::span<const uint8_t> pixels() const { return {pixels_.get(), num_pixel_bytes()}; }
  std::span<int64_t> labels() { return labels_; }
  std::span<const int64_t> labels() const { return labels_; }

  uint8_t* image(int64_t idx) { return pixels_.get() + idx * image_bytes(); }
  const uint8_t* image(int64_t idx) const { return pixels_.get() + idx * image_bytes(); }
  int64_t label(int64_t idx) const { return labels_[static_cast<size_t>(idx)]; }

  // Number of images per label value; kNoLabel is not counted.
  std::map<int64_t, int64_t> label_counts() const;

 private:
  ImageShape shape_;
  int64_t num_images_ = 0;
  bool labeled_ = false;
  PixelType pixel_type_ = PixelType::kUint8;
  size_t num_pixel_bytes() const { return static_cast<size_t>(num_images_ * image_bytes()); }

  std::shared_ptr<uint8_t> pixels_;  // (N,C,H,W): allocated here, or the caller's array
  std::vector<int64_t> labels_;  // (N)
};

}  // namespace feeder
