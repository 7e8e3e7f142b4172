#pragma once

// Internal to the loader: whether a streamed shuffle window mixes enough pieces for the way labels
// are laid out in the set, judged from the source's label statistics alone (no sample is read).

#include <cstdint>
#include <functional>
#include <string>

#include "feeder/data/loader.h"
#include "feeder/data/source.h"

namespace feeder::detail {

// Empty when the window mixes well enough or nothing is known; otherwise one paragraph saying
// what was found and what to change. `options` are the loader's resolved options; `window_given`
// whether the caller chose the window (else the budget did); `budget_for_window(w)`: the smallest
// memory budget whose default window is w.
std::string shuffle_advice(const SampleSource& source, const LoaderOptions& options, bool window_given,
                           const std::function<int64_t(int64_t)>& budget_for_window);

}  // namespace feeder::detail
