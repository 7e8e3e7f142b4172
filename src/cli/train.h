#pragma once

#include <string>
#include <vector>

namespace feeder::cli {

// `feeder train`: trains the article's SimpleCNN on an image set and reports per-epoch timings.
// Takes the arguments after the command name; returns the exit code (2: bad flags, 1: bad data).
// Call it before LibTorch has run anything: it may re-execute the process to fix the thread count.
int train_main(const std::vector<std::string>& args);

}  // namespace feeder::cli
