#pragma once

// The examples' few command-line arguments: positional paths, and `--max-batches N` so that the
// tests can run each one on a few batches.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

struct ExampleArgs {
  std::vector<std::string> paths;
  int64_t max_batches = -1;  // per epoch; -1: every batch
};

inline ExampleArgs parse_example_args(int argc, char** argv) {
  ExampleArgs args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--max-batches" && i + 1 < argc) {
      args.max_batches = std::stoll(argv[++i]);
    } else if (arg.starts_with("--")) {
      throw std::invalid_argument("unknown option " + arg + " (the only option is --max-batches N)");
    } else {
      args.paths.push_back(arg);
    }
  }
  return args;
}
