#include "feeder/train/report.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "feeder/error.h"

namespace feeder {
namespace {

using nlohmann::json;

// JSON has no NaN: non-finite numbers are written as null and read back as NaN.
json finite_or_null(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

double number_or_nan(const json& value) {
  return value.is_null() ? std::numeric_limits<double>::quiet_NaN() : value.get<double>();
}

template <typename T>
json optional_or_null(const std::optional<T>& value) {
  if (!value) return nullptr;
  if constexpr (std::is_floating_point_v<T>) return finite_or_null(*value);
  return *value;
}

template <typename T>
std::optional<T> optional_from(const json& value) {
  if (value.is_null()) return std::nullopt;
  return value.get<T>();
}

}  // namespace

RunTotals summarize(const std::vector<EpochReport>& epochs) {
  RunTotals totals;
  for (const EpochReport& epoch : epochs) {
    totals.train_seconds += epoch.train_seconds;
    totals.test_seconds += epoch.test_seconds;
  }
  if (!epochs.empty()) {
    totals.average_train_seconds = totals.train_seconds / static_cast<double>(epochs.size());
    totals.average_test_seconds = totals.test_seconds / static_cast<double>(epochs.size());
    totals.final_accuracy = epochs.back().accuracy;
  }
  return totals;
}

void to_json(json& out, const EpochReport& epoch) {
  out = {
      {"epoch", epoch.epoch},
      {"train_seconds", finite_or_null(epoch.train_seconds)},
      {"test_seconds", finite_or_null(epoch.test_seconds)},
      {"data_wait_seconds", finite_or_null(epoch.data_wait_seconds)},
      {"test_data_wait_seconds", finite_or_null(epoch.test_data_wait_seconds)},
      {"samples_per_second", finite_or_null(epoch.samples_per_second)},
      {"loss", finite_or_null(epoch.train_loss)},
      {"accuracy", optional_or_null(epoch.accuracy)},
      {"train_samples", epoch.num_train_samples},
      {"test_samples", epoch.num_test_samples},
  };
  if (epoch.remote)
    out["remote"] = {{"requests", epoch.remote->requests}, {"bytes", epoch.remote->bytes},
                     {"retries", epoch.remote->retries}, {"failures", epoch.remote->failures},
                     {"cache_bytes", epoch.remote->cache_bytes}};
}

void from_json(const json& in, EpochReport& epoch) {
  epoch.epoch = in.at("epoch").get<int64_t>();
  epoch.train_seconds = in.at("train_seconds").get<double>();
  epoch.test_seconds = in.at("test_seconds").get<double>();
  epoch.data_wait_seconds = in.at("data_wait_seconds").get<double>();
  epoch.test_data_wait_seconds = in.at("test_data_wait_seconds").get<double>();
  epoch.samples_per_second = number_or_nan(in.at("samples_per_second"));
  epoch.train_loss = number_or_nan(in.at("loss"));
  epoch.accuracy = optional_from<double>(in.at("accuracy"));
  epoch.num_train_samples = in.at("train_samples").get<int64_t>();
  epoch.num_test_samples = in.at("test_samples").get<int64_t>();
  if (in.contains("remote")) {
    const json& remote = in.at("remote");
    epoch.remote = StorageStats{remote.at("requests").get<int64_t>(), remote.at("bytes").get<int64_t>(),
                                remote.at("retries").get<int64_t>(), remote.at("failures").get<int64_t>(),
                                remote.at("cache_bytes").get<int64_t>()};
  }
}

void to_json(json& out, const RunReport& report) {
  const RunTotals totals = summarize(report.epochs);
  out = {
      {"options",
       {
           {"pipeline", report.pipeline},
           {"train_file", report.train_file},
           {"test_file", report.test_file},
           {"epochs", report.num_epochs},
           {"batch_size", report.batch_size},
           {"num_workers", report.num_workers},
           {"num_threads", report.num_threads},
           {"seed", report.seed},
           {"learning_rate", report.learning_rate},
           {"precision_requested", report.requested_precision},
           {"precision", report.precision},
           {"device_requested", report.requested_device},
           {"device", report.device},
           {"channels_last", report.channels_last},
           {"pin_memory", report.pin_memory},
           {"loader_only", report.loader_only},
           {"max_batches", report.max_batches},
       }},
      {"machine",
       {
           {"cpu_model", report.cpu_model},
           {"num_cpus", report.num_cpus},
           {"torch_version", report.torch_version},
       }},
      {"epochs", report.epochs},
      {"summary",
       {
           {"average_train_seconds", finite_or_null(totals.average_train_seconds)},
           {"average_test_seconds", finite_or_null(totals.average_test_seconds)},
           {"total_train_seconds", finite_or_null(totals.train_seconds)},
           {"total_test_seconds", finite_or_null(totals.test_seconds)},
           {"final_accuracy", optional_or_null(totals.final_accuracy)},
           {"load_seconds", optional_or_null(report.load_seconds)},
           {"peak_rss_kib", optional_or_null(report.peak_rss_kib)},
       }},
  };
}

void from_json(const json& in, RunReport& report) {
  const json& options = in.at("options");
  report.pipeline = options.at("pipeline").get<std::string>();
  report.train_file = options.at("train_file").get<std::string>();
  report.test_file = options.at("test_file").get<std::string>();
  report.num_epochs = options.at("epochs").get<int64_t>();
  report.batch_size = options.at("batch_size").get<int64_t>();
  report.num_workers = options.at("num_workers").get<int>();
  report.num_threads = options.at("num_threads").get<int>();
  report.seed = options.at("seed").get<uint64_t>();
  report.learning_rate = options.at("learning_rate").get<double>();
  report.requested_precision = options.at("precision_requested").get<std::string>();
  report.precision = options.at("precision").get<std::string>();
  report.requested_device = options.at("device_requested").get<std::string>();
  report.device = options.at("device").get<std::string>();
  report.channels_last = options.at("channels_last").get<bool>();
  report.pin_memory = options.at("pin_memory").get<bool>();
  report.loader_only = options.at("loader_only").get<bool>();
  report.max_batches = options.at("max_batches").get<int64_t>();
  const json& machine = in.at("machine");
  report.cpu_model = machine.at("cpu_model").get<std::string>();
  report.num_cpus = machine.at("num_cpus").get<int>();
  report.torch_version = machine.at("torch_version").get<std::string>();
  report.epochs = in.at("epochs").get<std::vector<EpochReport>>();
  const json& summary = in.at("summary");
  report.load_seconds = optional_from<double>(summary.at("load_seconds"));
  report.peak_rss_kib = optional_from<int64_t>(summary.at("peak_rss_kib"));
}

std::string to_json_text(const RunReport& report) { return json(report).dump(2) + "\n"; }

RunReport parse_run_report(std::string_view text, std::string_view source) {
  try {
    return json::parse(text).get<RunReport>();
  } catch (const json::exception& error) {
    throw DataError(std::string(source) + ": not a run report: " + error.what());
  }
}

}  // namespace feeder
