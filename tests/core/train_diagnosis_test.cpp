#include "feeder/train/diagnosis.h"

#include <gtest/gtest.h>

namespace feeder {
namespace {

std::vector<EpochReport> epochs_waiting(double wait_seconds, double train_seconds) {
  EpochReport epoch;
  epoch.train_seconds = train_seconds;
  epoch.data_wait_seconds = wait_seconds;
  return {epoch, epoch};
}

RunSetup fastest_cpu_setup() {
  RunSetup setup;
  setup.precision_bf16 = true;
  setup.cpu_native_bf16 = true;
  setup.channels_last = true;
  setup.num_threads = 2;
  setup.num_cpus = 2;
  setup.num_workers = 1;
  return setup;
}

TEST(Diagnosis, ShareIsWaitOverTrainTimeAcrossEpochs) {
  EpochReport a;
  a.train_seconds = 3;
  a.data_wait_seconds = 1;
  EpochReport b;
  b.train_seconds = 1;
  b.data_wait_seconds = 0;
  EXPECT_DOUBLE_EQ(data_wait_share({a, b}), 0.25);
  EXPECT_DOUBLE_EQ(data_wait_share({}), 0.0);
}

TEST(Diagnosis, DataBoundRunSaysRaiseWorkers) {
  EXPECT_EQ(diagnose(epochs_waiting(3.8, 10), fastest_cpu_setup()),
            "training waited on data 38% of the time: data-bound; raise --workers (now 1), or lower "
            "--threads (now 2) so the loader keeps a core");
}

TEST(Diagnosis, Fp32OnNativeBf16CpuSuggestsBf16) {
  RunSetup setup = fastest_cpu_setup();
  setup.precision_bf16 = false;
  EXPECT_EQ(diagnose(epochs_waiting(0.01, 10), setup),
            "compute-bound (training waited on data 0.10% of the time): try --precision bf16 (this hardware "
            "computes bfloat16 natively)");
}

TEST(Diagnosis, Fp32WithoutNativeBf16DoesNotSuggestBf16) {
  RunSetup setup = fastest_cpu_setup();
  setup.precision_bf16 = false;
  setup.cpu_native_bf16 = false;
  setup.channels_last = false;
  EXPECT_EQ(diagnose(epochs_waiting(0.01, 10), setup),
            "compute-bound (training waited on data 0.10% of the time): try --channels-last on");
}

TEST(Diagnosis, SharesUnderTenPercentKeepOneDecimal) {
  EXPECT_EQ(diagnose(epochs_waiting(0.146, 10), fastest_cpu_setup()).substr(0, 56),
            "compute-bound (training waited on data 1.5% of the time)");
}

TEST(Diagnosis, UnusedGpuComesFirst) {
  RunSetup setup = fastest_cpu_setup();
  setup.cuda_available = true;
  EXPECT_EQ(diagnose(epochs_waiting(0, 10), setup),
            "compute-bound (training waited on data 0.00% of the time): train on the GPU with --device cuda");
}

TEST(Diagnosis, FewerThreadsThanCoresSuggestsMore) {
  RunSetup setup = fastest_cpu_setup();
  setup.num_threads = 1;
  EXPECT_EQ(diagnose(epochs_waiting(0.02, 10), setup),
            "compute-bound (training waited on data 0.20% of the time): try --threads 2 (now 1)");
}

TEST(Diagnosis, FastestSettingsSayNothingLeftToChange) {
  EXPECT_EQ(diagnose(epochs_waiting(0.02, 10), fastest_cpu_setup()),
            "compute-bound (training waited on data 0.20% of the time): the loader keeps up and the model "
            "already runs its fastest settings here; only faster hardware would help");
}

}  // namespace
}  // namespace feeder
