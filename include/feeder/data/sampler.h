#pragma once

#include <cstdint>
#include <vector>

namespace feeder {

// The order in which an epoch visits samples 0..num_samples-1. A pure function of
// (num_samples, shuffle, seed, epoch): the same on every machine and for any number of workers,
// so a run can resume at any epoch by number alone.
std::vector<int64_t> epoch_order(int64_t num_samples, bool shuffle, uint64_t seed, int64_t epoch);

}  // namespace feeder
