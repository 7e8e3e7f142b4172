// Checkpoints hold what a bitwise resume needs (model, optimizer, position) and nothing else: no
// generator's state is saved, and loading one leaves LibTorch's generators alone.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "feeder/train/checkpoint.h"
#include "feeder/train/simple_cnn.h"

namespace feeder {
namespace {

TEST(Checkpoint, RoundTripsModelAndOptimizerExactlyAndLeavesTheGeneratorsAlone) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("feeder-checkpoint-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto model = make_simple_cnn(3);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
  const torch::Tensor input = torch::ones({4, 1, 28, 28});
  const torch::Tensor target = torch::tensor({1, 2, 3, 4}, torch::kLong);
  for (int step = 0; step < 2; ++step) {
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(input), target).backward();
    optimizer.step();
  }
  CheckpointStore store(dir, 2);
  TrainingCheckpoint saved;
  saved.epoch = 2;
  saved.batches_done = 7;
  saved.global_step = 2;
  saved.loader_state = "{}";
  const std::filesystem::path file = store.save(*model, optimizer, saved);

  torch::serialize::InputArchive archive;
  archive.load_from(file.string());
  torch::Tensor ignored;
  EXPECT_FALSE(archive.try_read("cpu_generator", ignored)) << "a checkpoint holds a generator it does not need";

  auto restored = make_simple_cnn(99);
  torch::optim::Adam restored_optimizer(restored->parameters(), torch::optim::AdamOptions(1e-3));
  torch::manual_seed(5);
  const torch::Tensor before = torch::rand({8});
  torch::manual_seed(5);
  const auto loaded = store.load_newest(*restored, restored_optimizer, nullptr);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->first.batches_done, 7);
  EXPECT_TRUE(torch::equal(torch::rand({8}), before)) << "loading a checkpoint moved the global generator";
  const auto a = model->parameters();
  const auto b = restored->parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i;
  // One more identical step on each gives identical parameters: Adam's moments came back too.
  for (auto* pair : {&optimizer, &restored_optimizer}) pair->zero_grad();
  torch::nn::functional::cross_entropy(model->forward(input), target).backward();
  torch::nn::functional::cross_entropy(restored->forward(input), target).backward();
  optimizer.step();
  restored_optimizer.step();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i << " after a step";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace feeder
