#include "cli/bench.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "feeder/error.h"

namespace feeder::cli {
namespace {

// A benchmark executable, built beside this one.
std::filesystem::path bench_executable(const std::string& name) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw DataError("cannot find this executable through /proc/self/exe: " + error.message());
  return self.parent_path() / name;
}

// Replaces this process with the benchmark and `args`; returns only when that fails. `bench
// stream` runs feeder-stream-bench (no LibTorch in the process it measures), `bench images`
// feeder-image-bench (no LibTorch either), `bench distributed` feeder-dist-bench, the rest
// feeder-bench.
int exec_bench(std::vector<std::string> args) {
  // The benchmarks live in four executables: list them all here, where each only knows its own.
  const bool known = !args.empty() && (args.front() == "loader" || args.front() == "ablation" ||
                                       args.front() == "stream" || args.front() == "images" ||
                                       args.front() == "distributed" || args.front() == "ablation-row");
  const bool help = !args.empty() && (args.front() == "-h" || args.front() == "--help");
  if (!known && !help && !args.empty()) std::cerr << "feeder bench: no benchmark '" << args.front() << "'\n\n";
  if (!known) {
    (help ? std::cout : std::cerr) << "feeder's benchmarks, each printing ratios against a reference measured in the same run\n"
                 "Usage: feeder bench BENCHMARK [OPTIONS]   (feeder bench BENCHMARK --help for its options)\n\n"
                 "Benchmarks:\n"
                 "  loader       feeder's loader against LibTorch's torch::data loader and a memcpy of the same bytes\n"
                 "  ablation     the article's data-pipeline ablation, each row in its own process\n"
                 "  stream       a sharded set larger than the memory budget, streamed against in memory\n"
                 "  images       the image loader (crops, resizing) against a bare full decode of the same images\n"
                 "  distributed  data-parallel training over c10d and checkpoints, against one process\n";
    return help ? 0 : 2;
  }
  std::string name = "feeder-bench";
  if (!args.empty() && args.front() == "stream") {
    name = "feeder-stream-bench";
    args.erase(args.begin());
  } else if (!args.empty() && args.front() == "distributed") {
    name = "feeder-dist-bench";
    args.erase(args.begin());
  } else if (!args.empty() && args.front() == "images") {
    name = "feeder-image-bench";
    args.erase(args.begin());
  }
  const std::filesystem::path bench = bench_executable(name);
  std::vector<std::string> argv = {bench.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> pointers;
  for (std::string& arg : argv) pointers.push_back(arg.data());
  pointers.push_back(nullptr);
  ::execv(bench.c_str(), pointers.data());
  throw DataError(bench.string() + ": cannot run it (" + std::strerror(errno) +
                  "); build it with `cmake --build build --target " + name + "`");
}

}  // namespace

Command add_bench_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "bench",
      "measure the loader (bench loader), streaming under a memory budget (bench stream), data-parallel "
      "training and checkpoints (bench distributed), the image loader against a bare decode (bench images) and run "
      "the article's ablation (bench ablation)");
  // Everything after `bench`, --help included, belongs to the benchmark executable.
  app->prefix_command();
  app->set_help_flag();
  return {app, [app] { return exec_bench(app->remaining()); }};
}

}  // namespace feeder::cli
