#include "feeder/image/encoded_source.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "feeder/error.h"

namespace feeder {

EncodedImageSource::EncodedImageSource(std::string name, std::vector<uint8_t> bytes, std::vector<int64_t> offsets,
                                       std::vector<int64_t> labels, std::vector<std::string> names, bool labeled)
    : name_(std::move(name)),
      bytes_(std::move(bytes)),
      offsets_(std::move(offsets)),
      labels_(std::move(labels)),
      names_(std::move(names)),
      labeled_(labeled),
      schema_(image_schema({0, 0, 0}, true, labeled)) {
  if (offsets_.size() != labels_.size() + 1 || names_.size() != labels_.size() || offsets_.front() != 0 ||
      offsets_.back() != static_cast<int64_t>(bytes_.size()))
    throw OptionsError(name_ + ": encoded samples need one offset more than labels and names, from 0 to the bytes' end");
  block_starts_ = {0, size()};
}

uint64_t EncodedImageSource::fingerprint() const {
  std::call_once(fingerprint_once_, [this] {
    XXH3_state_t* state = XXH3_createState();
    if (!state) throw std::bad_alloc();
    XXH3_64bits_reset(state);
    const int64_t header[] = {size(), labeled_ ? 1 : 0, 0x656e636f646564};  // "encoded"
    XXH3_64bits_update(state, header, sizeof(header));
    XXH3_64bits_update(state, offsets_.data(), offsets_.size() * sizeof(int64_t));
    XXH3_64bits_update(state, bytes_.data(), bytes_.size());
    XXH3_64bits_update(state, labels_.data(), labels_.size() * sizeof(int64_t));
    fingerprint_ = XXH3_64bits_digest(state);
    XXH3_freeState(state);
  });
  return fingerprint_;
}

SampleView EncodedImageSource::sample(int64_t i) const {
  const auto at = static_cast<size_t>(i);
  return {std::span<const uint8_t>(bytes_.data() + offsets_[at], static_cast<size_t>(offsets_[at + 1] - offsets_[at])),
          labels_[at]};
}

void EncodedImageSource::read_blocks(std::span<const int64_t> blocks, std::vector<uint8_t>&,
                                     std::span<const BlockBuffers> out) const {
  for (size_t b = 0; b < blocks.size(); ++b) {
    const int64_t first = block_starts_.at(static_cast<size_t>(blocks[b]));
    const int64_t last = block_starts_[static_cast<size_t>(blocks[b]) + 1];
    const int64_t begin = offsets_[static_cast<size_t>(first)];
    const int64_t bytes = offsets_[static_cast<size_t>(last)] - begin;
    if (bytes > out[b].capacity)
      throw OptionsError(name_ + ": block " + std::to_string(blocks[b]) + " holds " + std::to_string(bytes) +
                         " bytes, more than the " + std::to_string(out[b].capacity) + " given");
    std::memcpy(out[b].payload, bytes_.data() + begin, static_cast<size_t>(bytes));
    for (int64_t i = first; i < last; ++i) {
      out[b].ends[i - first] = offsets_[static_cast<size_t>(i) + 1] - begin;
      out[b].labels[i - first] = labels_[static_cast<size_t>(i)];
    }
  }
}

uint8_t* EncodedImagesBuilder::add(int64_t size, int64_t label, std::string name) {
  bytes_.resize(bytes_.size() + static_cast<size_t>(size));
  offsets_.push_back(static_cast<int64_t>(bytes_.size()));
  labels_.push_back(label);
  names_.push_back(std::move(name));
  return bytes_.data() + bytes_.size() - size;
}

std::shared_ptr<const EncodedImageSource> EncodedImagesBuilder::finish(std::string name, bool labeled) {
  auto images = std::make_shared<EncodedImageSource>(std::move(name), std::move(bytes_), std::move(offsets_),
                                                     std::move(labels_), std::move(names_), labeled);
  bytes_.clear();
  offsets_.assign(1, 0);
  labels_.clear();
  names_.clear();
  return images;
}

}  // namespace feeder
