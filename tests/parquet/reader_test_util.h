#pragma once

// Helpers shared by the Parquet reader tests.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "feeder/error.h"
#include "feeder/formats/parquet/reader.h"

namespace feeder::parquet::testing {

inline std::string fixture(const std::string& relative) {
  return std::string(FEEDER_TEST_DATA_DIR) + "/parquet-testing/" + relative;
}

inline ParquetFile open_fixture(const std::string& relative, bool verify_checksums = false) {
  ReaderOptions options;
  options.verify_checksums = verify_checksums;
  return ParquetFile::open(fixture(relative), options);
}

template <class T>
const std::vector<T>& values_of(const ColumnData& column) {
  return std::get<std::vector<T>>(column.values);
}

// For a temporary ColumnData: returns the values by value, so no reference outlives the column.
template <class T>
std::vector<T> values_of(ColumnData&& column) {
  return std::get<std::vector<T>>(std::move(column.values));
}

// Sum of the non-null values as double (and NaNs skipped), as INDEX.md computes them.
template <class T>
double sum_of(const ColumnData& column) {
  const auto& v = values_of<T>(column);
  double sum = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (column.valid[i] && !std::isnan(static_cast<double>(v[i]))) sum += static_cast<double>(v[i]);
  }
  return sum;
}

// Exact integer sum of the non-null values.
template <class T>
__int128 int_sum_of(const ColumnData& column) {
  const auto& v = values_of<T>(column);
  __int128 sum = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (column.valid[i]) sum += v[i];
  }
  return sum;
}

// Runs `body`, expecting a DataError whose message contains `expected`; fails when nothing is thrown.
template <class F>
std::string expect_data_error(F&& body, const std::string& expected) {
  try {
    body();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << "message: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a DataError containing '" << expected << "', nothing was thrown";
  return {};
}

}  // namespace feeder::parquet::testing
