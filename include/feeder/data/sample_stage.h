#pragma once

// The sample model: a stored sample is bytes of any length with a label, and a batch row is a
// fixed-size image, float32 (normalised) or uint8 (for a model that normalises on its device).
// Between them runs a per-sample stage on the loader's workers: for a set of fixed-size pixels it is
// the loader's own conversion (a copy and a scale); for encoded images (JPEG, PNG, WebP) it decodes,
// crops, resizes, flips and normalises (ImageStage, feeder/image/image_stage.h). Its random draws
// come from the sample's own generator, a function of (seed, epoch, sample), so the batches are the
// same for any number of workers and ranks and after a resume.
//
// Thread safety: run() is const and called from every worker at once; a stage keeps any scratch
// per thread.

#include <cstdint>
#include <span>
#include <string>

#include "feeder/data/random.h"
#include "feeder/store/image_store.h"

namespace feeder {

// Memory layout of the images in a batch. For one channel both layouts are the same bytes.
enum class ImageLayout { kNchw, kNhwc };

// Element type of the images in a batch: float32 values, normalised; or uint8 pixels 0..255, not
// normalised (a quarter of the memory and bandwidth, for a model that normalises on its device).
enum class ImageDtype { kFloat32, kUint8 };

inline int64_t dtype_bytes(ImageDtype dtype) { return dtype == ImageDtype::kUint8 ? 1 : 4; }

// One stored sample as a source holds it.
struct SampleView {
  std::span<const uint8_t> bytes;
  int64_t label = kNoLabel;
};

class SampleStage {
 public:
  virtual ~SampleStage() = default;
  // The shape of every output, (C,H,W) whatever the layout.
  virtual ImageShape output_shape() const = 0;
  // Writes sample `sample` (its stored `bytes`) as output_shape().num_pixels() values of `dtype`
  // at `dst`, in `layout` (uint8: not normalised, rounded to the nearest level). `rng` is the
  // sample's own generator. `name` names the sample in errors (a path, a member). Throws DataError
  // for a sample that cannot be made.
  virtual void run(std::span<const uint8_t> bytes, const std::string& name, SplitMix64& rng, ImageLayout layout,
                   ImageDtype dtype, void* dst) const = 0;
};

}  // namespace feeder
