#pragma once

#include <vector>

#include "cli/command_line.h"

namespace feeder::cli {

// `feeder bench <what>`: `loader` measures feeder's loader against LibTorch's torch::data loader
// and a plain memcpy of the same output bytes, in one run; `ablation` runs the article's ablation.
void add_bench_commands(CLI::App& parent, std::vector<Command>& commands);

}  // namespace feeder::cli
