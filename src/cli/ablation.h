#pragma once

#include "cli/command_line.h"

namespace feeder::cli {

// `feeder bench ablation`: the article's ablation (Python reference rows and their C++
// counterparts), what comes after it, and batch-size / worker sweeps, each row in its own process.
// Writes ablation.md, ablation.json and ablation.png into --out.
Command add_ablation_command(CLI::App& bench);

// `feeder bench ablation-row --row ID ...` (not listed in the help): runs one C++ row (training, or
// the loader alone) in this process and writes its JSON; the orchestrator above spawns it.
Command add_ablation_row_command(CLI::App& bench);

}  // namespace feeder::cli
