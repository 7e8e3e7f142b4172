#include "feeder/torch/adapter.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "feeder/error.h"

namespace feeder {
namespace {

std::shared_ptr<ImageStore> store_of(int64_t num_images, ImageShape shape) {
  auto store = std::make_shared<ImageStore>(shape, num_images, true);
  for (int64_t i = 0; i < num_images; ++i) {
    store->labels()[static_cast<size_t>(i)] = i % 10;
    for (int64_t p = 0; p < shape.num_pixels(); ++p) store->image(i)[p] = static_cast<uint8_t>((3 * i + p) % 256);
  }
  return store;
}

LoaderOptions sequential(int64_t batch_size) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.shuffle = false;
  options.num_workers = 2;
  return options;
}

TEST(ToTensors, WrapsTheBatchBufferWithoutCopying) {
  auto store = store_of(10, {1, 28, 28});
  Loader loader(store, sequential(4));
  loader.start_epoch(0);
  std::optional<Batch> batch = loader.next();
  ASSERT_TRUE(batch);
  TensorBatch tensors = to_tensors(*batch);
  EXPECT_EQ(tensors.images.data_ptr<float>(), batch->images());
  EXPECT_EQ(tensors.labels.data_ptr<int64_t>(), batch->labels());
  EXPECT_EQ(tensors.images.sizes(), (std::vector<int64_t>{4, 1, 28, 28}));
  EXPECT_EQ(tensors.labels.sizes(), (std::vector<int64_t>{4}));
  EXPECT_EQ(tensors.images.dtype(), torch::kFloat32);
  EXPECT_EQ(tensors.labels.dtype(), torch::kInt64);
  EXPECT_TRUE(tensors.images.is_contiguous());
}

TEST(ToTensors, ValuesMatchTheStore) {
  auto store = store_of(6, {1, 5, 5});
  Loader loader(store, sequential(6));
  loader.start_epoch(0);
  TensorBatch tensors = to_tensors(*loader.next());
  torch::Tensor expected =
      torch::from_blob(store->pixels().data(), {6, 1, 5, 5}, torch::kUInt8).to(torch::kFloat32) / 255.0;
  EXPECT_TRUE(torch::allclose(tensors.images, expected));
  EXPECT_EQ(tensors.labels[5].item<int64_t>(), 5);
}

TEST(ToTensors, Uint8BatchesAreUint8TensorsOfTheStoredPixels) {
  auto store = store_of(6, {3, 4, 5});
  for (const ImageLayout layout : {ImageLayout::kNchw, ImageLayout::kNhwc}) {
    LoaderOptions options = sequential(6);
    options.dtype = ImageDtype::kUint8;
    options.layout = layout;
    Loader loader(store, options);
    loader.start_epoch(0);
    std::optional<Batch> batch = loader.next();
    ASSERT_TRUE(batch);
    TensorBatch tensors = to_tensors(*batch);
    EXPECT_EQ(tensors.images.dtype(), torch::kUInt8);
    EXPECT_EQ(tensors.images.data_ptr<uint8_t>(), batch->images_u8());
    EXPECT_EQ(tensors.images.sizes(), (std::vector<int64_t>{6, 3, 4, 5}));
    EXPECT_EQ(tensors.images.is_contiguous(at::MemoryFormat::ChannelsLast), layout == ImageLayout::kNhwc);
    EXPECT_TRUE(torch::equal(tensors.images, torch::from_blob(store->pixels().data(), {6, 3, 4, 5}, torch::kUInt8)));
  }
}

TEST(ToTensors, TensorsOutliveBatchAndLoader) {
  auto store = store_of(8, {1, 2, 2});
  torch::Tensor images;
  torch::Tensor labels;
  {
    Loader loader(store, sequential(8));
    loader.start_epoch(0);
    TensorBatch tensors = to_tensors(*loader.next());
    images = tensors.images;
    labels = tensors.labels;
  }
  EXPECT_FLOAT_EQ(images[7][0][0][1].item<float>(), static_cast<float>((3 * 7 + 1) % 256) / 255.0f);
  EXPECT_EQ(labels[7].item<int64_t>(), 7);
}

TEST(ToTensors, NhwcBatchesAreChannelsLastTensors) {
  auto store = store_of(2, {3, 4, 4});
  LoaderOptions options = sequential(2);
  options.layout = ImageLayout::kNhwc;
  Loader loader(store, options);
  loader.start_epoch(0);
  TensorBatch tensors = to_tensors(*loader.next());
  EXPECT_TRUE(tensors.images.is_contiguous(torch::MemoryFormat::ChannelsLast));
  torch::Tensor expected =
      torch::from_blob(store->pixels().data(), {2, 3, 4, 4}, torch::kUInt8).to(torch::kFloat32) / 255.0;
  EXPECT_TRUE(torch::allclose(tensors.images, expected));
}

TEST(TensorLoader, PinnedOnlyWithCuda) {
  auto store = store_of(4, {1, 2, 2});
  TensorLoader loader(store, sequential(2));
  EXPECT_EQ(loader.loader().pinned(), torch::cuda::is_available());
  loader.start_epoch(0);
  int64_t batches = 0;
  while (auto tensors = loader.next()) ++batches;
  EXPECT_EQ(batches, 2);
}

}  // namespace
}  // namespace feeder

namespace feeder {
namespace {

// Batches of 4 on 2 workers.
LoaderOptions four_a_batch() {
  LoaderOptions options;
  options.batch_size = 4;
  options.num_workers = 2;
  return options;
}

// A value field reaches LibTorch as a tensor of its type over the batch's buffer, named.
TEST(ToTensors, ValueFieldsAreNamedTensorsOfTheirType) {
  constexpr int64_t kSamples = 10;
  auto store = std::make_shared<ImageStore>(ImageShape{1, 2, 2}, kSamples, true);
  std::vector<float> weights(kSamples);
  for (int64_t i = 0; i < kSamples; ++i) {
    store->image(i)[0] = static_cast<uint8_t>(i);
    weights[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i) + 1.0f;
  }
  std::vector<uint8_t> bytes(kSamples * sizeof(float));
  std::memcpy(bytes.data(), weights.data(), bytes.size());
  auto source = std::make_shared<InMemorySource>(store, "weighted", std::vector<int64_t>{}, std::nullopt,
                                                 std::vector<FieldValues>{{{"weight", FieldType::kFloat32, {}}, bytes, {}}});
  EXPECT_EQ(to_string(source->schema()), "image: uint8[1,2,2], label: int64, weight: float32");
  TensorLoader loader(source, four_a_batch());
  int64_t seen = 0;
  for (TensorBatch& batch : loader.epoch(1)) {
    ASSERT_EQ(batch.values.size(), 1u);
    const torch::Tensor& weight = batch.values.at("weight");
    EXPECT_EQ(weight.scalar_type(), torch::kFloat32);
    EXPECT_EQ(weight.sizes(), batch.labels.sizes());
    // Each row's weight is its sample's: the first pixel (i / 255 as float) names the sample.
    const torch::Tensor samples = torch::round(batch.images.flatten(1).select(1, 0) * 255).to(torch::kInt64);
    EXPECT_TRUE(torch::equal(weight, samples.to(torch::kFloat32) * 0.5 + 1.0)) << weight << samples;
    seen += weight.size(0);
  }
  EXPECT_EQ(seen, kSamples);
}

// A sequence field reaches LibTorch as its values back to back and the offsets of each row's.
TEST(ToTensors, ASequenceFieldIsItsValuesAndOffsets) {
  constexpr int64_t kSamples = 10;
  auto store = std::make_shared<ImageStore>(ImageShape{1, 2, 2}, kSamples, true);
  // Sample i: i % 3 values, i * 10 + k.
  FieldValues tokens{{"tokens", FieldType::kInt64, {kAnyLength}}, {}, {}};
  std::vector<int64_t> values;
  for (int64_t i = 0; i < kSamples; ++i) {
    store->image(i)[0] = static_cast<uint8_t>(i);
    for (int64_t k = 0; k < i % 3; ++k) values.push_back(i * 10 + k);
    tokens.ends.push_back(static_cast<int64_t>(values.size()));
  }
  tokens.bytes.resize(values.size() * sizeof(int64_t));
  std::memcpy(tokens.bytes.data(), values.data(), tokens.bytes.size());
  auto source = std::make_shared<InMemorySource>(store, "tokens", std::vector<int64_t>{}, std::nullopt,
                                                 std::vector<FieldValues>{tokens});
  EXPECT_EQ(to_string(source->schema()), "image: uint8[1,2,2], label: int64, tokens: int64[*]");
  TensorLoader loader(source, four_a_batch());
  int64_t seen = 0;
  for (TensorBatch& batch : loader.epoch(1)) {
    const torch::Tensor& all = batch.values.at("tokens");
    const torch::Tensor& offsets = batch.offsets.at("tokens");
    ASSERT_EQ(offsets.size(0), batch.labels.size(0) + 1);
    ASSERT_EQ(offsets[-1].item<int64_t>(), all.size(0));
    const torch::Tensor samples = torch::round(batch.images.flatten(1).select(1, 0) * 255).to(torch::kInt64);
    for (int64_t r = 0; r < batch.labels.size(0); ++r) {
      const int64_t i = samples[r].item<int64_t>();
      const torch::Tensor row = all.slice(0, offsets[r].item<int64_t>(), offsets[r + 1].item<int64_t>());
      EXPECT_TRUE(torch::equal(row, torch::arange(i % 3) + i * 10)) << "sample " << i << ": " << row;
    }
    seen += batch.labels.size(0);
  }
  EXPECT_EQ(seen, kSamples);
  // Ends that do not add up to the values are refused by name.
  tokens.ends.back() = 5;
  EXPECT_THROW(InMemorySource(store, "tokens", {}, std::nullopt, {tokens}), OptionsError);
}

}  // namespace
}  // namespace feeder
