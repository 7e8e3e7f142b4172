#pragma once

// One row of the ablation, run in its own process (`feeder-bench ablation-row`): builds the row's
// data pipeline as a BatchSource, then either trains SimpleCNN on it through the trainer's epoch
// loop or iterates it alone (loader only), and writes the run in feeder's results schema.

#include <cstdint>
#include <filesystem>
#include <optional>

#include "ablation/rows.h"

namespace feeder::bench {

struct RowOptions {
  RowId row = RowId::kFeederDefaults;
  std::optional<std::filesystem::path> data_dir;  // empty: the default data set
  int64_t batch_size = 512;
  int num_workers = 0;
  int64_t epochs = 1;
  int64_t max_batches = 0;  // per pass; 0: whole passes
  bool loader_only = false;
  uint64_t seed = 42;
  std::optional<std::filesystem::path> json_path;  // empty: stdout
};

// Runs the row; call after the process's thread count is set (cli::apply_process_settings). Returns
// the exit code; bad data throws DataError.
int run_row(const RowOptions& options);

}  // namespace feeder::bench
