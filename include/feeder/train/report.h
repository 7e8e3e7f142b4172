#pragma once

// The one results schema: what `feeder train --report-json` writes, what every row of the
// ablation writes (C++ rows through this code, the Python reference script with the same keys),
// and what the ablation reads back. No LibTorch here, so it can be written, read and tested
// without it.
//
// {"options": {...}, "machine": {...}, "epochs": [{...}, ...], "summary": {...}}; the keys are
// listed in report.cpp. Numbers that are not finite, and results that do not exist (accuracy of an
// unlabeled test set), are null.
//
// Thread safety: plain values, and functions that keep no state: any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "feeder/io/object_storage.h"

namespace feeder {

struct EpochReport {
  int64_t epoch = 0;
  int64_t num_train_samples = 0;
  int64_t num_test_samples = 0;
  double train_seconds = 0;
  double test_seconds = 0;
  // Time the training loop spent blocked in next() waiting for a batch (part of train_seconds).
  double data_wait_seconds = 0;
  double test_data_wait_seconds = 0;
  double samples_per_second = 0;   // training samples / train_seconds
  double train_loss = 0;           // mean cross-entropy over the epoch's training samples; NaN: none
  std::optional<double> accuracy;  // on the test set; empty when it is unlabeled or not measured
  // What remote reads cost in the epoch (the first: with opening the sets), where there were any.
  std::optional<StorageStats> remote;
};

// Everything one run records: the options as used, the machine, the epochs.
struct RunReport {
  // Options.
  std::string pipeline = "feeder";  // the data path: feeder, naive, torch-data-mnist, python-v2, ...
  std::string train_file;
  std::string test_file;
  int64_t num_epochs = 0;
  int64_t batch_size = 0;
  int num_workers = 0;
  int num_threads = 0;  // intra-op threads (OMP_NUM_THREADS)
  uint64_t seed = 0;
  double learning_rate = 0;
  std::string requested_precision;  // as asked: auto, fp32, bf16
  std::string precision;            // as resolved: fp32 or bf16
  std::string requested_device;
  std::string device;
  bool channels_last = false;
  bool pin_memory = false;
  bool loader_only = false;  // the data path iterated without the model
  int64_t max_batches = 0;   // batches per pass; 0: whole passes
  // Machine.
  std::string cpu_model;
  int num_cpus = 0;
  std::string torch_version;
  // Results.
  std::vector<EpochReport> epochs;
  std::optional<double> load_seconds;    // reading the data and building the pipeline
  std::optional<int64_t> peak_rss_kib;   // the process (and its exited children, for Python)
};

// Totals over the epochs of a run.
struct RunTotals {
  double train_seconds = 0;
  double test_seconds = 0;
  double average_train_seconds = 0;
  double average_test_seconds = 0;
  std::optional<double> final_accuracy;  // the last epoch's
};
RunTotals summarize(const std::vector<EpochReport>& epochs);

void to_json(nlohmann::json& json, const EpochReport& epoch);
void from_json(const nlohmann::json& json, EpochReport& epoch);
// Writes the summary too; reading ignores it (it is derived from the epochs).
void to_json(nlohmann::json& json, const RunReport& report);
void from_json(const nlohmann::json& json, RunReport& report);

// The report as indented JSON text, newline-terminated.
std::string to_json_text(const RunReport& report);
// Parses a report; throws DataError "<source>: ..." when the text is not JSON or a key of the
// schema is missing or of the wrong type.
RunReport parse_run_report(std::string_view text, std::string_view source);

}  // namespace feeder
