#include "common/statistics.h"

#include <algorithm>
#include <cmath>

namespace feeder::bench {

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

std::optional<double> mean(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  double sum = 0;
  for (double value : values) sum += value;
  return sum / static_cast<double>(values.size());
}

std::optional<double> standard_deviation(const std::vector<double>& values) {
  if (values.size() < 2) return std::nullopt;
  const double average = *mean(values);
  double squares = 0;
  for (double value : values) squares += (value - average) * (value - average);
  return std::sqrt(squares / static_cast<double>(values.size() - 1));
}

}  // namespace feeder::bench
