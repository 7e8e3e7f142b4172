#pragma once

// `feeder bench ablation`: runs every row of the article's ablation (Python reference and C++), the
// rows after it, seed repeats and two sweeps, each in its own process, and writes the table, JSON
// and chart. No LibTorch here: the rows run in child processes (this executable's `ablation-row`,
// or the Python reference script), so each row's timings and peak RSS are its own.

#include <cstdint>
#include <filesystem>
#include <optional>

namespace feeder::bench {

struct AblationOptions {
  std::optional<std::filesystem::path> data_dir;  // empty: the default data set
  int64_t epochs = 1;
  bool quick = false;  // 2 batches per pass, 2 seeds, 2-point sweeps: checks that everything runs
  std::filesystem::path out_dir = "ablation-out";
  int num_threads = 0;  // OMP_NUM_THREADS of every row; 0: the usable CPUs
  std::filesystem::path python = "/usr/bin/python3";
  std::optional<std::filesystem::path> reference;  // empty: found beside the source tree
};

// Runs the ablation and writes ablation.md, ablation.json and ablation.png into options.out_dir.
// Returns the exit code: 1 when a run failed or the chart could not be drawn.
int run_ablation(const AblationOptions& options);

}  // namespace feeder::bench
