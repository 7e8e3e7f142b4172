#pragma once

// Summary statistics of the benchmarks' repeated measurements; empty when there are too few values.

#include <optional>
#include <vector>

namespace feeder::bench {

std::optional<double> median(std::vector<double> values);
std::optional<double> mean(const std::vector<double>& values);
// The sample standard deviation; empty below two values.
std::optional<double> standard_deviation(const std::vector<double>& values);

}  // namespace feeder::bench
