#include "feeder/train/report.h"

#include <cmath>
#include <cstdio>

namespace feeder {

void JsonWriter::newline() {
  out_ += '\n';
  out_.append(2 * has_elements_.size(), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (has_elements_.empty()) return;
  if (has_elements_.back()) out_ += ',';
  has_elements_.back() = true;
  newline();
}

void JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  has_elements_.push_back(false);
}

void JsonWriter::close(char bracket) {
  const bool had_elements = has_elements_.back();
  has_elements_.pop_back();
  if (had_elements) newline();
  out_ += bracket;
}

void JsonWriter::end_object() { close('}'); }

void JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  has_elements_.push_back(false);
}

void JsonWriter::end_array() { close(']'); }

void JsonWriter::key(std::string_view name) {
  before_value();
  append_string(name);
  out_ += ": ";
  after_key_ = true;
}

void JsonWriter::value(std::string_view text) {
  before_value();
  append_string(text);
}

void JsonWriter::append_string(std::string_view text) {
  out_ += '"';
  for (const char c : text) {
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\n': out_ += "\\n"; break;
      case '\r': out_ += "\\r"; break;
      case '\t': out_ += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(c));
          out_ += escaped;
        } else {
          out_ += c;  // UTF-8 bytes pass through
        }
    }
  }
  out_ += '"';
}

void JsonWriter::value(double number) {
  if (!std::isfinite(number)) {
    null();
    return;
  }
  before_value();
  char text[32];
  std::snprintf(text, sizeof(text), "%.10g", number);
  out_ += text;
}

void JsonWriter::value(int64_t number) {
  before_value();
  out_ += std::to_string(number);
}

void JsonWriter::value(uint64_t number) {
  before_value();
  out_ += std::to_string(number);
}

void JsonWriter::value(bool flag) {
  before_value();
  out_ += flag ? "true" : "false";
}

void JsonWriter::null() {
  before_value();
  out_ += "null";
}

void JsonWriter::value(const std::optional<double>& number) {
  if (number) {
    value(*number);
  } else {
    null();
  }
}

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

void write_epoch_json(JsonWriter& json, const EpochReport& epoch) {
  json.begin_object();
  json.field("epoch", epoch.epoch);
  json.field("train_seconds", epoch.train_seconds);
  json.field("test_seconds", epoch.test_seconds);
  json.field("data_wait_seconds", epoch.data_wait_seconds);
  json.field("test_data_wait_seconds", epoch.test_data_wait_seconds);
  json.field("samples_per_second", epoch.samples_per_second);
  json.field("loss", epoch.train_loss);
  json.field("accuracy", epoch.accuracy);
  json.field("train_samples", epoch.num_train_samples);
  json.field("test_samples", epoch.num_test_samples);
  json.end_object();
}

std::string to_json(const RunReport& report) {
  JsonWriter json;
  json.begin_object();

  json.key("options");
  json.begin_object();
  json.field("train_file", report.train_file);
  json.field("test_file", report.test_file);
  json.field("epochs", report.num_epochs);
  json.field("batch_size", report.batch_size);
  json.field("workers", report.num_workers);
  json.field("threads", report.num_threads);
  json.field("seed", report.seed);
  json.field("learning_rate", report.learning_rate);
  json.field("precision_requested", report.requested_precision);
  json.field("precision", report.precision);
  json.field("device_requested", report.requested_device);
  json.field("channels_last", report.channels_last);
  json.end_object();

  json.key("machine");
  json.begin_object();
  json.field("cpu_model", report.cpu_model);
  json.field("cpus", report.num_cpus);
  json.field("device", report.device);
  json.field("precision", report.precision);
  json.field("torch_version", report.torch_version);
  json.end_object();

  json.key("epochs");
  json.begin_array();
  for (const EpochReport& epoch : report.epochs) write_epoch_json(json, epoch);
  json.end_array();

  const RunTotals totals = summarize(report.epochs);
  json.key("summary");
  json.begin_object();
  json.field("average_train_seconds", totals.average_train_seconds);
  json.field("average_test_seconds", totals.average_test_seconds);
  json.field("total_train_seconds", totals.train_seconds);
  json.field("total_test_seconds", totals.test_seconds);
  json.field("test_accuracy", totals.final_accuracy);
  json.end_object();

  json.end_object();
  return json.str() + "\n";
}

}  // namespace feeder
