// feeder: the command-line front end. Each command lives in its own file; main only dispatches and
// turns uncaught errors into a message and an exit code.

#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/bench.h"
#include "cli/commands.h"
#include "cli/train.h"
#include "feeder/error.h"
#include "feeder/version.h"

namespace {

constexpr std::string_view kUsage =
    "usage: feeder <command> [options]\n"
    "\n"
    "commands:\n"
    "  train      train the article's SimpleCNN on FashionMNIST (or your IDX/CSV/Parquet files)\n"
    "  bench      measure the loader against LibTorch's torch::data loader and memcpy\n"
    "  convert    convert between CSV, IDX and Parquet, with a size report\n"
    "  inspect    show a Parquet file's schema, row groups, codecs and encodings\n"
    "  version    print the version\n"
    "\n"
    "`feeder <command> --help` describes a command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string_view command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "train") return feeder::cli::train_main(args);
    if (command == "bench") return feeder::cli::bench_main(args);
    if (command == "convert") return feeder::cli::convert_main(args);
    if (command == "inspect") return feeder::cli::inspect_main(args);
    if (command == "version" || command == "--version") {
      std::cout << "feeder " << feeder::kVersion << "\n";
      return 0;
    }
    if (command == "help" || command == "--help" || command == "-h") {
      std::cout << kUsage;
      return 0;
    }
    std::cerr << "feeder: unknown command '" << command << "'\n\n" << kUsage;
    return 2;
  } catch (const feeder::OptionsError& error) {
    std::cerr << "feeder " << command << ": " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "feeder " << command << ": " << error.what() << "\n";
    return 1;
  }
}
