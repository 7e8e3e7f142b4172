#pragma once

// Data preparation shared by the benchmarks. No LibTorch here.

#include <filesystem>

#include "feeder/formats/dataset_files.h"
#include "feeder/store/image_store.h"

namespace feeder::bench {

// Writes `store` as the uncompressed IDX pair torch::data's MNIST dataset reads from a directory:
// train-{images-idx3,labels-idx1}-ubyte for Split::kTrain, t10k-... for Split::kTest. Labels of an
// unlabeled store are written as 0 (IDX has no "missing"). Throws DataError when the store is too
// large for IDX's 32-bit counts.
void write_mnist_dir(const ImageStore& store, const std::filesystem::path& dir, Split split = Split::kTrain);

// A fresh directory under /tmp holding `train` (and `test`, when given) for torch::data's MNIST
// dataset; removed, with its files, when this object is destroyed.
class TemporaryMnistDir {
 public:
  explicit TemporaryMnistDir(const ImageStore& train, const ImageStore* test = nullptr);
  ~TemporaryMnistDir();
  TemporaryMnistDir(const TemporaryMnistDir&) = delete;
  TemporaryMnistDir& operator=(const TemporaryMnistDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace feeder::bench
