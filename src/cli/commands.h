#pragma once

// The commands that need no LibTorch; the feeder executable and the core tests link them.

#include <string>
#include <vector>

#include "app/command_line.h"

namespace feeder::cli {

// Register `feeder convert IN OUT ...` and `feeder inspect FILE` on `parent`.
Command add_convert_command(CLI::App& parent);
Command add_inspect_command(CLI::App& parent);

// The same commands on their own: `args` are the arguments after the command name; the return
// value is the exit code (see run_command_line).
int convert_main(const std::vector<std::string>& args);
int inspect_main(const std::vector<std::string>& args);

}  // namespace feeder::cli
