#pragma once

#include <string>
#include <vector>

namespace feeder::cli {

// `feeder bench <what>`: `loader` measures feeder's loader against LibTorch's torch::data loader
// and a plain memcpy of the same output bytes, in one run. Returns the exit code.
int bench_main(const std::vector<std::string>& args);

}  // namespace feeder::cli
