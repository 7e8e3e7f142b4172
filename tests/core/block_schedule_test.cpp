// The stream's schedule on its own, without threads: which blocks each batch needs, the order to
// read them, the loads they are held in and when those may be freed.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "data/detail/block_schedule.h"
#include "feeder/data/sampler.h"

namespace feeder {
namespace {

using detail::BlockIndex;
using detail::BlockSchedule;
using detail::LoadFrontier;

std::vector<int64_t> identity_order(int64_t n) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  return order;
}

// Samples [first, last) appended to `order`.
void append_range(std::vector<int64_t>& order, int64_t first, int64_t last) {
  for (int64_t s = first; s < last; ++s) order.push_back(s);
}

int64_t own_group(int64_t block) { return block; }

// The blocks of the schedule's slots, in read order.
std::vector<int64_t> read_blocks(const BlockSchedule& schedule) {
  std::vector<int64_t> blocks;
  for (const int32_t id : schedule.read_queue()) blocks.push_back(schedule.slot(id).block);
  return blocks;
}

std::vector<int64_t> load_blocks(const BlockSchedule& schedule, size_t load) {
  std::vector<int64_t> blocks;
  for (const int32_t id : schedule.loads()[load].slots) blocks.push_back(schedule.slot(id).block);
  return blocks;
}

// Four blocks of ten samples.
const std::vector<int64_t> kStarts = {0, 10, 20, 30, 40};

TEST(BlockIndex, FindsTheBlockOfEverySampleWithBlocksOfUnevenSizes) {
  for (const std::vector<int64_t>& starts :
       {std::vector<int64_t>{0, 30, 35, 40, 45}, std::vector<int64_t>{0, 1, 2, 3, 100}, std::vector<int64_t>{0, 7},
        std::vector<int64_t>{0, 3, 6, 9, 12, 15, 18, 21, 1000}}) {
    const BlockIndex index(starts);
    ASSERT_EQ(index.num_blocks(), static_cast<int64_t>(starts.size()) - 1);
    for (int64_t block = 0; block < index.num_blocks(); ++block) {
      EXPECT_EQ(index.block_start(block), starts[static_cast<size_t>(block)]);
      for (int64_t s = starts[static_cast<size_t>(block)]; s < starts[static_cast<size_t>(block) + 1]; ++s)
        ASSERT_EQ(index.block_of(s), block) << "sample " << s;
    }
  }
}

TEST(BlockSchedule, OneWindowReadsEachBlockOnceInTheOrderBatchesNeedThem) {
  const BlockIndex index(kStarts);
  const EpochPlan plan(identity_order(40), 10, false, 0, 1);
  const BlockSchedule schedule(plan, std::vector<int64_t>{0}, 0, index, own_group, {});
  EXPECT_EQ(read_blocks(schedule), (std::vector<int64_t>{0, 1, 2, 3}));
  ASSERT_EQ(schedule.loads().size(), 1u);
  EXPECT_EQ(schedule.loads()[0].last_batch, 3);
  EXPECT_EQ(load_blocks(schedule, 0), (std::vector<int64_t>{0, 1, 2, 3}));
  for (const BlockSchedule::Slot& slot : schedule.slots()) {
    EXPECT_EQ(slot.next_in_group, -1) << "every block is a read group of its own";
    EXPECT_FALSE(slot.read_ahead);
  }
}

TEST(BlockSchedule, ABatchNeedsTheSlotAndRowOfEachOfItsSamples) {
  // Window 0 holds blocks 1 then 0, window 1 blocks 3 then 2, each in a shuffled order of rows.
  std::vector<int64_t> order;
  append_range(order, 15, 20);
  append_range(order, 10, 15);
  append_range(order, 0, 10);
  append_range(order, 30, 40);
  append_range(order, 20, 30);
  const BlockIndex index(kStarts);
  const EpochPlan plan(order, 10, false, 0, 1);
  const BlockSchedule schedule(plan, std::vector<int64_t>{0, 20}, 0, index, own_group, {});
  EXPECT_EQ(read_blocks(schedule), (std::vector<int64_t>{1, 0, 3, 2}));

  std::vector<int32_t> slots;
  std::vector<int64_t> rows;
  schedule.batch_needs(0, slots, rows);
  EXPECT_EQ(slots, std::vector<int32_t>(10, 0));
  EXPECT_EQ(rows, (std::vector<int64_t>{5, 6, 7, 8, 9, 0, 1, 2, 3, 4}));
  schedule.batch_needs(2, slots, rows);
  ASSERT_EQ(slots.size(), 10u);
  EXPECT_EQ(schedule.slot(slots[0]).block, 3);
  EXPECT_EQ(rows, identity_order(10));
}

TEST(BlockSchedule, EachWindowIsALoadHeldUntilTheLastBatchThatTouchesIt) {
  // Batches of 15 over windows of 20: batch 1 reads the end of window 0 and the start of window 1.
  const BlockIndex index(kStarts);
  const EpochPlan plan(identity_order(40), 15, false, 0, 1);
  const BlockSchedule schedule(plan, std::vector<int64_t>{0, 20}, 0, index, own_group, {});
  ASSERT_EQ(schedule.loads().size(), 2u);
  EXPECT_EQ(load_blocks(schedule, 0), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(schedule.loads()[0].last_batch, 1);
  EXPECT_EQ(load_blocks(schedule, 1), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(schedule.loads()[1].last_batch, 2);
  EXPECT_EQ(read_blocks(schedule), (std::vector<int64_t>{0, 1, 2, 3}));
  std::vector<int32_t> slots;
  std::vector<int64_t> rows;
  schedule.batch_needs(1, slots, rows);
  EXPECT_EQ(schedule.slot(slots.front()).load, 0);
  EXPECT_EQ(schedule.slot(slots.back()).load, 1);
}

TEST(BlockSchedule, AResumedEpochSchedulesOnlyTheBlocksOfTheBatchesLeft) {
  const BlockIndex index(kStarts);
  const EpochPlan plan(identity_order(40), 10, false, 0, 1);
  const BlockSchedule schedule(plan, std::vector<int64_t>{0, 20}, 2, index, own_group, {});
  EXPECT_EQ(schedule.first_batch(), 2);
  EXPECT_EQ(schedule.end_batch(), 4);
  EXPECT_EQ(read_blocks(schedule), (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(schedule.loads().size(), 1u) << "window 0's batches were delivered before the state was saved";
  EXPECT_EQ(schedule.loads()[0].last_batch, 3);
  std::vector<int32_t> slots;
  std::vector<int64_t> rows;
  schedule.batch_needs(3, slots, rows);
  EXPECT_EQ(schedule.slot(slots[0]).block, 3);
}

TEST(BlockSchedule, AResumeAtTheEpochsEndSchedulesNothing) {
  const BlockIndex index(kStarts);
  const EpochPlan plan(identity_order(40), 10, false, 0, 1);
  const BlockSchedule schedule(plan, std::vector<int64_t>{0}, 4, index, own_group, {});
  EXPECT_TRUE(schedule.slots().empty());
  EXPECT_TRUE(schedule.loads().empty());
  EXPECT_TRUE(schedule.read_queue().empty());
}

TEST(BlockSchedule, BlocksOfOneReadGroupAreChainedWithinTheirLoadOnly) {
  // Window 0 reads blocks 0, 2, 1, 3; blocks 0-1 and 2-3 are pieces of one row group each.
  std::vector<int64_t> order;
  append_range(order, 0, 10);
  append_range(order, 20, 30);
  append_range(order, 10, 20);
  append_range(order, 30, 40);
  const BlockIndex index(kStarts);
  const auto pairs = [](int64_t block) { return block / 2; };
  {
    const EpochPlan plan(order, 10, false, 0, 1);
    const BlockSchedule schedule(plan, std::vector<int64_t>{0}, 0, index, pairs, {});
    ASSERT_EQ(read_blocks(schedule), (std::vector<int64_t>{0, 2, 1, 3}));
    EXPECT_EQ(schedule.slot(0).next_in_group, 2) << "block 0 is read with block 1";
    EXPECT_EQ(schedule.slot(1).next_in_group, 3) << "block 2 is read with block 3";
    EXPECT_EQ(schedule.slot(2).next_in_group, -1);
    EXPECT_EQ(schedule.slot(3).next_in_group, -1);
  }
  {
    // Every block in one group, two windows: the chain stops at the window's end.
    const EpochPlan plan(identity_order(40), 10, false, 0, 1);
    const BlockSchedule schedule(plan, std::vector<int64_t>{0, 20}, 0, index, [](int64_t) { return int64_t{0}; }, {});
    EXPECT_EQ(schedule.slot(0).next_in_group, 1);
    EXPECT_EQ(schedule.slot(1).next_in_group, -1);
    EXPECT_EQ(schedule.slot(2).next_in_group, 3);
    EXPECT_EQ(schedule.slot(3).next_in_group, -1);
  }
}

TEST(BlockSchedule, OnlyTheFirstWindowTakesBlocksReadAhead) {
  const BlockIndex index(kStarts);
  const EpochPlan plan(identity_order(40), 10, false, 0, 1);
  const std::vector<uint8_t> ready_ahead = {1, 0, 1, 0};  // blocks 0 and 2
  const BlockSchedule schedule(plan, std::vector<int64_t>{0, 20}, 0, index, [](int64_t) { return int64_t{0}; },
                               ready_ahead);
  EXPECT_TRUE(schedule.slot(0).read_ahead);
  EXPECT_FALSE(schedule.slot(2).read_ahead) << "block 2 is in window 1: read again, in its turn";
  EXPECT_EQ(read_blocks(schedule), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(load_blocks(schedule, 0), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(schedule.slot(1).next_in_group, -1) << "a block read ahead is no read to chain";
}

TEST(BlockSchedule, TheEpochsPaddingIsALoadOfItsOwnAfterTheWindows) {
  // 21 samples on two ranks: the order is padded with sample 0 at position 21, rank 1's last batch.
  const BlockIndex index(std::vector<int64_t>{0, 10, 20, 21});
  const EpochPlan plan(identity_order(21), 5, false, 1, 2);
  ASSERT_EQ(plan.num_batches(), 3);
  ASSERT_EQ(plan.batch_span(2), (std::pair<int64_t, int64_t>{21, 22}));
  const BlockSchedule schedule(plan, std::vector<int64_t>{0}, 0, index, own_group, {});
  ASSERT_EQ(schedule.loads().size(), 2u);
  EXPECT_EQ(load_blocks(schedule, 0), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(schedule.loads()[0].last_batch, 1);
  EXPECT_EQ(load_blocks(schedule, 1), (std::vector<int64_t>{0})) << "block 0 again, for the padding";
  EXPECT_EQ(schedule.loads()[1].last_batch, 2);
  EXPECT_EQ(read_blocks(schedule), (std::vector<int64_t>{0, 1, 0}));
  std::vector<int32_t> slots;
  std::vector<int64_t> rows;
  schedule.batch_needs(2, slots, rows);
  EXPECT_EQ(slots, (std::vector<int32_t>{2}));
  EXPECT_EQ(rows, (std::vector<int64_t>{0}));
}

TEST(BlockSchedule, ARankSchedulesOnlyTheBlocksOfItsOwnSlices) {
  // Two ranks, batches of 5 per rank: rank 1 reads positions 5-9 and 15-19 of every 20.
  const BlockIndex index(std::vector<int64_t>{0, 5, 10, 15, 20, 25, 30, 35, 40});
  const EpochPlan plan(identity_order(40), 5, false, 1, 2);
  const BlockSchedule schedule(plan, std::vector<int64_t>{0}, 0, index, own_group, {});
  EXPECT_EQ(read_blocks(schedule), (std::vector<int64_t>{1, 3, 5, 7}));
}

TEST(BlockSchedule, IsTheSameForTheSameEpoch) {
  std::vector<int64_t> starts{0};
  for (int64_t b = 0; b < 12; ++b) starts.push_back(starts.back() + 3 + b % 4);
  const BlockIndex index(starts);
  const BlockShuffle shuffled = block_shuffle_order(starts, 16, true, 7, 3);
  std::vector<int64_t> window_begins;
  for (const ShuffleWindow& window : shuffled.windows) window_begins.push_back(window.begin);
  const EpochPlan plan(shuffled.order, 4, false, 0, 1);
  const BlockSchedule a(plan, window_begins, 1, index, own_group, {});
  const BlockSchedule b(plan, window_begins, 1, index, own_group, {});
  EXPECT_EQ(read_blocks(a), read_blocks(b));
  ASSERT_EQ(a.loads().size(), b.loads().size());
  ASSERT_EQ(a.loads().size(), window_begins.size());
  for (size_t l = 0; l < a.loads().size(); ++l) {
    EXPECT_EQ(a.loads()[l].last_batch, b.loads()[l].last_batch);
    if (l > 0) {
      EXPECT_GE(a.loads()[l].last_batch, a.loads()[l - 1].last_batch) << "loads end in batch order";
    }
  }
  // Every block is read once: windows are of whole blocks.
  std::vector<int64_t> blocks = read_blocks(a);
  std::sort(blocks.begin(), blocks.end());
  EXPECT_EQ(std::adjacent_find(blocks.begin(), blocks.end()), blocks.end());
}

TEST(LoadFrontier, FreesALoadOnlyOnceEveryBatchUpToItsLastIsAssembled) {
  const BlockIndex index(kStarts);
  const EpochPlan plan(identity_order(40), 10, false, 0, 1);
  const BlockSchedule schedule(plan, std::vector<int64_t>{0, 20}, 0, index, own_group, {});
  ASSERT_EQ(schedule.loads()[0].last_batch, 1);
  ASSERT_EQ(schedule.loads()[1].last_batch, 3);
  LoadFrontier frontier;
  frontier.reset(schedule);
  using Range = std::pair<size_t, size_t>;
  EXPECT_EQ(frontier.mark_assembled(schedule, 1), (Range{0, 0})) << "batch 0 is not assembled yet";
  EXPECT_EQ(frontier.frontier(), 0);
  EXPECT_EQ(frontier.mark_assembled(schedule, 0), (Range{0, 1}));
  EXPECT_EQ(frontier.frontier(), 2);
  EXPECT_EQ(frontier.mark_assembled(schedule, 3), (Range{1, 1}));
  EXPECT_EQ(frontier.mark_assembled(schedule, 2), (Range{1, 2}));
  EXPECT_EQ(frontier.frontier(), 4);
  EXPECT_EQ(frontier.mark_assembled(schedule, 7), (Range{2, 2})) << "a batch outside the schedule frees nothing";
}

TEST(LoadFrontier, StartsAtAResumedEpochsFirstBatch) {
  const BlockIndex index(kStarts);
  const EpochPlan plan(identity_order(40), 10, false, 0, 1);
  const BlockSchedule schedule(plan, std::vector<int64_t>{0, 20}, 2, index, own_group, {});
  LoadFrontier frontier;
  frontier.reset(schedule);
  EXPECT_EQ(frontier.frontier(), 2);
  using Range = std::pair<size_t, size_t>;
  EXPECT_EQ(frontier.mark_assembled(schedule, 0), (Range{0, 0})) << "batch 0 was before the resume";
  EXPECT_EQ(frontier.mark_assembled(schedule, 2), (Range{0, 0}));
  EXPECT_EQ(frontier.mark_assembled(schedule, 3), (Range{0, 1}));
}

}  // namespace
}  // namespace feeder
