#pragma once

// The two image sets a training run reads, loaded and checked once for `feeder train` and the
// ablation's rows alike. No LibTorch here.

#include <filesystem>
#include <memory>

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

}  // namespace feeder
