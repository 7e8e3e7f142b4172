// Loader::shuffle_advice: a streamed window that mixes too few pieces of a set whose labels are
// clustered (sorted by label, say) is reported from the label statistics, with what to change;
// a well mixed window, a set that is not clustered, or one in memory get no advice.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/streamed_store.h"
#include "feeder/data/loader.h"
#include "feeder/util/byte_size.h"

namespace feeder {
namespace {

using testing::StreamedStore;
using testing::uniform_blocks;

// A stream whose blocks report the smallest and largest label they hold, as Parquet statistics do.
class LabeledBlocks : public StreamedStore {
 public:
  using StreamedStore::StreamedStore;
  std::vector<std::pair<int64_t, int64_t>> block_label_ranges() const override {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (int64_t b = 0; b < num_blocks(); ++b) {
      const int64_t first = block_starts()[static_cast<size_t>(b)];
      std::pair<int64_t, int64_t> range{INT64_MAX, INT64_MIN};
      for (int64_t i = first; i < first + block_rows(b); ++i) {
        range.first = std::min(range.first, labels[static_cast<size_t>(i)]);
        range.second = std::max(range.second, labels[static_cast<size_t>(i)]);
      }
      ranges.push_back(range);
    }
    return ranges;
  }
  std::vector<int64_t> labels;
};

// 2000 samples of 10 labels in blocks of 10 rows, sorted by label or not.
std::shared_ptr<LabeledBlocks> labeled_source(bool sorted) {
  auto store = std::make_shared<ImageStore>(ImageShape{1, 2, 2}, 2000, true);
  for (int64_t i = 0; i < 2000; ++i) store->labels()[static_cast<size_t>(i)] = sorted ? i / 200 : (i * 7) % 10;
  auto source = std::make_shared<LabeledBlocks>(store, uniform_blocks(2000, 10));
  source->labels.assign(store->labels().begin(), store->labels().end());
  return source;
}

LoaderOptions options_with_window(int64_t window) {
  LoaderOptions options;
  options.batch_size = 16;
  options.num_workers = 0;
  options.memory_budget = 1 << 20;
  options.shuffle_window = window;
  return options;
}

TEST(ShuffleAdvice, AWindowOfFewPiecesOfASortedSetIsReportedWithWhatToChange) {
  const auto source = labeled_source(true);
  Loader loader(source, options_with_window(500));  // 50 pieces, each of one label
  const std::string advice = loader.shuffle_advice();
  EXPECT_NE(advice.find("streamed: the labels are clustered (a piece of about 10 samples holds about 1.0 of the 10 "
                        "labels, by the label statistics), and a shuffle window of 500 samples mixes about 50 pieces"),
            std::string::npos)
      << advice;
  EXPECT_NE(advice.find("Raise the shuffle window to "), std::string::npos) << advice;
  EXPECT_NE(advice.find("--shuffle-on-write SEED"), std::string::npos) << advice;
}

// The size a message shows after `prefix`, as a user would type it back.
int64_t size_after(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return -1;
  const size_t from = at + prefix.size();
  const size_t end = text.find_first_of("( ,", text.find(' ', from) + 1);
  return parse_byte_size(text.substr(from, end - from));
}

// The budget advised is the one that gives the window it names: the whole budget was scaled by the
// window's ratio before, which overstated it many times over at small budgets (the read buffers and
// the batches in flight do not grow with the window).
TEST(ShuffleAdvice, TheBudgetAdvisedGivesTheWindowItNamesAndLittleMore) {
  const auto source = labeled_source(true);
  for (const int64_t budget : {int64_t{23} << 10, int64_t{31} << 10, int64_t{43} << 10}) {  // 3 KiB of batch buffers
    LoaderOptions options = options_with_window(0);  // the window the budget allows
    options.memory_budget = budget;
    const Loader small(source, options);
    const std::string advice = small.shuffle_advice();
    SCOPED_TRACE(advice);
    const int64_t advised = size_after(advice, "Raise the memory budget to ");
    ASSERT_GT(advised, budget);
    options.memory_budget = advised;
    const Loader enough(source, options);
    EXPECT_EQ(enough.shuffle_advice(), "");
    options.memory_budget = advised * 9 / 10;
    EXPECT_NE(Loader(source, options).shuffle_advice(), "") << "a tenth less would do: the advice is not the least";
  }
  // A window the caller chose stays as it is: raising the budget alone would not help.
  const std::string advice = Loader(source, options_with_window(500)).shuffle_advice();
  EXPECT_NE(advice.find("Raise the shuffle window to 1440 samples, or"), std::string::npos) << advice;
  LoaderOptions tight = options_with_window(500);
  tight.memory_budget = 31 << 10;
  const std::string both = Loader(source, tight).shuffle_advice();
  EXPECT_NE(both.find("Raise the shuffle window to 1440 samples and the memory budget to "), std::string::npos) << both;
}

TEST(ShuffleAdvice, AWideEnoughWindowAnUnclusteredSetOrOneInMemoryGetNone) {
  EXPECT_EQ(Loader(labeled_source(true), options_with_window(1900)).shuffle_advice(), "");  // 190 pieces
  EXPECT_EQ(Loader(labeled_source(false), options_with_window(100)).shuffle_advice(), "");  // every piece mixed
  LoaderOptions unshuffled = options_with_window(0);
  unshuffled.shuffle = false;
  EXPECT_EQ(Loader(labeled_source(true), unshuffled).shuffle_advice(), "");
  auto store = std::make_shared<ImageStore>(ImageShape{1, 2, 2}, 100, true);
  EXPECT_EQ(Loader(store, options_with_window(10)).shuffle_advice(), "");
}

}  // namespace
}  // namespace feeder
