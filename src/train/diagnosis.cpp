#include "feeder/train/diagnosis.h"

#include <cstdio>

namespace feeder {
namespace {

std::string percent(double share) {
  char text[32];
  const char* format = share < 0.01 ? "%.2f%%" : share < 0.1 ? "%.1f%%" : "%.0f%%";
  std::snprintf(text, sizeof(text), format, share * 100.0);
  return text;
}

}  // namespace

double data_wait_share(const std::vector<EpochReport>& epochs) {
  double wait = 0;
  double train = 0;
  for (const EpochReport& epoch : epochs) {
    wait += epoch.data_wait_seconds;
    train += epoch.train_seconds;
  }
  return train > 0 ? wait / train : 0.0;
}

std::string diagnose(const std::vector<EpochReport>& epochs, const RunSetup& setup) {
  const double share = data_wait_share(epochs);
  const std::string waited = "training waited on data " + percent(share) + " of the time";
  if (share >= kDataBoundShare) {
    std::string advice = waited + ": data-bound; raise --workers (now " + std::to_string(setup.num_workers) + ")";
    if (!setup.device_cuda && setup.num_threads >= setup.num_cpus)
      advice += ", or lower --threads (now " + std::to_string(setup.num_threads) +
                ") so the loader keeps a core";
    return advice;
  }
  const std::string bound = "compute-bound (" + waited + ")";
  if (!setup.device_cuda && setup.cuda_available) return bound + ": train on the GPU with --device cuda";
  if (!setup.precision_bf16 && (setup.device_cuda || setup.cpu_native_bf16))
    return bound + ": try --precision bf16 (this hardware computes bfloat16 natively)";
  if (!setup.channels_last) return bound + ": try --channels-last on";
  if (!setup.device_cuda && setup.num_threads < setup.num_cpus)
    return bound + ": try --threads " + std::to_string(setup.num_cpus) + " (now " +
           std::to_string(setup.num_threads) + ")";
  return bound + ": the loader keeps up and the model already runs its fastest settings here; only "
                 "faster hardware would help";
}

}  // namespace feeder
