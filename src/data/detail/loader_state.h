#pragma once

// Internal to the loader: what restore() finds different between a saved LoaderState and the
// loader's own (LoaderState itself and its JSON are in feeder/data/loader.h). Consumer thread.

#include <string>

#include "feeder/data/loader.h"
#include "feeder/data/source.h"

namespace feeder::detail {

// Empty when a loader whose state at that position is `here` may continue `saved`; otherwise what
// differs, comma-separated, each saying what to change. `blocks_irrelevant`: the blocks cannot
// change this loader's order (no shuffle, a window covering the set, a single block), so a state
// may hold whatever block layout it was saved with; `window_given`: the caller chose the window.
std::string state_differences(const LoaderState& saved, const LoaderState& here, const SampleSource& source,
                              bool blocks_irrelevant, bool window_given);

}  // namespace feeder::detail
