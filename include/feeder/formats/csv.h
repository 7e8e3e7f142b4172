#pragma once

#include <filesystem>
#include <optional>

#include "feeder/store/image_store.h"

namespace feeder {

struct CsvReadOptions {
  // Shape of one image; by default 1x28x28 for 784 pixel columns, 1xSxS for S*S columns.
  std::optional<ImageShape> shape;
  // Parsing threads; 0 = one per core.
  int num_threads = 0;
};

// Reads a CSV in the article's layout: `label,pixel1..pixelK` (a header row is optional). A header
// without a `label` column means an unlabeled set (labels kNoLabel). Values must be integers 0..255.
// Throws DataError naming the file, line and column on ragged rows, non-numeric or out-of-range values.
ImageStore read_csv(const std::filesystem::path& path, const CsvReadOptions& options = {});

// Writes `store` as CSV in the article's layout (`label,pixel1..pixelK` header, then one row per
// image; no label column when the store is unlabeled), atomically.
void write_csv(const ImageStore& store, const std::filesystem::path& path);

}  // namespace feeder
