#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "feeder/error.h"
#include "feeder/store/image_store.h"
#include "feeder/torch/adapter.h"
#include "feeder/train/simple_cnn.h"
#include "feeder/train/trainer.h"
#include "torch/libtorch_compat.h"

namespace feeder {
namespace {

TrainerConfig cpu_config(Precision precision, bool channels_last) {
  TrainerConfig config;
  config.device = torch::kCPU;
  config.precision = precision;
  config.channels_last = channels_last;
  return config;
}

// A fixed batch: images (B,1,28,28) in [0,1), labels (B) in 0..9.
struct FixedBatch {
  torch::Tensor images;
  torch::Tensor labels;
};
FixedBatch fixed_batch(int64_t batch_size, uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::rand({batch_size, 1, 28, 28}), torch::randint(0, 10, {batch_size}, torch::kLong)};
}

// Like fixed_batch, but learnable: noise plus a bright band of rows whose position is the label.
FixedBatch banded_batch(int64_t batch_size, uint64_t seed) {
  FixedBatch batch = fixed_batch(batch_size, seed);
  batch.images.mul_(0.3);
  for (int64_t idx = 0; idx < batch_size; ++idx) {
    const int64_t label = batch.labels[idx].item<int64_t>();
    batch.images[idx][0].narrow(0, 2 * label, 4).fill_(1.0);
  }
  return batch;
}

SimpleCNN seeded_model(uint64_t seed) { return make_simple_cnn(seed); }

void expect_same_parameters(const SimpleCNN& a, const SimpleCNN& b) {
  const auto a_params = a->named_parameters();
  const auto b_params = b->named_parameters();
  ASSERT_EQ(a_params.size(), b_params.size());
  for (const auto& item : a_params) {
    EXPECT_TRUE(torch::equal(item.value(), b_params[item.key()])) << item.key();
  }
}

TEST(MakeSimpleCnn, EqualsPyTorchsDefaultInitialisationAfterManualSeed) {
  torch::manual_seed(42);
  const SimpleCNN from_global = SimpleCNN();
  expect_same_parameters(make_simple_cnn(42), from_global);
}

TEST(MakeSimpleCnn, DependsOnlyOnTheSeed) {
  const SimpleCNN first = make_simple_cnn(7);
  torch::rand({100});  // the global generator moves on; the model must not follow it
  expect_same_parameters(make_simple_cnn(7), first);
  EXPECT_FALSE(torch::equal(make_simple_cnn(8)->fc1->weight, first->fc1->weight));
}

TEST(MakeSimpleCnn, LeavesTheGlobalGeneratorAsItWas) {
  torch::manual_seed(5);
  const torch::Tensor expected = torch::rand({8});
  torch::manual_seed(5);
  make_simple_cnn(42);
  EXPECT_TRUE(torch::equal(torch::rand({8}), expected));
}

TEST(SimpleCNN, HasThe206922ParametersOfTheArticle) {
  SimpleCNN model;
  EXPECT_EQ(count_parameters(*model), 206922);
  // Per layer: weights + biases.
  EXPECT_EQ(model->conv1->weight.numel() + model->conv1->bias.numel(), 16 * 9 + 16);
  EXPECT_EQ(model->conv2->weight.numel() + model->conv2->bias.numel(), 32 * 16 * 9 + 32);
  EXPECT_EQ(model->fc1->weight.numel() + model->fc1->bias.numel(), 1568 * 128 + 128);
  EXPECT_EQ(model->fc2->weight.numel() + model->fc2->bias.numel(), 128 * 10 + 10);
}

TEST(SimpleCNN, MapsABatchToTenLogitsPerImage) {
  SimpleCNN model;
  for (const int64_t batch_size : {1, 7, 64}) {
    const torch::Tensor logits = model->forward(torch::rand({batch_size, 1, 28, 28}));
    EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{batch_size, 10}));
    EXPECT_EQ(logits.scalar_type(), torch::kFloat);
  }
}

// The article's order (ReLU, then pooling), written out with the same layers.
torch::Tensor article_forward(SimpleCNN& model, torch::Tensor x) {
  x = torch::max_pool2d(torch::relu(model->conv1->forward(x)), 2, 2);
  x = torch::max_pool2d(torch::relu(model->conv2->forward(x)), 2, 2);
  x = torch::relu(model->fc1->forward(x.reshape({x.size(0), 32 * 7 * 7})));
  return model->fc2->forward(x);
}

TEST(SimpleCNN, PoolingBeforeReluIsTheArticlesFunctionAndGradient) {
  SimpleCNN model = seeded_model(3);
  // Centred input, so that many pre-activations are negative and ReLU matters.
  const torch::Tensor images = fixed_batch(16, 5).images - 0.5;
  const torch::Tensor ours = model->forward(images);
  const torch::Tensor article = article_forward(model, images);
  EXPECT_TRUE(torch::equal(ours, article));

  std::vector<torch::Tensor> ours_grads;
  ours.square().sum().backward();
  for (auto& parameter : model->parameters()) {
    ours_grads.push_back(parameter.grad().clone());
    parameter.mutable_grad().zero_();
  }
  article.square().sum().backward();
  const auto parameters = model->parameters();
  for (size_t idx = 0; idx < parameters.size(); ++idx) {
    EXPECT_TRUE(torch::allclose(ours_grads[idx], parameters[idx].grad(), 1e-6, 1e-7)) << "parameter " << idx;
  }
}

// A few steps on a fixed, learnable batch must drive its loss well down.
void expect_steps_reduce_loss(Precision precision, bool channels_last) {
  Trainer trainer(seeded_model(42), cpu_config(precision, channels_last));
  const FixedBatch batch = banded_batch(64, 7);
  std::vector<float> losses;
  for (int step = 0; step < 20; ++step) losses.push_back(trainer.train_step(batch.images, batch.labels).item<float>());
  EXPECT_GT(losses.front(), 2.0f);  // about ln(10) for an untrained model
  EXPECT_LT(losses.back(), 0.5f * losses.front());
  for (const float loss : losses) EXPECT_TRUE(std::isfinite(loss));
}

TEST(Trainer, AdamStepsOnAFixedBatchReduceTheLossInFp32) { expect_steps_reduce_loss(Precision::kFp32, false); }
TEST(Trainer, AdamStepsOnAFixedBatchReduceTheLossInBf16) { expect_steps_reduce_loss(Precision::kBf16, false); }
TEST(Trainer, AdamStepsOnAFixedBatchReduceTheLossInBf16ChannelsLast) {
  expect_steps_reduce_loss(Precision::kBf16, true);
}

TEST(Trainer, ChannelsLastConvertsConvolutionWeights) {
  Trainer trainer(seeded_model(42), cpu_config(Precision::kFp32, true));
  const torch::Tensor& weight = trainer.model()->conv2->weight;  // (32,16,3,3)
  EXPECT_TRUE(weight.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_FALSE(weight.is_contiguous());
  // Regression: a one-channel weight (conv1: 16x1x3x3) counts as channels-last contiguous in either
  // stride order; it must get the channels-last strides, else oneDNN runs conv1 in NCHW.
  const torch::Tensor& first = trainer.model()->conv1->weight;
  EXPECT_EQ(first.strides(), (std::vector<int64_t>{9, 1, 3, 1}));
  EXPECT_EQ(first.suggest_memory_format(), torch::MemoryFormat::ChannelsLast);
  EXPECT_EQ(trainer.config().image_layout(), ImageLayout::kNhwc);
}

TEST(Trainer, ChannelsLastAndNchwGiveTheSameLogits) {
  Trainer nchw(seeded_model(42), cpu_config(Precision::kFp32, false));
  Trainer channels_last(seeded_model(42), cpu_config(Precision::kFp32, true));
  const FixedBatch batch = fixed_batch(16, 3);
  const torch::Tensor expected = nchw.predict(batch.images);
  EXPECT_TRUE(torch::allclose(channels_last.predict(batch.images), expected, 1e-4, 1e-5));
  // Also for inputs that arrive with explicit channels-last strides.
  const torch::Tensor nhwc_images = batch.images.contiguous(torch::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(torch::allclose(channels_last.predict(nhwc_images), expected, 1e-4, 1e-5));
  // And after identical training steps.
  nchw.train_step(batch.images, batch.labels);
  channels_last.train_step(batch.images, batch.labels);
  EXPECT_TRUE(torch::allclose(channels_last.predict(batch.images), nchw.predict(batch.images), 1e-3, 1e-4));
}

TEST(Trainer, Bf16AutocastChangesTheArithmeticButNotTheAnswer) {
  Trainer fp32(seeded_model(42), cpu_config(Precision::kFp32, true));
  Trainer bf16(seeded_model(42), cpu_config(Precision::kBf16, true));
  const FixedBatch batch = fixed_batch(16, 3);
  const torch::Tensor reference = fp32.predict(batch.images);
  const torch::Tensor reduced = bf16.predict(batch.images);
  EXPECT_EQ(reduced.scalar_type(), torch::kFloat);
  EXPECT_FALSE(torch::equal(reduced, reference));  // bf16 really ran
  EXPECT_TRUE(torch::allclose(reduced, reference, 0.05, 0.05));
}

TEST(Trainer, LeavesAutocastOffAfterAStep) {
  Trainer trainer(seeded_model(42), cpu_config(Precision::kBf16, true));
  const FixedBatch batch = fixed_batch(8, 1);
  trainer.train_step(batch.images, batch.labels);
  trainer.predict(batch.images);
  EXPECT_FALSE(torch_compat::autocast_enabled(/*cuda=*/false));
  // Parameters and their gradients stay fp32 under autocast.
  for (const auto& parameter : trainer.model()->parameters()) {
    EXPECT_EQ(parameter.scalar_type(), torch::kFloat);
    EXPECT_EQ(parameter.grad().scalar_type(), torch::kFloat);
  }
}

TEST(ResolveTrainerOptions, AutoPicksBf16OnlyWithNativeCpuSupport) {
  TrainerOptions options;  // precision auto, device auto
  Hardware without_bf16;
  Hardware with_bf16;
  with_bf16.cpu_native_bf16 = true;
  EXPECT_EQ(resolve_trainer_options(options, without_bf16).precision, Precision::kFp32);
  EXPECT_EQ(resolve_trainer_options(options, with_bf16).precision, Precision::kBf16);
  EXPECT_TRUE(resolve_trainer_options(options, with_bf16).device.is_cpu());
}

TEST(ResolveTrainerOptions, ExplicitPrecisionIsKept) {
  TrainerOptions options;
  Hardware with_bf16;
  with_bf16.cpu_native_bf16 = true;
  options.precision = Precision::kFp32;
  EXPECT_EQ(resolve_trainer_options(options, with_bf16).precision, Precision::kFp32);
  options.precision = Precision::kBf16;
  EXPECT_EQ(resolve_trainer_options(options, Hardware{}).precision, Precision::kBf16);
}

TEST(ResolveTrainerOptions, AutoDeviceUsesCudaAndItsBf16Support) {
  TrainerOptions options;
  Hardware gpu;
  gpu.cpu_native_bf16 = true;
  gpu.cuda_available = true;
  gpu.cuda_bf16 = false;
  TrainerConfig config = resolve_trainer_options(options, gpu);
  EXPECT_TRUE(config.device.is_cuda());
  EXPECT_EQ(config.precision, Precision::kFp32);  // the CPU's bf16 does not matter on the GPU
  gpu.cuda_bf16 = true;
  EXPECT_EQ(resolve_trainer_options(options, gpu).precision, Precision::kBf16);
}

TEST(ResolveTrainerOptions, CudaWithoutAGpuIsAnOptionsError) {
  TrainerOptions options;
  options.device = DeviceChoice::kCuda;
  EXPECT_THROW(resolve_trainer_options(options, Hardware{}), OptionsError);
}

TEST(ParsePrecision, AcceptsTheThreeNamesAndRejectsOthers) {
  EXPECT_EQ(parse_precision("auto"), Precision::kAutomatic);
  EXPECT_EQ(parse_precision("fp32"), Precision::kFp32);
  EXPECT_EQ(parse_precision("bf16"), Precision::kBf16);
  EXPECT_THROW(parse_precision("fp16"), OptionsError);
  EXPECT_THROW(parse_device("tpu"), OptionsError);
}

// An ImageStore whose label is a function of the image: class k images are bright in row band k.
std::shared_ptr<ImageStore> banded_store(int64_t num_images, bool labeled) {
  auto store = std::make_shared<ImageStore>(ImageShape{}, num_images, labeled);
  for (int64_t idx = 0; idx < num_images; ++idx) {
    const int64_t label = idx % 10;
    uint8_t* image = store->image(idx);
    std::fill(image, image + 28 * 28, uint8_t{0});  // the store leaves pixels uninitialised
    for (int64_t row = 2 * label; row < 2 * label + 4; ++row) {
      for (int64_t col = 0; col < 28; ++col) image[row * 28 + col] = 255;
    }
    if (labeled) store->labels()[static_cast<size_t>(idx)] = label;
  }
  return store;
}

TEST(Trainer, RunEpochLearnsASeparableSetAndReportsTimings) {
  LoaderOptions loader_options;
  loader_options.batch_size = 50;
  loader_options.layout = ImageLayout::kNhwc;
  TensorLoader train(banded_store(1000, true), loader_options);
  loader_options.shuffle = false;
  TensorLoader test(banded_store(200, true), loader_options);
  Trainer trainer(seeded_model(42), cpu_config(Precision::kFp32, true));

  std::vector<BatchProgress> calls;
  EpochReport report;
  for (int64_t epoch = 1; epoch <= 3; ++epoch) {
    report = trainer.run_epoch(train, test, epoch, [&](const BatchProgress& p) { calls.push_back(p); });
  }
  EXPECT_EQ(report.epoch, 3);
  EXPECT_EQ(report.num_train_samples, 1000);
  EXPECT_EQ(report.num_test_samples, 200);
  ASSERT_TRUE(report.accuracy.has_value());
  EXPECT_GT(*report.accuracy, 0.9);
  EXPECT_GT(report.train_seconds, 0.0);
  EXPECT_GT(report.test_seconds, 0.0);
  EXPECT_GE(report.data_wait_seconds, 0.0);
  EXPECT_LE(report.data_wait_seconds, report.train_seconds);
  EXPECT_NEAR(report.samples_per_second, 1000 / report.train_seconds, 1e-6 * report.samples_per_second);
  EXPECT_EQ(calls.size(), 3u * (20 + 4));
  EXPECT_EQ(calls.back().phase, Phase::kTest);
  EXPECT_EQ(calls.back().batch_idx, 4);
  EXPECT_EQ(calls.back().num_batches, 4);
}

TEST(Trainer, UnlabeledTestSetReportsNoAccuracy) {
  LoaderOptions loader_options;
  loader_options.batch_size = 50;
  TensorLoader train(banded_store(100, true), loader_options);
  TensorLoader test(banded_store(60, false), loader_options);
  Trainer trainer(seeded_model(42), cpu_config(Precision::kFp32, false));
  const EpochReport report = trainer.run_epoch(train, test, 1);
  EXPECT_FALSE(report.accuracy.has_value());
  EXPECT_EQ(report.num_test_samples, 60);
}

TEST(Trainer, UnlabeledTrainingSetIsAnOptionsError) {
  LoaderOptions loader_options;
  TensorLoader train(banded_store(10, false), loader_options);
  TensorLoader test(banded_store(10, true), loader_options);
  Trainer trainer(seeded_model(42), cpu_config(Precision::kFp32, false));
  EXPECT_THROW(trainer.run_epoch(train, test, 1), OptionsError);
}

// A label the model has no output for is a DataError naming the pass, batch and label, in the
// training pass and in the test pass (LibTorch's loss would fail with a stack trace).
TEST(Trainer, LabelOutsideTheModelsClassesIsADataError) {
  const std::shared_ptr<ImageStore> wide = banded_store(100, true);
  wide->labels()[37] = 12;
  LoaderOptions loader_options;
  loader_options.batch_size = 50;
  loader_options.shuffle = false;
  {
    TensorLoader train(wide, loader_options);
    TensorLoader test(banded_store(50, true), loader_options);
    Trainer trainer(seeded_model(42), cpu_config(Precision::kFp32, false));
    try {
      trainer.run_epoch(train, test, 1);
      FAIL() << "no error";
    } catch (const DataError& e) {
      EXPECT_STREQ(e.what(), "training batch 1 of epoch 1: label 12 is outside the model's 10 classes (0..9)");
    }
  }
  {
    TensorLoader train(banded_store(50, true), loader_options);
    TensorLoader test(wide, loader_options);
    Trainer trainer(seeded_model(42), cpu_config(Precision::kFp32, false));
    EXPECT_THROW(trainer.run_epoch(train, test, 1), DataError);
  }
  // A model with 13 outputs trains on it.
  TensorLoader train(wide, loader_options);
  TensorLoader test(wide, loader_options);
  Trainer trainer(make_simple_cnn(42, 13), cpu_config(Precision::kFp32, false));
  EXPECT_EQ(trainer.run_epoch(train, test, 1).num_train_samples, 100);
}

}  // namespace
}  // namespace feeder
