#pragma once

// Checkpoints of a training run, so that a job that is killed continues exactly where it was:
// model, optimizer, the generator's state, the loader's position and the epoch's running totals.
//
// Files: DIR/checkpoint-<global step, 10 digits>.pt, a LibTorch archive (torch::serialize). Each
// is written to a temporary file, synced, renamed into place and the directory synced, so a crash
// leaves the set as it was before or after, never a half-written file under the name; the newest
// `keep` are kept. A file damaged anyway (a full disk, a copy cut short) fails to load and the one
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

  // Saves the model's parameters and buffers, the optimizer's state, the default CPU generator's
  // state and `checkpoint`; then removes the oldest files beyond `keep`, and temporary files that
  // a process killed while saving left behind. Returns the file written.
  std::filesystem::path save(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                             const TrainingCheckpoint& checkpoint);

  // Loads the newest checkpoint that reads back whole into `model` and `optimizer` (and the
  // generator), and returns it with its file. Each newer file that does not load is skipped with a
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
