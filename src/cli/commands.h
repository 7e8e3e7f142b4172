#pragma once

#include <string>
#include <vector>

namespace feeder::cli {

// Each command takes its arguments (without the program and command names), prints to stdout/stderr
// and returns the process exit code. Errors in input files are reported, not thrown.
int convert_main(const std::vector<std::string>& args);
int inspect_main(const std::vector<std::string>& args);

}  // namespace feeder::cli
