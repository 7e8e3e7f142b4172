#pragma once

#include <filesystem>

#include "feeder/store/image_store.h"

namespace feeder {

// Reads an IDX image file (MNIST format, magic 0x00000803, dims N,H,W, raw or .gz) and, when
// `labels_path` is not empty, its IDX label file (magic 0x00000801, dim N), into a store of shape
// (N,1,H,W). Without labels every label is kNoLabel. Throws DataError naming the file and the byte
// offset on a wrong magic, a size that does not match the dims, or absurd dims.
ImageStore read_idx(const std::filesystem::path& images_path, const std::filesystem::path& labels_path = {});

}  // namespace feeder
