#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "feeder/error.h"
#include "feeder/train/report.h"

namespace feeder {
namespace {

using nlohmann::json;

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

TEST(RunReportJson, IsJsonEndingInANewline) {
  const std::string text = to_json_text(sample_report());
  EXPECT_TRUE(json::accept(text)) << text;
  EXPECT_EQ(text.back(), '\n');
}

TEST(RunReportJson, HasThePerEpochFieldsOptionsMachineAndSummary) {
  const json report = json::parse(to_json_text(sample_report()));
  const json& first = report.at("epochs").at(0);
  EXPECT_EQ(first.at("train_seconds"), 2.5);
  EXPECT_EQ(first.at("test_seconds"), 0.25);
  EXPECT_EQ(first.at("data_wait_seconds"), 0.01);
  EXPECT_EQ(first.at("samples_per_second"), 24000);
  EXPECT_EQ(first.at("accuracy"), 0.8081);
  EXPECT_EQ(first.at("loss"), 0.61);
  EXPECT_EQ(report.at("options").at("batch_size"), 512);
  EXPECT_EQ(report.at("options").at("num_workers"), 1);
  EXPECT_EQ(report.at("options").at("seed"), 42);
  EXPECT_EQ(report.at("options").at("precision"), "bf16");
  EXPECT_EQ(report.at("options").at("device"), "cpu");
  EXPECT_EQ(report.at("options").at("channels_last"), true);
  EXPECT_EQ(report.at("machine").at("cpu_model"), "AMD EPYC");
  EXPECT_EQ(report.at("machine").at("num_cpus"), 2);
  EXPECT_EQ(report.at("machine").at("torch_version"), "1.13.0");
  EXPECT_EQ(report.at("summary").at("total_train_seconds"), 4.0);
  EXPECT_EQ(report.at("summary").at("average_test_seconds"), 0.5);
}

TEST(RunReportJson, MissingAccuracyAndNonFiniteNumbersAreNull) {
  const json report = json::parse(to_json_text(sample_report()));
  const json& second = report.at("epochs").at(1);
  EXPECT_TRUE(second.at("accuracy").is_null());
  EXPECT_TRUE(second.at("loss").is_null());
  EXPECT_TRUE(report.at("summary").at("final_accuracy").is_null());  // the last epoch's
  EXPECT_TRUE(report.at("summary").at("peak_rss_kib").is_null());
}

TEST(RunReportJson, KeepsStringsIntact) {
  const json report = json::parse(to_json_text(sample_report()));
  EXPECT_EQ(report.at("options").at("train_file"), "/data/train \"quoted\"\\dir\tx.csv");
}

TEST(RunReportJson, ReadsBackWhatItWrites) {
  RunReport written = sample_report();
  written.peak_rss_kib = 123456;
  written.load_seconds = 1.25;
  const RunReport read = parse_run_report(to_json_text(written), "run.json");
  EXPECT_EQ(read.train_file, written.train_file);
  EXPECT_EQ(read.num_workers, 1);
  EXPECT_EQ(read.precision, "bf16");
  EXPECT_EQ(read.torch_version, "1.13.0");
  EXPECT_EQ(read.peak_rss_kib, std::optional<int64_t>(123456));
  EXPECT_EQ(read.load_seconds, std::optional<double>(1.25));
  ASSERT_EQ(read.epochs.size(), 2u);
  EXPECT_EQ(read.epochs[0].train_seconds, 2.5);
  EXPECT_EQ(read.epochs[0].accuracy, std::optional<double>(0.8081));
  EXPECT_FALSE(read.epochs[1].accuracy.has_value());
  EXPECT_TRUE(std::isnan(read.epochs[1].train_loss));
}

// The Python reference script writes these keys (bench/reference/article_pipeline.py, run_report);
// a loader-only epoch has no loss and no accuracy.
TEST(RunReportJson, ReadsTheReferenceScriptsReport) {
  const std::string text = R"({
    "options": {"pipeline": "python-v2", "train_file": "t.gz", "test_file": "e.gz", "epochs": 1,
                "batch_size": 512, "num_workers": 2, "num_threads": 2, "seed": 42, "learning_rate": 0.001,
                "precision_requested": "fp32", "precision": "fp32", "device_requested": "auto",
                "device": "cpu", "channels_last": false, "pin_memory": true, "loader_only": true,
                "max_batches": 2},
    "machine": {"cpu_model": "AMD EPYC", "num_cpus": 2, "torch_version": "1.13.1"},
    "epochs": [{"epoch": 1, "train_seconds": 0.5, "test_seconds": 0.25, "data_wait_seconds": 0.5,
                "test_data_wait_seconds": 0.25, "samples_per_second": 2048.0, "loss": null,
                "accuracy": null, "train_samples": 1024, "test_samples": 1024}],
    "summary": {"average_train_seconds": 0.5, "average_test_seconds": 0.25, "total_train_seconds": 0.5,
                "total_test_seconds": 0.25, "final_accuracy": null, "load_seconds": 3.5,
                "peak_rss_kib": 2048}
  })";
  const RunReport report = parse_run_report(text, "python.json");
  EXPECT_EQ(report.pipeline, "python-v2");
  EXPECT_TRUE(report.loader_only);
  EXPECT_EQ(report.peak_rss_kib, std::optional<int64_t>(2048));
  ASSERT_EQ(report.epochs.size(), 1u);
  EXPECT_EQ(report.epochs[0].num_train_samples, 1024);
  EXPECT_TRUE(std::isnan(report.epochs[0].train_loss));
}

TEST(RunReportJson, MissingKeyIsADataErrorNamingTheFile) {
  json report = json(sample_report());
  report.at("epochs").at(0).erase("train_seconds");
  try {
    parse_run_report(report.dump(), "run.json");
    FAIL() << "no error for a report without train_seconds";
  } catch (const DataError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("run.json: not a run report: ", 0), 0u) << error.what();
    EXPECT_NE(std::string(error.what()).find("train_seconds"), std::string::npos) << error.what();
  }
}

TEST(RunReportJson, TextThatIsNotJsonIsADataError) {
  EXPECT_THROW(parse_run_report("{\"options\": ", "run.json"), DataError);
}

TEST(RunReportJson, EmptyRunIsStillWellFormed) {
  EXPECT_TRUE(json::accept(to_json_text(RunReport{})));
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
