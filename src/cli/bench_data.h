#pragma once

// Data preparation shared by the benchmarks. No LibTorch here.

#include <filesystem>

#include "feeder/formats/dataset_files.h"
#include "feeder/store/image_store.h"

namespace feeder::cli {

// Writes `store` as the uncompressed IDX pair torch::data's MNIST dataset reads from a directory:
// train-{images-idx3,labels-idx1}-ubyte for Split::kTrain, t10k-... for Split::kTest. Labels of an
// unlabeled store are written as 0 (IDX has no "missing"). Throws DataError when the store is too
// large for IDX's 32-bit counts.
void write_mnist_dir(const ImageStore& store, const std::filesystem::path& dir, Split split = Split::kTrain);

}  // namespace feeder::cli
