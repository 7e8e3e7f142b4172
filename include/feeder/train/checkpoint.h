#pragma once

// Checkpoints of a training run, so that a job that is killed continues exactly where it was.
//
// What a bitwise resume needs, and so exactly what a checkpoint holds:
// - the model's parameters and buffers, and the optimizer's state (Adam's step and moments);
// - where the run is: epoch, batches done of its training pass, global step;
// - the loader's position (LoaderState): the batches after it, and any BatchTransform's draws, are
//   a pure function of it and the data (feeder/data/loader.h);
// - the pass's running totals over every rank and the finished epochs' reports, so that the
//   resumed run reports what the uninterrupted one would.
// No random generator's state: feeder's trainer draws no random numbers once the model is built
// (SimpleCNN has no dropout; its initialisation comes from its own seeded generator), so saving
// one would only suggest a guarantee it does not need. A model that draws from LibTorch's global
// generators while training (dropout, on the CPU or a GPU) resumes bit for bit only if it makes
// those draws a function of the step, as the loader does: seed them from (seed, global_step)
// before each step, e.g. torch::manual_seed(seed * 1000003 + global_step).
//
// Files: DIR/checkpoint-<global step, 10 digits>.pt, a LibTorch archive (torch::serialize). Each
// is written to a temporary file, synced, renamed into place and the directory synced, so a crash
// leaves the set as it was before or after, never a half-written file under the name; the newest
// `keep` are kept (one more when a crash comes between writing a file and removing the oldest:
// the older is removed only once the newer is in place). A file damaged anyway (a full disk, a copy cut short) fails to load and the one
// before it is used, with a warning.
//
// Not thread safe: one thread (the training loop) drives a CheckpointStore.

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "feeder/train/report.h"

namespace feeder {

struct TrainingCheckpoint {
  int64_t epoch = 1;         // the epoch in progress (1-based, as feeder train counts)
  int64_t batches_done = 0;  // of that epoch's training pass
  int64_t global_step = 0;   // training batches since the run began
  double loss_sum = 0;       // of the pass so far, over every rank: sum of batch loss x batch size
  int64_t num_samples = 0;   // of the pass so far, over every rank
  int world_size = 1;
  std::string loader_state;  // rank 0's training LoaderState as JSON; rank r restores it as rank r
  std::vector<EpochReport> finished_epochs;
};

class CheckpointStore {
 public:
  // Creates `dir` if needed. keep >= 1.
  CheckpointStore(std::filesystem::path dir, int keep);

  const std::filesystem::path& dir() const { return dir_; }

  // Saves the model's parameters and buffers, the optimizer's state and `checkpoint`; then removes the oldest files beyond `keep`, and temporary files that
  // a process killed while saving left behind. Returns the file written.
  std::filesystem::path save(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                             const TrainingCheckpoint& checkpoint);

  // Loads the newest checkpoint that reads back whole into `model` and `optimizer`, and returns it
  // with its file (no generator is touched). Each newer file that does not load is skipped with a
  // call to `warn` saying which and why. nullopt when no file loads (or there is none).
  std::optional<std::pair<TrainingCheckpoint, std::filesystem::path>> load_newest(
      torch::nn::Module& model, torch::optim::Optimizer& optimizer,
      const std::function<void(const std::string&)>& warn) const;

  // The checkpoint files, newest first.
  std::vector<std::filesystem::path> files() const;

 private:
  std::filesystem::path dir_;
  int keep_;
};

}  // namespace feeder
