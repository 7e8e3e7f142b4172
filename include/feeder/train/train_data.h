#pragma once

// The two image sets a training run reads, loaded and checked once for `feeder train` and the
// ablation's rows alike. No LibTorch here.
// Thread safety: no state between calls. Ownership: the stores are shared_ptr<const ImageStore>,
// read by any number of loaders and threads.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "feeder/data/source.h"
#include "feeder/dataset/dataset.h"
#include "feeder/store/image_store.h"

namespace feeder {

struct TrainTestStores {
  std::filesystem::path train_path;
  std::filesystem::path test_path;
  std::shared_ptr<const ImageStore> train;  // images: (N,C,H,W) uint8, read-only and shared
  std::shared_ptr<const ImageStore> test;
};

// Loads both files and checks what training SimpleCNN needs: the same image shape in both, the
// model's input shape (`model_shape`), and labels in the training set when `require_labels`.
// Throws DataError naming the file and both shapes otherwise.
TrainTestStores load_train_test(const std::filesystem::path& train_path, const std::filesystem::path& test_path,
                                const ImageShape& model_shape, bool require_labels = true);

struct TrainTestSets {
  Dataset train;
  Dataset test;
};

// Opens the two sets of a training run, each as open_dataset does (image_stage_for decodes encoded
// images), within shares of one `memory_budget`. Shares: the test set a quarter of the budget and the training set the rest;
// a set read into memory hands what it does not use to the other. Checks what load_train_test
// checks (shapes, labels). Throws DataError naming the set. `piece_bytes`: the training set's
// DatasetOptions::piece_bytes (the test set is read in its order, with the default pieces).
TrainTestSets open_train_test(const std::string& train_spec, const std::string& test_spec,
                              const ImageShape& model_shape, int64_t memory_budget, bool require_labels = true,
                              int64_t piece_bytes = 0);

// The most classes `feeder train` builds a model for (--num-classes and classes_needed alike).
inline constexpr int64_t kMaxClasses = int64_t{1} << 20;

// The outputs a classifier of these sets needs: their class names' count, or their largest label
// plus one where that is known without reading samples (a set in memory, Parquet statistics of
// the label column, tar shards' labels); at least the article's 10. Throws DataError, naming the
// set and a sample, for a label over kMaxClasses - 1: labels are class indices, and a model sized
// by such a value would take gigabytes (or overflow) before training began. A label found later
// outside it is an error of the training loop (Trainer::run_epoch), not a crash.
int64_t classes_needed(const TrainTestSets& sets);

// The sample stage that turns `source`'s encoded images into the model's input: each image decoded
// into model_shape's channels and resized whole to its height and width (a copy for images of that
// size), scaled to [0, 1] as the loader scales pixels. nullptr for a source of pixels.
std::shared_ptr<const SampleStage> image_stage_for(const SampleSource& source, const ImageShape& model_shape);

}  // namespace feeder
