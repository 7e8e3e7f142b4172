#include "cli/bench.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "feeder/error.h"

namespace feeder::cli {
namespace {

// The benchmark executable, built beside this one.
std::filesystem::path bench_executable() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw DataError("cannot find this executable through /proc/self/exe: " + error.message());
  return self.parent_path() / "feeder-bench";
}

// Replaces this process with feeder-bench and `args`; returns only when that fails.
int exec_bench(const std::vector<std::string>& args) {
  const std::filesystem::path bench = bench_executable();
  std::vector<std::string> argv = {bench.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> pointers;
  for (std::string& arg : argv) pointers.push_back(arg.data());
  pointers.push_back(nullptr);
  ::execv(bench.c_str(), pointers.data());
  throw DataError(bench.string() + ": cannot run it (" + std::strerror(errno) +
                  "); build it with `cmake --build build --target feeder-bench`");
}

}  // namespace

Command add_bench_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "bench", "measure the loader (bench loader) and run the article's ablation (bench ablation)");
  // Everything after `bench`, --help included, belongs to the benchmark executable.
  app->prefix_command();
  app->set_help_flag();
  return {app, [app] { return exec_bench(app->remaining()); }};
}

}  // namespace feeder::cli
