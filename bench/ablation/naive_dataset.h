#pragma once

// The article's Dataset v1 written in C++ the way a newcomer to LibTorch would: a table of int64
// columns, as pandas returns it from read_csv, and a torch::data Dataset that converts one row per
// get(). Nothing here is slowed on purpose; it is the obvious translation of the Python code, and
// the ablation measures what that costs next to feeder's decode-once store.
//
// Included only by the row runner (it pulls in <torch/torch.h>).

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "feeder/error.h"
#include "feeder/store/image_store.h"

namespace feeder::bench {

// A DataFrame-like table: named int64 columns, each one contiguous (column-major, like pandas).
struct ColumnTable {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> columns;  // columns[c][row]

  int64_t num_rows() const { return columns.empty() ? 0 : static_cast<int64_t>(columns[0].size()); }
  // Index of the column called `name`, or -1.
  int64_t find(const std::string& name) const {
    for (size_t c = 0; c < names.size(); ++c) {
      if (names[c] == name) return static_cast<int64_t>(c);
    }
    return -1;
  }
};

// The table a CSV in Kaggle's layout (label, pixel1..pixelK) loads into; the label column is left
// out for an unlabeled store, as such a CSV has none.
inline ColumnTable column_table_from_store(const ImageStore& store) {
  ColumnTable table;
  const int64_t n = store.size();
  const int64_t num_pixels = store.shape().num_pixels();
  if (store.labeled()) {
    table.names.push_back("label");
    table.columns.emplace_back(store.labels().begin(), store.labels().end());
  }
  for (int64_t p = 0; p < num_pixels; ++p) {
    table.names.push_back("pixel" + std::to_string(p + 1));
    std::vector<int64_t> column(static_cast<size_t>(n));
    for (int64_t row = 0; row < n; ++row) column[static_cast<size_t>(row)] = store.image(row)[p];
    table.columns.push_back(std::move(column));
  }
  return table;
}

// Dataset v1: keeps the table, converts row `index` on every get(): gather the pixel columns into
// floats, make a tensor, scale by 1/255, reshape to (C,H,W); label as a 0-dim int64 tensor (-1
// when the table has no label column, as in the article). The table is shared, read-only, by the
// loader's worker threads.
class NaiveDataset : public torch::data::datasets::Dataset<NaiveDataset> {
 public:
  NaiveDataset(std::shared_ptr<const ColumnTable> table, ImageShape shape)
      : table_(std::move(table)), shape_(shape) {
    label_column_ = table_->find("label");
    for (size_t c = 0; c < table_->names.size(); ++c) {
      if (static_cast<int64_t>(c) != label_column_) feature_columns_.push_back(static_cast<int64_t>(c));
    }
    if (static_cast<int64_t>(feature_columns_.size()) != shape_.num_pixels()) {
      throw DataError("table has " + std::to_string(feature_columns_.size()) + " pixel columns, expected " +
                      std::to_string(shape_.num_pixels()) + " for " + to_string(shape_));
    }
  }

  torch::data::Example<> get(size_t index) override {
    const auto row = static_cast<size_t>(index);
    std::vector<float> pixels;
    pixels.reserve(feature_columns_.size());
    for (int64_t column : feature_columns_) {
      pixels.push_back(static_cast<float>(table_->columns[static_cast<size_t>(column)][row]));
    }
    torch::Tensor image = torch::tensor(pixels).reshape({shape_.channels, shape_.height, shape_.width}) / 255.0;
    const int64_t label = label_column_ >= 0 ? table_->columns[static_cast<size_t>(label_column_)][row] : -1;
    return {image, torch::tensor(label, torch::kLong)};
  }

  torch::optional<size_t> size() const override { return static_cast<size_t>(table_->num_rows()); }

 private:
  std::shared_ptr<const ColumnTable> table_;
  ImageShape shape_;
  int64_t label_column_ = -1;
  std::vector<int64_t> feature_columns_;
};

}  // namespace feeder::bench
