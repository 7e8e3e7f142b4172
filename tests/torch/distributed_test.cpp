// Data-parallel training over c10d (TCPStore + ProcessGroupGloo) on loopback addresses only. The
// ranks of a test are threads of this process, each with its own ProcessGroup, model and loader;
// every wait is bounded by the group's timeout.

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "app/data_dir.h"
#include "feeder/error.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/torch/adapter.h"
#include "feeder/train/distributed.h"
#include "feeder/train/simple_cnn.h"
#include "feeder/train/trainer.h"
#include "torch/libtorch_compat.h"

namespace feeder {
namespace {

using std::chrono::milliseconds;

DistributedOptions rank_options(int rank, int world_size, int port, milliseconds timeout = milliseconds(20000)) {
  DistributedOptions options;
  options.rank = rank;
  options.world_size = world_size;
  options.master_port = port;
  options.timeout = timeout;
  return options;
}

// Runs body(rank) on world_size threads; rethrows the first rank's error, if any.
void run_ranks(int world_size, const std::function<void(int rank)>& body) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world_size));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        body(rank);
      } catch (...) {
        errors[static_cast<size_t>(rank)] = std::current_exception();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

// The message of what `body` throws, or "" when it throws nothing.
std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& error) {
    return error.what();
  }
  return "";
}

TEST(Distributed, AllreduceSumsAndBroadcastCopiesRankZeros) {
  const int port = free_loopback_port();
  std::vector<torch::Tensor> sums(3), broadcast(3);
  run_ranks(3, [&](int rank) {
    ProcessGroup group(rank_options(rank, 3, port));
    torch::Tensor sum = torch::full({5}, static_cast<float>(rank + 1));
    group.allreduce_sum(sum);
    sums[static_cast<size_t>(rank)] = sum;
    // Non-contiguous (channels-last) tensors come back with their values in place.
    std::vector<torch::Tensor> tensors{torch::full({2, 3, 2, 2}, static_cast<float>(rank)).contiguous(torch::MemoryFormat::ChannelsLast),
                                       torch::arange(4, torch::kFloat) * (rank + 1)};
    group.broadcast(tensors, 0);
    broadcast[static_cast<size_t>(rank)] = torch::cat({tensors[0].reshape(-1), tensors[1]});
    group.barrier();
  });
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_TRUE(torch::equal(sums[static_cast<size_t>(rank)], torch::full({5}, 6.0f)));
    EXPECT_TRUE(torch::equal(broadcast[static_cast<size_t>(rank)], torch::cat({torch::zeros({24}), torch::arange(4, torch::kFloat)})));
  }
}

// Each rank's gradient of sum(w * x_rank) is x_rank, so the average is the mean of the x's.
TEST(Distributed, GradientAveragerGivesTheMeanForAnyBucketingWithAndWithoutOverlap) {
  for (const int64_t bucket_bytes : {int64_t{0}, int64_t{64}, GradientAverager::kDefaultBucketBytes}) {
    for (const bool overlap : {true, false}) {
      SCOPED_TRACE("bucket bytes " + std::to_string(bucket_bytes) + (overlap ? ", overlapped" : ""));
      const int port = free_loopback_port();
      std::vector<std::vector<torch::Tensor>> grads(2);
      std::vector<int64_t> buckets(2);
      run_ranks(2, [&](int rank) {
        ProcessGroup group(rank_options(rank, 2, port));
        std::vector<torch::Tensor> parameters{torch::zeros({7}, torch::requires_grad()),
                                              torch::zeros({3, 5}, torch::requires_grad()),
                                              torch::zeros({40}, torch::requires_grad())};
        GradientAverager averager(group, parameters, bucket_bytes, overlap);
        buckets[static_cast<size_t>(rank)] = averager.num_buckets();
        for (int step = 0; step < 2; ++step) {  // the second step must not see the first's state
          for (torch::Tensor& parameter : parameters) parameter.mutable_grad() = torch::Tensor();
          averager.start_step();
          torch::Tensor loss = torch::zeros({});
          for (size_t k = 0; k < parameters.size(); ++k) {
            const torch::Tensor x = torch::full(parameters[k].sizes(), static_cast<float>((rank + 1) * (k + 1) + step));
            loss = loss + (parameters[k] * x).sum();
          }
          loss.backward();
          averager.finish();
        }
        for (const torch::Tensor& parameter : parameters) grads[static_cast<size_t>(rank)].push_back(parameter.grad().clone());
      });
      if (bucket_bytes == 0) {
        EXPECT_EQ(buckets[0], 3);
      }
      if (bucket_bytes == GradientAverager::kDefaultBucketBytes) {
        EXPECT_EQ(buckets[0], 1);
      }
      for (size_t k = 0; k < 3; ++k) {
        // Ranks 0 and 1 at step 1: (k+1)+1 and 2(k+1)+1; their mean is 1.5(k+1)+1.
        const float expected = 1.5f * static_cast<float>(k + 1) + 1.0f;
        EXPECT_TRUE(torch::allclose(grads[0][k], torch::full_like(grads[0][k], expected))) << grads[0][k];
        EXPECT_TRUE(torch::equal(grads[0][k], grads[1][k]));  // the same bits on every rank
      }
    }
  }
}

double relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).norm().item<double>() / b.norm().item<double>();
}

// Gradient accumulation. A step's global batch is 2k micro-batches of 8 synthetic images; rank r
// of 2 takes micro-batches r, r+2, r+4... Each micro-batch's loss is divided by the micro-batches
// its process sums, so the averaged gradients must be those of one rank over all 2k.
constexpr int kMicroStepsPerRank = 3;

torch::Tensor micro_batch_loss(SimpleCNN& model, int micro_batch_idx, int num_micro_batches) {
  const float shift = static_cast<float>(micro_batch_idx);
  const torch::Tensor images = torch::sin(torch::arange(8 * 28 * 28, torch::kFloat) * 0.37f + shift).view({8, 1, 28, 28});
  const torch::Tensor labels = (torch::arange(8, torch::kLong) * 7 + micro_batch_idx) % 10;
  return torch::cross_entropy_loss(model->forward(images), labels) / num_micro_batches;
}

torch::Tensor flat_gradients(SimpleCNN& model) {
  std::vector<torch::Tensor> flat;
  for (const torch::Tensor& parameter : model->parameters()) flat.push_back(parameter.grad().reshape(-1).clone());
  return torch::cat(flat);
}

// One rank, every micro-batch of the step, gradients accumulated by autograd.
torch::Tensor one_rank_accumulated_gradients(int num_micro_batches) {
  SimpleCNN model = make_simple_cnn(42);
  for (int j = 0; j < num_micro_batches; ++j) micro_batch_loss(model, j, num_micro_batches).backward();
  return flat_gradients(model);
}

// How a rank tells the averager which backward is the step's last.
enum class Accumulation {
  kNoSync,           // every backward but the last under no_sync(), finish() once
  kFinishEach,       // finish() after every backward
  kBackwardsThenFinish,  // nothing said: only correct without overlap (finish() reads .grad)
};

void expect_accumulation_matches_one_rank(Accumulation accumulation, const std::vector<bool>& overlaps) {
  const int num_micro_batches = 2 * kMicroStepsPerRank;
  const torch::Tensor expected = one_rank_accumulated_gradients(num_micro_batches);
  for (const int64_t bucket_bytes : {int64_t{0}, GradientAverager::kDefaultBucketBytes}) {
    for (const bool overlap : overlaps) {
      SCOPED_TRACE("bucket bytes " + std::to_string(bucket_bytes) + (overlap ? ", overlapped" : ""));
      const int port = free_loopback_port();
      std::vector<torch::Tensor> grads(2);
      run_ranks(2, [&](int rank) {
        ProcessGroup group(rank_options(rank, 2, port));
        SimpleCNN model = make_simple_cnn(42);
        GradientAverager averager(group, model->parameters(), bucket_bytes, overlap);
        for (int step = 0; step < 2; ++step) {  // the second step must not see the first's state
          for (torch::Tensor& parameter : model->parameters()) parameter.mutable_grad() = torch::Tensor();
          averager.start_step();
          for (int m = 0; m < kMicroStepsPerRank; ++m) {
            const bool last = m + 1 == kMicroStepsPerRank;
            std::optional<GradientAverager::NoSync> local;
            if (accumulation == Accumulation::kNoSync && !last) local.emplace(averager.no_sync());
            micro_batch_loss(model, 2 * m + rank, kMicroStepsPerRank).backward();
            if (accumulation == Accumulation::kFinishEach || last) averager.finish();
          }
        }
        grads[static_cast<size_t>(rank)] = flat_gradients(model);
      });
      EXPECT_TRUE(torch::equal(grads[0], grads[1]));  // the same bits on every rank
      const double difference = relative_difference(grads[0], expected);
      EXPECT_LE(difference, 1e-6);
      std::printf("relative difference to one rank's accumulated gradients: %.3g\n", difference);
    }
  }
  // The micro-batches matter: one rank's first micro-batch alone is far from the step's gradient.
  EXPECT_GT(relative_difference(one_rank_accumulated_gradients(1), expected), 1e-2);
}

TEST(Distributed, AccumulatingUnderNoSyncEqualsOneRankWithEveryMicroBatch) {
  expect_accumulation_matches_one_rank(Accumulation::kNoSync, {true, false});
}

TEST(Distributed, AccumulatingWithFinishAfterEachBackwardEqualsOneRankWithEveryMicroBatch) {
  expect_accumulation_matches_one_rank(Accumulation::kFinishEach, {true, false});
}

TEST(Distributed, AccumulatingWithoutOverlapNeedsNoNoSync) {
  expect_accumulation_matches_one_rank(Accumulation::kBackwardsThenFinish, {false});
}

// Overlapped, a second backward's gradient would come after its bucket's allreduce has left:
// refused by finish() on every rank, which can then go on with a correct step.
TEST(Distributed, ASecondBackwardOutsideNoSyncFailsFinishAndTheNextStepIsRight) {
  const int port = free_loopback_port();
  std::vector<std::string> errors(2);
  std::vector<torch::Tensor> after(2);
  run_ranks(2, [&](int rank) {
    ProcessGroup group(rank_options(rank, 2, port));
    std::vector<torch::Tensor> parameters{torch::zeros({7}, torch::requires_grad()),
                                          torch::zeros({3, 5}, torch::requires_grad())};
    GradientAverager averager(group, parameters, /*bucket_bytes=*/0);
    const auto backward = [&] {
      torch::Tensor loss = torch::zeros({});
      for (const torch::Tensor& parameter : parameters) loss = loss + (parameter * static_cast<float>(rank + 1)).sum();
      loss.backward();
    };
    averager.start_step();
    backward();
    backward();
    errors[static_cast<size_t>(rank)] = error_of([&] { averager.finish(); });
    for (torch::Tensor& parameter : parameters) parameter.mutable_grad() = torch::Tensor();
    averager.start_step();
    backward();
    averager.finish();
    after[static_cast<size_t>(rank)] = parameters[1].grad().clone();
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(errors[static_cast<size_t>(rank)],
              "rank " + std::to_string(rank) +
                  ": GradientAverager: a second backward reached parameter 0 before finish(); run every backward "
                  "but the step's last under no_sync(), or call finish() after each backward");
    EXPECT_TRUE(torch::equal(after[static_cast<size_t>(rank)], torch::full({3, 5}, 1.5f)));
  }
}

TrainerConfig fp32_config() {
  TrainerConfig config;
  config.device = torch::kCPU;
  config.precision = Precision::kFp32;
  config.channels_last = true;
  return config;
}

std::shared_ptr<const ImageStore> fashion_mnist(Split split) {
  const std::filesystem::path dir = cli::kDefaultDataDir;
  return std::make_shared<const ImageStore>(load_images(cli::find_data_split(dir, split)));
}

LoaderOptions loader_options(int64_t batch_size, int rank, int world_size, bool shuffle) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.seed = 7;
  options.shuffle = shuffle;
  options.num_workers = 1;
  options.layout = ImageLayout::kNhwc;
  options.rank = rank;
  options.world_size = world_size;
  return options;
}

// Trains `steps` steps (or the whole epoch when steps < 0, then tests) as rank `rank` of
// `world_size` ranks with `batch_size` each; returns the flattened parameters and the accuracy.
struct Trained {
  torch::Tensor parameters;
  double accuracy = 0;
};
Trained train(int rank, int world_size, int64_t batch_size, int64_t steps, ProcessGroup* group) {
  static const std::shared_ptr<const ImageStore> train_set = fashion_mnist(Split::kTrain);
  static const std::shared_ptr<const ImageStore> test_set = fashion_mnist(Split::kTest);
  Trainer trainer(make_simple_cnn(42), fp32_config());
  std::unique_ptr<GradientAverager> averager;
  if (group) {
    std::vector<torch::Tensor> parameters = trainer.model()->parameters();
    group->broadcast(parameters, 0);
    averager = std::make_unique<GradientAverager>(*group, trainer.model()->parameters());
    trainer.set_distributed(group, averager.get());
  }
  TensorLoader train_loader(train_set, loader_options(batch_size, rank, world_size, true));
  Trained result;
  if (steps < 0) {
    TensorLoader test_loader(test_set, loader_options(batch_size, rank, world_size, false));
    result.accuracy = trainer.run_epoch(train_loader, test_loader, 1).accuracy.value_or(-1);
  } else {
    train_loader.start_epoch(1);
    for (int64_t step = 0; step < steps; ++step) {
      std::optional<TensorBatch> batch = train_loader.next();
      trainer.train_step(batch->images, batch->labels);
    }
  }
  std::vector<torch::Tensor> flat;
  for (const torch::Tensor& parameter : trainer.model()->parameters()) flat.push_back(parameter.detach().reshape(-1));
  result.parameters = torch::cat(flat);
  return result;
}

// The equivalence: world size 2 x batch 256 sees the global batches of world size 1 x
// batch 512, so fp32 training reaches the same parameters (up to summation order).
TEST(Distributed, TwoRanksOfBatch256EqualOneOfBatch512After20Steps) {
  const Trained single = train(0, 1, 512, 20, nullptr);
  const int port = free_loopback_port();
  std::vector<Trained> ranks(2);
  run_ranks(2, [&](int rank) {
    ProcessGroup group(rank_options(rank, 2, port));
    ranks[static_cast<size_t>(rank)] = train(rank, 2, 256, 20, &group);
    group.barrier();
  });
  EXPECT_TRUE(torch::equal(ranks[0].parameters, ranks[1].parameters));  // the ranks stay in step
  const double difference = relative_difference(ranks[0].parameters, single.parameters);
  EXPECT_LE(difference, 1e-4);
  // And training moved them: the comparison is not between two untouched models.
  EXPECT_GT(relative_difference(train(0, 1, 512, 0, nullptr).parameters, single.parameters), 1e-2);
  std::printf("relative difference after 20 steps: %.3g\n", difference);
}

TEST(Distributed, TwoRanksReachTheSameTestAccuracyAfterAnEpochWithinAFifthOfAPoint) {
  const Trained single = train(0, 1, 512, -1, nullptr);
  const int port = free_loopback_port();
  std::vector<Trained> ranks(2);
  run_ranks(2, [&](int rank) {
    ProcessGroup group(rank_options(rank, 2, port));
    ranks[static_cast<size_t>(rank)] = train(rank, 2, 256, -1, &group);
    group.barrier();
  });
  EXPECT_EQ(ranks[0].accuracy, ranks[1].accuracy);  // reduced over the ranks: one value
  EXPECT_GT(single.accuracy, 0.5);
  EXPECT_LE(std::abs(ranks[0].accuracy - single.accuracy), 0.002);
  std::printf("accuracy: 1 x 512 %.4f, 2 x 256 %.4f\n", single.accuracy, ranks[0].accuracy);
}

TEST(Distributed, RanksWithDifferentSettingsAllFailNamingTheSetting) {
  const int port = free_loopback_port();
  std::vector<std::string> errors(2);
  run_ranks(2, [&](int rank) {
    ProcessGroup group(rank_options(rank, 2, port));
    errors[static_cast<size_t>(rank)] = error_of([&] {
      group.check_same({{"batch size", rank == 0 ? "512" : "256"}, {"seed", "42"}});
    });
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(errors[static_cast<size_t>(rank)],
              "rank " + std::to_string(rank) +
                  ": the ranks were started with different settings: batch size: rank 0 has 512, rank 1 has 256");
  }
}

TEST(Distributed, RanksWithTheSameSettingsPass) {
  const int port = free_loopback_port();
  run_ranks(3, [&](int rank) {
    ProcessGroup group(rank_options(rank, 3, port));
    group.check_same({{"batch size", "512"}, {"dataset", "60000 samples, fingerprint 0123"}});
  });
}

// Failures end within a few times the timeout (2 s here: the store, then the group, may each wait it
// out), with an error naming the rank and what it was doing; 30 s leaves room for a loaded machine.
void expect_fails_within(const std::function<void()>& body, const std::string& starts_with, double max_seconds) {
  const auto start = std::chrono::steady_clock::now();
  const std::string error = error_of(body);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(error.substr(0, starts_with.size()), starts_with) << error;
  EXPECT_LE(seconds, max_seconds);
}

TEST(Distributed, AMasterThatNeverComesUpFailsWithinTheTimeout) {
  const int port = free_loopback_port();  // nobody listens there
  expect_fails_within([&] { ProcessGroup group(rank_options(1, 2, port, milliseconds(2000))); },
                      "rank 1: joining the group at 127.0.0.1:" + std::to_string(port), 30);
}

TEST(Distributed, ARankThatNeverComesFailsRankZeroWithinTheTimeout) {
  const int port = free_loopback_port();
  expect_fails_within([&] { ProcessGroup group(rank_options(0, 2, port, milliseconds(2000))); },
                      "rank 0: joining the group at 127.0.0.1:" + std::to_string(port), 30);
}

TEST(Distributed, ARankThatLeavesFailsTheOthersCollectiveWithinTheTimeout) {
  const int port = free_loopback_port();
  std::string error;
  run_ranks(2, [&](int rank) {
    ProcessGroup group(rank_options(rank, 2, port, milliseconds(2000)));
    torch::Tensor tensor = torch::ones({4});
    group.allreduce_sum(tensor);  // both present
    if (rank == 1) return;        // rank 1 leaves: its group closes its connections
    const auto start = std::chrono::steady_clock::now();
    error = error_of([&] {
      torch::Tensor again = torch::ones({4});
      group.allreduce_sum(again);
    });
    EXPECT_LE(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30);
  });
  EXPECT_EQ(error.substr(0, 8), "rank 0: ") << error;
}

// Two "machines" that reach each other only through their own loopback addresses: rank 0 serves
// at 127.0.0.2, rank 1 listens on 127.0.0.3.
TEST(Distributed, TwoNodesOnTheirOwnLoopbackAddressesTrainLikeOne) {
  const Trained single = train(0, 1, 512, 5, nullptr);
  const int port = free_loopback_port();
  std::vector<Trained> ranks(2);
  run_ranks(2, [&](int rank) {
    DistributedOptions options = rank_options(rank, 2, port);
    options.master_addr = "127.0.0.2";
    options.local_addr = rank == 0 ? "127.0.0.2" : "127.0.0.3";
    ProcessGroup group(options);
    ranks[static_cast<size_t>(rank)] = train(rank, 2, 256, 5, &group);
    group.barrier();
  });
  EXPECT_TRUE(torch::equal(ranks[0].parameters, ranks[1].parameters));
  EXPECT_LE(relative_difference(ranks[0].parameters, single.parameters), 1e-4);
}

// torchrun's agent serves the store itself (TORCHELASTIC_USE_AGENT_STORE=True): rank 0 must not
// bind the port, and feeder's keys go under torch.distributed's prefix for the attempt.
TEST(Distributed, RanksJoinTorchrunsAgentStoreAsClientsUnderTheAttemptPrefix) {
  const int port = free_loopback_port();
  c10d::TCPStoreOptions agent_options;
  agent_options.port = static_cast<uint16_t>(port);
  agent_options.isServer = true;
  agent_options.waitWorkers = false;
  agent_options.timeout = milliseconds(20000);
  torch_compat::use_classic_tcp_store(agent_options);
  const auto agent_store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", agent_options);
  std::vector<torch::Tensor> sums(2);
  run_ranks(2, [&](int rank) {
    DistributedOptions options = rank_options(rank, 2, port);
    options.use_agent_store = true;
    options.restart_count = 3;
    ProcessGroup group(options);
    group.check_same({{"batch size", "512"}});
    torch::Tensor sum = torch::full({3}, static_cast<float>(rank + 1));
    group.allreduce_sum(sum);
    sums[static_cast<size_t>(rank)] = sum;
    group.barrier();
  });
  for (const torch::Tensor& sum : sums) EXPECT_TRUE(torch::equal(sum, torch::full({3}, 3.0f)));
  EXPECT_TRUE(agent_store->check({"/worker/attempt_3/feeder/settings/0/0"}));
  EXPECT_FALSE(agent_store->check({"feeder/settings/0/0"}));
}

TEST(DistributedOptions, ChecksRanksAndPort) {
  DistributedOptions options;
  options.world_size = 2;
  options.rank = 2;
  EXPECT_EQ(error_of([&] { check_distributed_options(options); }), "rank must be in 0..1 for world size 2, got 2");
  options.rank = 1;
  options.local_world_size = 2;
  options.local_rank = 1;
  options.master_port = 70000;
  EXPECT_EQ(error_of([&] { check_distributed_options(options); }), "master port must be in 1..65535, got 70000");
  options.master_port = 29500;
  EXPECT_EQ(error_of([&] { check_distributed_options(options); }), "");
}

}  // namespace
}  // namespace feeder
