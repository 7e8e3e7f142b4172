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

// One set of a training run as `feeder train --train X --test Y` opens it: in memory or streamed.
struct OpenedSet {
  std::string spec;  // the file, directory or glob given
  std::shared_ptr<const SampleSource> source;
  bool streaming = false;
  int64_t memory_budget = 0;  // the share of the budget this set's loader gets when streaming
  int64_t decoded_bytes = 0;
  int64_t num_files = 1;
  int64_t num_row_groups = 0;  // Parquet sets only
  // Label i is classes[i]: an image folder's class folders, or the names of a Hugging Face
  // ClassLabel stored with a Parquet set (its first shard's footer). Empty when the set names none.
  std::vector<std::string> classes;
  // "in memory (47.0 MiB decoded)" or "streaming: 47.0 MiB decoded > 12.0 MiB budget".
  std::string choice;
  // What a user should be warned of ("" if nothing): files listed that could not be read.
  std::string warning;
};

// Opens one set as open_train_test does, with all of `memory_budget` for it: IDX and CSV files in
// memory, a Parquet set in memory when its decoded size fits the budget, streamed within it
// otherwise. Throws DataError naming the set.
OpenedSet open_set(const std::string& spec, int64_t memory_budget);

struct TrainTestSets {
  OpenedSet train;
  OpenedSet test;
};

// Opens the two sets of a training run. Each is a file (IDX, CSV or Parquet), a directory of
// Parquet shards, a glob of Parquet files, or a folder of images in torchvision's ImageFolder
// layout (held encoded, within the budget; image_stage_for decodes them). IDX and CSV files are read into memory; a Parquet set
// is read into memory when its decoded size fits its share of `memory_budget`, and streamed within
// that share otherwise. Shares: the test set a quarter of the budget and the training set the rest;
// a set read into memory hands what it does not use to the other. Checks what load_train_test
// checks (shapes, labels). Throws DataError naming the set.
TrainTestSets open_train_test(const std::string& train_spec, const std::string& test_spec,
                              const ImageShape& model_shape, int64_t memory_budget, bool require_labels = true);

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
