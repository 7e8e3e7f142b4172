// The ablation's row table and the benchmarks' statistics.

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ablation/rows.h"
#include "common/statistics.h"

namespace feeder::bench {
namespace {

TEST(AblationRows, KeysAreUniqueAndFindTheirRow) {
  std::set<std::string_view> keys;
  for (const RowSpec& spec : kRows) {
    EXPECT_TRUE(keys.insert(spec.key).second) << spec.key;
    EXPECT_EQ(find_row_id(spec.key), spec.id) << spec.key;
    EXPECT_EQ(&row_spec(spec.id), &spec) << spec.key;
  }
  EXPECT_FALSE(find_row_id("no-such-row").has_value());
}

TEST(AblationRows, MethodTextFillsInTheWorkerCount) {
  EXPECT_EQ(method_text(row_spec(RowId::kPyWorkers), 4), "+ num_workers=4");
  EXPECT_EQ(method_text(row_spec(RowId::kCppWorkers), 2), "+ 2 worker threads, new each epoch");
  EXPECT_EQ(method_text(row_spec(RowId::kPyV1B16), 4), "naive v1, batch 16");
}

TEST(AblationRows, WorkerCountsFollowTheRowsKind) {
  EXPECT_EQ(row_workers(row_spec(RowId::kPyV1B512), 8), 0);
  EXPECT_EQ(row_workers(row_spec(RowId::kFeederDefaults), 8), 1);
  EXPECT_EQ(row_workers(row_spec(RowId::kCppPersistent), 8), 8);
}

TEST(AblationRows, OnlyTheMemcpyBoundDoesNotTrain) {
  for (const RowSpec& spec : kRows) EXPECT_EQ(spec.trains, spec.id != RowId::kMemcpy) << spec.key;
}

TEST(Statistics, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(median({3, 1, 2}), 2.0);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_FALSE(median({}).has_value());
}

TEST(Statistics, MeanAndSampleStandardDeviation) {
  EXPECT_EQ(mean({1, 2, 3, 4}), 2.5);
  EXPECT_NEAR(*standard_deviation({2, 4, 4, 4, 5, 5, 7, 9}), 2.138089935, 1e-9);
  EXPECT_FALSE(standard_deviation({1}).has_value());
}

}  // namespace
}  // namespace feeder::bench
