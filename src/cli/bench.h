#pragma once

#include "app/command_line.h"

namespace feeder::cli {

// `feeder bench <what> ...`: the benchmarks live in their own executable (bench/, built as
// feeder-bench beside feeder); this command hands its arguments to it, replacing this process.
Command add_bench_command(CLI::App& parent);

}  // namespace feeder::cli
