#pragma once

// `feeder train --diagnose`: turns measured epochs into one line saying what to change. No LibTorch
// here, so the rules are tested on plain numbers.
// Pure functions over plain values: any thread.

#include <string>
#include <vector>

#include "feeder/train/report.h"

namespace feeder {

// What the run used and what the machine offers.
struct RunSetup {
  bool precision_bf16 = false;
  bool cpu_native_bf16 = false;
  bool channels_last = true;
  bool device_cuda = false;
  bool cuda_available = false;
  int num_threads = 1;
  int num_cpus = 1;
  int num_workers = 1;
};

// Share of training time spent blocked waiting for data, over all epochs (0 when nothing ran).
double data_wait_share(const std::vector<EpochReport>& epochs);

// At or above this share of training time spent waiting, the data pipeline is what to fix.
inline constexpr double kDataBoundShare = 0.05;

// One line: where the time goes and the single change most likely to help.
std::string diagnose(const std::vector<EpochReport>& epochs, const RunSetup& setup);

}  // namespace feeder
