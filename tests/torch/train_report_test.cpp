#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include "feeder/train/report.h"

namespace feeder {
namespace {

// A strict recursive-descent JSON checker (RFC 8259 grammar); true when `text` is one JSON value
// with nothing but whitespace after it.
class JsonChecker {
 public:
  explicit JsonChecker(std::string_view text) : text_(text) {}

  bool valid() {
    skip_space();
    if (!parse_value()) return false;
    skip_space();
    return pos_ == text_.size();
  }

 private:
  bool parse_value() {
    if (pos_ >= text_.size()) return false;
    switch (text_[pos_]) {
      case '{': return parse_container('}', true);
      case '[': return parse_container(']', false);
      case '"': return parse_string();
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return parse_number();
    }
  }
  bool parse_container(char close, bool is_object) {
    ++pos_;
    skip_space();
    if (peek() == close) return ++pos_, true;
    for (;;) {
      skip_space();
      if (is_object) {
        if (!parse_string()) return false;
        skip_space();
        if (peek() != ':') return false;
        ++pos_;
        skip_space();
      }
      if (!parse_value()) return false;
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == close) return ++pos_, true;
      return false;
    }
  }
  bool parse_string() {
    if (peek() != '"') return false;
    for (++pos_; pos_ < text_.size(); ++pos_) {
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') return ++pos_, true;
      if (c < 0x20) return false;
      if (c == '\\') {
        ++pos_;
        if (pos_ >= text_.size()) return false;
        const char e = text_[pos_];
        if (e == 'u') {
          for (int i = 0; i < 4; ++i) {
            if (++pos_ >= text_.size() || !std::isxdigit(static_cast<unsigned char>(text_[pos_]))) return false;
          }
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          return false;
        }
      }
    }
    return false;
  }
  bool parse_number() {
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (!digits()) {
      return false;
    }
    if (peek() == '.') {
      ++pos_;
      if (!digits()) return false;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!digits()) return false;
    }
    return pos_ > start;
  }
  bool digits() {
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    return pos_ > start;
  }
  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  void skip_space() {
    while (pos_ < text_.size() && std::string_view(" \t\r\n").find(text_[pos_]) != std::string_view::npos) ++pos_;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  std::string_view text_;
  size_t pos_ = 0;
};

bool is_json(std::string_view text) { return JsonChecker(text).valid(); }

TEST(JsonChecker, RejectsMalformedText) {
  // The checker itself must catch what a broken writer would produce.
  EXPECT_TRUE(is_json(R"({"a": [1, 2.5e-3, "x\n"], "b": null})"));
  for (const char* bad : {R"({"a": 1,})", R"({"a" 1})", R"([1 2])", R"({"a": nan})", R"("abc)", R"({} {})",
                          "{\"a\": \"line\nbreak\"}", R"([01])"}) {
    EXPECT_FALSE(is_json(bad)) << bad;
  }
}

RunReport sample_report() {
  RunReport report;
  report.train_file = "/data/train \"quoted\"\\dir\tx.csv";
  report.test_file = "/data/t10k-images-idx3-ubyte.gz";
  report.num_epochs = 2;
  report.batch_size = 512;
  report.num_workers = 1;
  report.num_threads = 2;
  report.seed = 42;
  report.learning_rate = 1e-3;
  report.requested_precision = "auto";
  report.precision = "bf16";
  report.requested_device = "auto";
  report.device = "cpu";
  report.channels_last = true;
  report.cpu_model = "AMD EPYC";
  report.num_cpus = 2;
  report.torch_version = "1.13.0";
  EpochReport first;
  first.epoch = 1;
  first.train_seconds = 2.5;
  first.test_seconds = 0.25;
  first.data_wait_seconds = 0.01;
  first.samples_per_second = 24000;
  first.train_loss = 0.61;
  first.accuracy = 0.8081;
  EpochReport second = first;
  second.epoch = 2;
  second.train_seconds = 1.5;
  second.test_seconds = 0.75;
  second.accuracy.reset();  // an unlabeled test set
  second.train_loss = std::numeric_limits<double>::quiet_NaN();
  report.epochs = {first, second};
  return report;
}

TEST(RunReportJson, IsWellFormedJson) {
  const std::string json = to_json(sample_report());
  EXPECT_TRUE(is_json(json)) << json;
  EXPECT_EQ(json.back(), '\n');
}

TEST(RunReportJson, HasThePerEpochFieldsOptionsAndMachine) {
  const std::string json = to_json(sample_report());
  for (const char* field : {"\"train_seconds\": 2.5", "\"test_seconds\": 0.25", "\"data_wait_seconds\": 0.01",
                            "\"samples_per_second\": 24000", "\"accuracy\": 0.8081", "\"loss\": 0.61",
                            "\"batch_size\": 512", "\"seed\": 42", "\"precision\": \"bf16\"",
                            "\"channels_last\": true", "\"cpu_model\": \"AMD EPYC\"", "\"cpus\": 2",
                            "\"device\": \"cpu\"", "\"torch_version\": \"1.13.0\"", "\"total_train_seconds\": 4"}) {
    EXPECT_NE(json.find(field), std::string::npos) << field << " missing in\n" << json;
  }
}

TEST(RunReportJson, MissingAccuracyAndNonFiniteNumbersAreNull) {
  const std::string json = to_json(sample_report());
  EXPECT_NE(json.find("\"accuracy\": null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"loss\": null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"test_accuracy\": null"), std::string::npos) << json;  // the last epoch's
}

TEST(RunReportJson, EscapesStrings) {
  const std::string json = to_json(sample_report());
  EXPECT_NE(json.find(R"("/data/train \"quoted\"\\dir\tx.csv")"), std::string::npos) << json;
  JsonWriter writer;
  writer.value(std::string_view("\x01\x1f", 2));
  EXPECT_EQ(writer.str(), "\"\\u0001\\u001f\"");
}

TEST(RunReportJson, EmptyRunIsStillWellFormed) {
  EXPECT_TRUE(is_json(to_json(RunReport{})));
}

TEST(Summarize, AveragesAndTotalsOverEpochs) {
  const RunTotals totals = summarize(sample_report().epochs);
  EXPECT_DOUBLE_EQ(totals.train_seconds, 4.0);
  EXPECT_DOUBLE_EQ(totals.test_seconds, 1.0);
  EXPECT_DOUBLE_EQ(totals.average_train_seconds, 2.0);
  EXPECT_DOUBLE_EQ(totals.average_test_seconds, 0.5);
  EXPECT_FALSE(totals.final_accuracy.has_value());
}

}  // namespace
}  // namespace feeder
