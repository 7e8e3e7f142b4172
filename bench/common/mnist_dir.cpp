#include "common/mnist_dir.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "feeder/error.h"
#include "feeder/io/file.h"

namespace feeder::bench {
namespace {

void put_be32(std::string& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((value >> shift) & 0xff));
}

}  // namespace

void write_mnist_dir(const ImageStore& store, const std::filesystem::path& dir, Split split) {
  constexpr int64_t kMaxCount = std::numeric_limits<uint32_t>::max();
  if (store.size() > kMaxCount || store.shape().height > kMaxCount || store.shape().width > kMaxCount) {
    throw DataError(dir.string() + ": " + std::to_string(store.size()) + " images of " + to_string(store.shape()) +
                    " do not fit IDX's 32-bit counts");
  }
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  std::string images;
  images.reserve(16 + store.pixels().size());
  put_be32(images, 0x00000803);
  put_be32(images, static_cast<uint32_t>(store.size()));
  put_be32(images, static_cast<uint32_t>(store.shape().height));
  put_be32(images, static_cast<uint32_t>(store.shape().width));
  images.append(reinterpret_cast<const char*>(store.pixels().data()), store.pixels().size());
  write_file_atomically(dir / (prefix + "-images-idx3-ubyte"), images);
  std::string labels;
  labels.reserve(8 + static_cast<size_t>(store.size()));
  put_be32(labels, 0x00000801);
  put_be32(labels, static_cast<uint32_t>(store.size()));
  for (int64_t label : store.labels()) labels.push_back(static_cast<char>(std::max<int64_t>(label, 0)));
  write_file_atomically(dir / (prefix + "-labels-idx1-ubyte"), labels);
}

TemporaryMnistDir::TemporaryMnistDir(const ImageStore& train, const ImageStore* test) {
  char dir_template[] = "/tmp/feeder-mnist-XXXXXX";
  if (!mkdtemp(dir_template)) throw DataError("cannot create a temporary directory in /tmp");
  path_ = dir_template;
  try {
    write_mnist_dir(train, path_, Split::kTrain);
    if (test) write_mnist_dir(*test, path_, Split::kTest);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
    throw;
  }
}

TemporaryMnistDir::~TemporaryMnistDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace feeder::bench
