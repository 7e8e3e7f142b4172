#pragma once

// Reading image sets from IDX files (the MNIST format), raw or gzipped.
//
// Thread safety: no state is kept between calls: any thread may call these, concurrently too.
// Ownership: the ImageStore returned owns its pixels and labels; the byte views are only read.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "feeder/store/image_store.h"

namespace feeder {

// Reads an IDX image file (MNIST format, magic 0x00000803, dims N,H,W, raw or .gz) and, when
// `labels_path` is not empty, its IDX label file (magic 0x00000801, dim N), into a store of shape
// (N,1,H,W). Without labels every label is kNoLabel. Throws DataError naming the file and the byte
// offset on a wrong magic, a size that does not match the dims, or absurd dims.
ImageStore read_idx(const std::filesystem::path& images_path, const std::filesystem::path& labels_path = {});

// In-memory forms of read_idx, on already inflated bytes; `*_name` is used in error messages. The
// file reader is a thin wrapper around these, so fuzzing them covers every check it makes.
ImageStore read_idx_bytes(std::span<const uint8_t> images, const std::string& images_name);
ImageStore read_idx_bytes(std::span<const uint8_t> images, const std::string& images_name,
                          std::span<const uint8_t> labels, const std::string& labels_name);

}  // namespace feeder
