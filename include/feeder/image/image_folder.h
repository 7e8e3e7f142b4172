#pragma once

// A directory in torchvision's ImageFolder layout (root/<class>/.../<image>), read into memory as
// encoded images with the labels torchvision gives them: classes are the sorted names of root's
// subdirectories, indexed from 0; each class's files are taken as os.walk sorted by directory and
// then by name, as torchvision's make_dataset does. Files without an image extension are skipped, as
// torchvision skips them, and counted; so are images of formats feeder does not decode (.bmp, .ppm,
// .pgm, .tif, .tiff), which torchvision would include.
//
// Thread safety: a function; the files are read on `num_threads` threads.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "feeder/image/encoded_source.h"

namespace feeder {

struct ImageFolder {
  std::shared_ptr<const EncodedImageSource> source;
  std::vector<std::string> classes;  // label i is classes[i]
  int64_t skipped_other = 0;         // files without an image extension
  int64_t skipped_unsupported = 0;   // images feeder does not decode (.bmp, .ppm, .pgm, .tif, .tiff)
};

// Throws DataError for a root that is missing or not a directory, one without class folders, a
// class folder without images (naming it), a file that cannot be read, or images whose encoded
// bytes exceed `memory_budget` (0: no limit).
ImageFolder open_image_folder(const std::filesystem::path& root, int num_threads = 0, int64_t memory_budget = 0);

// Whether `directory` looks like an image folder: it has subdirectories and no Parquet or IDX files
// of its own.
bool is_image_folder(const std::filesystem::path& directory);

}  // namespace feeder
