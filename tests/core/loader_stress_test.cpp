// Random sequences of what training programs do to a loader (start an epoch, take batches, break
// out, save its state, restore one, destroy it and build another with other workers) over sources
// that are in memory, slow, failing at random reads, or losing shards mid-epoch. Every batch that
// arrives must be the reference batch for its epoch and position; a batch that fails must fail with
// the source's DataError; nothing may hang (a watchdog fails the test and prints every thread).
//
// Seeded and bounded: each case runs scenarios from fixed seeds until its time is up, so a slow
// build (a sanitizer's) runs fewer of them, never longer. A failure names its seed and operation.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/numbered_store.h"
#include "core/streamed_store.h"
#include "core/watchdog.h"
#include "feeder/data/loader.h"
#include "feeder/error.h"

namespace feeder {
namespace {

using namespace std::chrono_literals;
using testing::numbered_store;
using testing::starts_of;
using testing::StreamedStore;
using testing::Watchdog;

enum class Faults { kNone, kSlowAndFailing, kVanishing };

struct Scenario {
  bool streaming = false;
  Faults faults = Faults::kNone;
  uint64_t seed = 0;
};

// The batches (sample indices) of each epoch, from an in-memory loader without workers: the
// order is a function of the options and the data only, so every loader must match it.
class Reference {
 public:
  Reference(std::shared_ptr<const SampleSource> source, LoaderOptions options) {
    options.num_workers = 0;
    loader_ = std::make_unique<Loader>(std::move(source), options);
  }
  const std::vector<std::vector<int64_t>>& epoch(int64_t e) {
    auto [it, inserted] = epochs_.try_emplace(e);
    if (inserted) {
      loader_->start_epoch(e);
      while (std::optional<Batch> batch = loader_->next())
        it->second.emplace_back(batch->sample_indices().begin(), batch->sample_indices().end());
    }
    return it->second;
  }

 private:
  std::unique_ptr<Loader> loader_;
  std::map<int64_t, std::vector<std::vector<int64_t>>> epochs_;
};

class Run {
 public:
  explicit Run(const Scenario& scenario) : scenario_(scenario), rng_(scenario.seed) {
    const int64_t num_samples = pick(150, 500);
    std::vector<int64_t> blocks;
    for (int64_t first = 0; first < num_samples;) {
      const int64_t rows = std::min(pick(3, 40), num_samples - first);
      blocks.push_back(rows);
      first += rows;
    }
    store_ = numbered_store(num_samples);
    memory_ = std::make_shared<InMemorySource>(store_, "memory", starts_of(blocks));
    if (scenario.streaming) {
      stream_ = std::make_shared<StreamedStore>(store_, blocks);
      stream_->group_blocks = pick(1, 4);
      if (scenario.faults == Faults::kSlowAndFailing) {
        stream_->max_delay_us = pick(50, 400);
        stream_->fail_per_mille = static_cast<uint64_t>(pick(5, 40));
      }
    }
    options_.batch_size = pick(1, 24);
    options_.world_size = pick(1, 3);
    options_.rank = pick(0, options_.world_size - 1);
    options_.drop_last = pick(0, 3) == 0;
    options_.shuffle = pick(0, 5) != 0;
    options_.seed = static_cast<uint64_t>(pick(0, 1000));
    options_.shuffle_window = options_.shuffle ? pick(1, num_samples) : 1;
    options_.pin_memory = false;
    if (scenario.streaming) {
      // A tight budget: the smallest power of two the loader accepts with the most batches in flight.
      LoaderOptions most = options_;
      most.num_workers = 1;
      most.prefetch = 4;
      for (most.memory_budget = 4 * 1024;; most.memory_budget *= 2) {
        try {
          Loader probe(stream_, most);
          break;
        } catch (const OptionsError&) {
        }
      }
      options_.memory_budget = most.memory_budget;
    }
    reference_ = std::make_unique<Reference>(memory_, options_);
  }

  void go(int num_operations) {
    rebuild();
    for (int op = 0; op < num_operations && !::testing::Test::HasFatalFailure(); ++op) {
      const int64_t choice = pick(0, 99);
      std::ostringstream what;
      if (choice < 12) {
        epoch_ = pick(0, 3);
        what << "start_epoch(" << epoch_ << ")";
        SCOPED_TRACE(what.str());
        loader_->start_epoch(epoch_);
        position_ = 0;
        started_ = true;
      } else if (choice < 70) {
        if (!started_) continue;
        const int64_t count = pick(1, loader_->num_batches() + 2);
        what << "next() x" << count << " from batch " << position_ << " of epoch " << epoch_;
        SCOPED_TRACE(what.str());
        take(count);
      } else if (choice < 78) {
        if (!started_) continue;
        saved_ = loader_->state();
        EXPECT_EQ(saved_->epoch, epoch_);
        EXPECT_EQ(saved_->batches_delivered, position_);
      } else if (choice < 88) {
        if (!saved_) continue;
        what << "restore(epoch " << saved_->epoch << ", batch " << saved_->batches_delivered << ")";
        SCOPED_TRACE(what.str());
        loader_->restore(*saved_);
        epoch_ = saved_->epoch;
        position_ = saved_->batches_delivered;
        started_ = true;
      } else if (choice < 95) {
        rebuild();  // destroyed wherever it was, with batches in flight
      } else if (stream_ && scenario_.faults == Faults::kVanishing) {
        // A shard vanishes (its blocks from here on), or comes back.
        const int64_t num_blocks = stream_->num_blocks();
        stream_->vanished_from = stream_->vanished_from.load() == INT64_MAX ? pick(0, num_blocks - 1) : INT64_MAX;
      }
    }
  }

  int64_t full_epochs() const { return full_epochs_; }
  int64_t batches() const { return batches_; }
  int64_t failed_batches() const { return failed_batches_; }

 private:
  int64_t pick(int64_t low, int64_t high) { return std::uniform_int_distribution<int64_t>(low, high)(rng_); }

  void rebuild() {
    loader_.reset();
    LoaderOptions options = options_;
    options.num_workers = static_cast<int>(pick(0, 4));
    options.prefetch = static_cast<int>(pick(1, 4));
    options.background_readers = pick(0, 1) == 1;
    // Workers finish batches in any order: a transform of random length shuffles when they do.
    BatchTransform slow = [](Batch& batch, SplitMix64& rng) {
      if (rng.next() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng.next() % 300));
      (void)batch;
    };
    std::shared_ptr<const SampleSource> source = stream_ ? std::shared_ptr<const SampleSource>(stream_) : memory_;
    loader_ = std::make_unique<Loader>(source, options, nullptr, slow);
    ASSERT_EQ(loader_->shuffle_window(), reference_loader_window());
    started_ = false;
  }

  int64_t reference_loader_window() const {
    return options_.shuffle ? std::min(options_.shuffle_window, store_->size()) : 1;
  }

  void take(int64_t count) {
    const std::vector<std::vector<int64_t>>& expected = reference_->epoch(epoch_);
    bool clean = position_ == 0;  // the epoch so far arrived whole
    for (int64_t i = 0; i < count; ++i) {
      std::optional<Batch> batch;
      try {
        batch = loader_->next();
      } catch (const DataError& e) {
        // Only a misbehaving source may fail a batch, and with its own message.
        ASSERT_NE(scenario_.faults, Faults::kNone) << "a batch failed without a fault: " << e.what();
        const std::string message = e.what();
        ASSERT_TRUE(message.rfind("part-0000", 0) == 0) << message;
        ++position_;
        ++failed_batches_;
        clean = false;
        continue;
      }
      if (!batch) {
        ASSERT_EQ(position_, static_cast<int64_t>(expected.size())) << "the epoch ended early";
        if (clean) ++full_epochs_;
        return;
      }
      ASSERT_LT(position_, static_cast<int64_t>(expected.size())) << "a batch past the epoch's end";
      ASSERT_EQ(batch->index(), position_);
      const std::vector<int64_t> indices(batch->sample_indices().begin(), batch->sample_indices().end());
      ASSERT_EQ(indices, expected[static_cast<size_t>(position_)]) << "batch " << position_;
      for (int64_t s = 0; s < batch->size(); ++s) {
        ASSERT_EQ(batch->labels()[s], indices[static_cast<size_t>(s)]);
        ASSERT_FLOAT_EQ(batch->images()[s * batch->shape().num_pixels()],
                        static_cast<float>(indices[static_cast<size_t>(s)] % 251) / 255.0f);
      }
      ++position_;
      ++batches_;
    }
  }

  Scenario scenario_;
  std::mt19937_64 rng_;
  std::shared_ptr<ImageStore> store_;
  std::shared_ptr<InMemorySource> memory_;
  std::shared_ptr<StreamedStore> stream_;
  LoaderOptions options_;
  std::unique_ptr<Reference> reference_;
  std::unique_ptr<Loader> loader_;
  bool started_ = false;
  int64_t epoch_ = 0;
  int64_t position_ = 0;
  std::optional<LoaderState> saved_;
  int64_t full_epochs_ = 0;
  int64_t batches_ = 0;
  int64_t failed_batches_ = 0;
};

// Runs scenarios from seeds 1, 2, ... until `budget` is spent (at least `min_scenarios`).
void run_for(bool streaming, Faults faults, std::chrono::seconds budget, int min_scenarios) {
  // FEEDER_STRESS_SECONDS=N gives each case N seconds instead of its budget (sized for CI): a longer search.
  if (const char* seconds = std::getenv("FEEDER_STRESS_SECONDS")) budget = std::chrono::seconds(std::atoll(seconds));
  const auto start = std::chrono::steady_clock::now();
  int64_t scenarios = 0, full_epochs = 0, batches = 0, failed = 0;
  // FEEDER_STRESS_SEED=N runs scenario N alone: how a failure is reproduced.
  const char* only = std::getenv("FEEDER_STRESS_SEED");
  for (uint64_t seed = only ? std::strtoull(only, nullptr, 10) : 1;; ++seed) {
    if (only && scenarios == 1) break;
    if (!only && scenarios >= min_scenarios && std::chrono::steady_clock::now() - start > budget) break;
    SCOPED_TRACE("scenario seed " + std::to_string(seed));
    Watchdog watchdog(60s, "stress scenario seed " + std::to_string(seed));
    Run run(Scenario{streaming, faults, seed * 7919 + static_cast<uint64_t>(faults) * 104729 + (streaming ? 1 : 0)});
    run.go(60);
    if (::testing::Test::HasFailure()) return;
    ++scenarios;
    full_epochs += run.full_epochs();
    batches += run.batches();
    failed += run.failed_batches();
  }
  std::printf("%lld scenarios, %lld batches checked, %lld whole epochs, %lld failed batches\n",
              static_cast<long long>(scenarios), static_cast<long long>(batches), static_cast<long long>(full_epochs),
              static_cast<long long>(failed));
  EXPECT_GT(batches, 0);
  if (faults == Faults::kNone) {
    EXPECT_GT(full_epochs, 0);
  }
}

TEST(LoaderStress, InMemory) { run_for(false, Faults::kNone, 10s, 5); }
TEST(LoaderStress, Streamed) { run_for(true, Faults::kNone, 15s, 5); }
TEST(LoaderStress, StreamedSlowAndFailingReads) { run_for(true, Faults::kSlowAndFailing, 15s, 5); }
TEST(LoaderStress, StreamedShardsVanishingMidEpoch) { run_for(true, Faults::kVanishing, 15s, 5); }

}  // namespace
}  // namespace feeder
