#pragma once

#include <string>
#include <vector>

namespace feeder::cli {

// `feeder bench ablation`: the article's ablation (Python reference rows and their C++
// counterparts), what comes after it, and batch-size / worker sweeps, each row in its own process.
// Writes ablation.md, ablation.json and ablation.png into --out. Returns the exit code.
int ablation_main(const std::vector<std::string>& args);

// `feeder bench ablation-row --row ID ...`: runs one C++ row (training, or the loader alone) in this
// process and writes its JSON; the orchestrator above spawns it. Returns the exit code.
int ablation_row_main(const std::vector<std::string>& args);

}  // namespace feeder::cli
