#pragma once

#include "app/command_line.h"

namespace feeder::cli {

// `feeder train`: trains the article's SimpleCNN on an image set and reports per-epoch timings.
// Its run() may re-execute the process to fix the thread count, so it must come before LibTorch
// has run anything.
Command add_train_command(CLI::App& parent);

}  // namespace feeder::cli
