#pragma once

#include <string>
#include <vector>

namespace feeder::cli {

// `feeder convert ...` and `feeder inspect ...` on their own: `args` are the arguments after the
// command name; the return value is the exit code (see run_command_line).
int convert_main(const std::vector<std::string>& args);
int inspect_main(const std::vector<std::string>& args);

}  // namespace feeder::cli
