// The library leaves the process alone: loading data and training a few steps changes neither the
// environment nor glibc's malloc settings. (The `feeder` executable applies its recommended
// settings itself, src/app/include/app/process_setup.h; tests/library_symbols_test.sh checks the
// archives too.)

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "feeder/store/image_store.h"
#include "feeder/system/runtime.h"
#include "feeder/torch/adapter.h"
#include "feeder/train/simple_cnn.h"
#include "feeder/train/trainer.h"

extern char** environ;

namespace {

// mallopt calls made by anything in this process, counted here and passed on to glibc: a definition
// in the executable takes the place of glibc's for every caller that links to it dynamically or
// statically (feeder's archives, LibTorch).
std::atomic<int> num_mallopt_calls{0};

}  // namespace

extern "C" int mallopt(int param, int value) {
  num_mallopt_calls.fetch_add(1);
  using Mallopt = int (*)(int, int);
  static const auto real_mallopt = reinterpret_cast<Mallopt>(::dlsym(RTLD_NEXT, "mallopt"));
  return real_mallopt != nullptr ? real_mallopt(param, value) : 0;
}

namespace feeder {
namespace {

std::vector<std::string> environment() {
  std::vector<std::string> variables;
  for (char** entry = environ; *entry != nullptr; ++entry) variables.emplace_back(*entry);
  return variables;
}

TEST(Library, TrainingLeavesEnvironmentAndMallocSettingsAlone) {
  const std::vector<std::string> before = environment();
  const int mallopt_calls_before = num_mallopt_calls.load();

  // What a program embedding feeder does: ask for advice, build a store and a loader, train.
  const ProcessSettings advice = recommended_process_settings(2);
  EXPECT_EQ(advice.omp_num_threads, 2);
  auto store = std::make_shared<ImageStore>(ImageShape{1, 28, 28}, 64, true);
  for (int64_t idx = 0; idx < store->size(); ++idx) store->labels()[static_cast<size_t>(idx)] = idx % 10;
  std::span<uint8_t> pixels = store->pixels();
  for (size_t pixel = 0; pixel < pixels.size(); ++pixel) pixels[pixel] = static_cast<uint8_t>(pixel * 7 % 251);
  LoaderOptions options;
  options.batch_size = 16;
  options.num_workers = 2;
  TensorLoader loader(store, options);
  TrainerConfig config;
  config.device = torch::kCPU;
  config.precision = Precision::kFp32;
  Trainer trainer(make_simple_cnn(42), config);
  int64_t num_steps = 0;
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    trainer.train_step(batch->images, batch->labels);
    ++num_steps;
  }
  EXPECT_EQ(num_steps, 4);

  EXPECT_EQ(environment(), before);
  EXPECT_EQ(num_mallopt_calls.load(), mallopt_calls_before);
}

}  // namespace
}  // namespace feeder
