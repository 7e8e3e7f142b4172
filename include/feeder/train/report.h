#pragma once

// Per-epoch results and the JSON run report. No LibTorch here, so the report can be written and
// tested without it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  double train_loss = 0;           // mean cross-entropy over the epoch's training samples
  std::optional<double> accuracy;  // on the test set; empty when it is unlabeled
};

// Everything `feeder train --report-json` records: the options as used, the machine, the epochs.
struct RunReport {
  // Options.
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
  // Machine.
  std::string cpu_model;
  int num_cpus = 0;
  std::string torch_version;
  // Results.
  std::vector<EpochReport> epochs;
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

// The report as a JSON object (UTF-8, newline-terminated). Non-finite numbers become null.
class JsonWriter;

// One epoch as a JSON object: the fields `feeder train --report-json` and the ablation rows share.
void write_epoch_json(JsonWriter& json, const EpochReport& epoch);

std::string to_json(const RunReport& report);

// Minimal streaming JSON writer: the caller nests begin/end calls correctly; commas and escaping
// are handled here. Not a general library, just enough for reports.
class JsonWriter {
 public:
  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  void key(std::string_view name);  // inside an object, before each value
  void value(std::string_view text);
  void value(const char* text) { value(std::string_view(text)); }
  void value(double number);
  void value(int64_t number);
  void value(uint64_t number);
  void value(int number) { value(static_cast<int64_t>(number)); }
  void value(bool flag);
  void null();
  void value(const std::optional<double>& number);  // null when empty
  // key(name) then value(v).
  template <typename T>
  void field(std::string_view name, const T& v) {
    key(name);
    value(v);
  }

  const std::string& str() const { return out_; }

 private:
  void before_value();
  void newline();
  void close(char bracket);
  void append_string(std::string_view text);

  std::string out_;
  // One entry per open container: true once it holds an element (the next needs a comma).
  std::vector<bool> has_elements_;
  bool after_key_ = false;
};

}  // namespace feeder
