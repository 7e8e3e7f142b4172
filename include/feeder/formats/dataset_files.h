#pragma once

// Picking a reader by file name, and finding the train or test file in a directory.
//
// Thread safety: no state is kept between calls: any thread may call these, concurrently too.
// Ownership: the ImageStore returned owns its pixels and labels.

#include <filesystem>
#include <string>
#include <string_view>

#include "feeder/store/image_store.h"

namespace feeder {

enum class Split { kTrain, kTest };

// Loads an image file by its kind: `.csv`, `.parquet`, or IDX (`*-images-idx3-ubyte[.gz]`, whose
// labels are read from the `*-labels-idx1-ubyte[.gz]` file beside it when present).
ImageStore load_images(const std::filesystem::path& file);

// IDX: whether `name` is an images file's (*-images-idx3-ubyte[.gz]); the labels file's path beside
// such a file, without .gz; and the labels file found there, raw or .gz (the images' compression
// first), empty when there is none (the set is then unlabeled).
bool is_idx_images_name(std::string_view name);
std::filesystem::path idx_labels_name(const std::filesystem::path& images);
std::filesystem::path find_idx_labels(const std::filesystem::path& images);
// Finds the file of `split` in a directory: IDX (train-images-idx3-ubyte[.gz] / t10k-...),
// train.csv / test.csv, train.parquet / test.parquet (also Kaggle's *_train.csv names).
// Throws DataError listing what was looked for when nothing matches.
std::filesystem::path find_split_file(const std::filesystem::path& dir, Split split);

}  // namespace feeder
