// feeder-bench: the benchmarks that need LibTorch, run as `feeder bench <what>` (feeder hands its
// arguments to this executable beside it) or directly. `ablation-row` is the ablation's own:
// the orchestrator starts one process per row with it.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ablation/orchestrator.h"
#include "ablation/row_runner.h"
#include "ablation/rows.h"
#include "app/command_line.h"
#include "app/data_dir.h"
#include "app/process_setup.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/system/runtime.h"
#include "loader/loader_bench.h"

namespace feeder::bench {
namespace {

using cli::at_least;
using cli::Command;

// CLI11 fills plain strings; an empty one leaves the optional path empty.
void set_if_given(std::optional<std::filesystem::path>& path, const std::string& text) {
  if (!text.empty()) path = text;
}

Command add_loader_command(CLI::App& parent) {
  auto options = std::make_shared<LoaderBenchOptions>();
  auto data_dir = std::make_shared<std::string>();
  auto train_file = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand(
      "loader", "measure feeder's loader against LibTorch's torch::data loader and a memcpy of the same bytes");
  app->footer(
      "Iterates the training set without a model and prints samples/s and GB/s of the batches produced\n"
      "(float32 images + int64 labels) for: feeder's loader; LibTorch's torch::data loader (MNIST dataset\n"
      "+ Stack collate, what C++ users write today); and a plain memcpy of the same output bytes. All are\n"
      "measured in the same run; each figure is the median over the epochs.");
  CLI::Option* data =
      app->add_option("--data", *data_dir, "directory with the train file")->default_str(cli::kDefaultDataDir.string());
  app->add_option("--train", *train_file, "the training file")->excludes(data);
  app->add_option("--batch-size", options->batch_size, "samples per batch")->check(at_least(1))->capture_default_str();
  app->add_option("--workers", options->num_workers, "loader worker threads (default: the cores)")
      ->check(at_least(0));
  app->add_option("--epochs", options->epochs, "epochs per loader")->check(at_least(1))->capture_default_str();
  return {app, [=] {
            set_if_given(options->data_dir, *data_dir);
            set_if_given(options->train_file, *train_file);
            return run_loader_bench(*options);
          }};
}

Command add_ablation_command(CLI::App& parent) {
  auto options = std::make_shared<AblationOptions>();
  auto data_dir = std::make_shared<std::string>();
  auto reference = std::make_shared<std::string>();
  CLI::App* app =
      parent.add_subcommand("ablation", "the article's data-pipeline ablation, each row in its own process");
  app->footer(
      "Runs the article's data-pipeline ablation on this machine, each row in its own process:\n"
      "the article's Python pipeline (bench/reference/article_pipeline.py: Dataset v1 at batch 16 and\n"
      "512, + workers, + persistent workers, + pin_memory, Dataset v2), the same steps in C++ (a naive\n"
      "row-wise torch::data dataset ... feeder's eager uint8 store), and what comes after the article\n"
      "(Python v2 with glibc malloc thresholds, torch::data MNIST, channels-last, bf16, feeder's\n"
      "defaults, a compute-only bound and a memcpy bound); Python v2 and feeder's defaults again at 5\n"
      "more seeds; then batch-size (16..512) and worker (0, 1, 2, 4) sweeps. Every row is also run\n"
      "without the model (loader only). Writes ablation.md, ablation.json and ablation.png into --out.");
  app->add_option("--data", *data_dir, "train/test files")->default_str(cli::kDefaultDataDir.string());
  app->add_option("--epochs", options->epochs, "epochs per row")->check(at_least(1))->capture_default_str();
  app->add_flag("--quick", options->quick, "2 batches per pass, 2 seeds, 2-point sweeps: checks that everything runs");
  app->add_option("--out", options->out_dir, "output directory")->default_str(options->out_dir.string());
  app->add_option("--threads", options->num_threads, "OMP_NUM_THREADS of every row (default: the usable CPUs)")
      ->check(at_least(1));
  app->add_option("--python", options->python, "Python with torch and pandas for the reference rows")
      ->default_str(options->python.string());
  app->add_option("--reference", *reference, "the reference script (default: found beside the source tree)");
  return {app, [=] {
            set_if_given(options->data_dir, *data_dir);
            set_if_given(options->reference, *reference);
            return run_ablation(*options);
          }};
}

// One row in this process, so its peak RSS and timings are its own; started by the ablation.
Command add_row_command(CLI::App& parent) {
  auto options = std::make_shared<RowOptions>();
  auto data_dir = std::make_shared<std::string>();
  auto json_path = std::make_shared<std::string>();
  auto num_threads = std::make_shared<int>(0);
  auto row_key = std::make_shared<std::string>();
  std::vector<std::string> cpp_rows;  // the Python rows run in the reference script
  for (const RowSpec& spec : kRows) {
    if (!is_python(spec.pipeline)) cpp_rows.emplace_back(spec.key);
  }
  CLI::App* app = parent.add_subcommand("ablation-row", "run one C++ row of the ablation in this process");
  app->group("");  // started by the ablation, not listed in the help
  app->add_option("--row", *row_key, "the row's id")->required()->check(CLI::IsMember(cpp_rows));
  app->add_option("--data", *data_dir, "train/test files");
  app->add_option("--batch-size", options->batch_size)->check(at_least(1));
  app->add_option("--workers", options->num_workers)->check(at_least(0));
  app->add_option("--epochs", options->epochs)->check(at_least(1));
  app->add_option("--max-batches", options->max_batches, "batches per pass, 0: all")->check(at_least(0));
  app->add_flag("--loader-only", options->loader_only);
  app->add_option("--threads", *num_threads, "OMP_NUM_THREADS (default: the usable CPUs)")->check(at_least(1));
  app->add_option("--seed", options->seed);
  app->add_option("--json", *json_path, "write the result here (default: stdout)");
  return {app, [=] {
            options->row = *find_row_id(*row_key);
            set_if_given(options->data_dir, *data_dir);
            set_if_given(options->json_path, *json_path);
            // May restart the process with OMP_NUM_THREADS set.
            cli::apply_process_settings(recommended_process_settings(*num_threads));
            return run_row(*options);
          }};
}

}  // namespace
}  // namespace feeder::bench

int main(int argc, char** argv) {
  using namespace feeder::bench;
  CLI::App app("feeder's benchmarks: the loader against LibTorch's, and the article's ablation", "feeder bench");
  app.require_subcommand(1);
  const std::vector<feeder::cli::Command> commands = {add_loader_command(app), add_ablation_command(app),
                                                      add_row_command(app)};
  return feeder::cli::run_command_line(app, std::vector<std::string>(argv + 1, argv + argc), commands);
}
