#include "data/detail/shuffle_advice.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>

#include "feeder/util/byte_size.h"

namespace feeder::detail {

namespace {

// A window of k pieces, each holding about L of C labels, gives a label a share of the window that
// varies by about sqrt((C / L - 1) / k) of its mean (binomial). Label-sorted FashionMNIST streamed
// for 5 epochs (bench/RESULTS.md, "Streaming a set sorted by label") trained 0.7 points below a
// full shuffle at 0.23 and 1.7 points below at 0.33.
constexpr double kMaxShareSpread = 0.25;


}  // namespace

std::string shuffle_advice(const SampleSource& source, const LoaderOptions& options, bool window_given,
                           const std::function<int64_t(int64_t)>& budget_for_window) {
  if (random_access(source) || !options.shuffle || options.shuffle_window >= source.size()) return {};
  std::vector<std::pair<int64_t, int64_t>> ranges;
  try {
    ranges = source.block_label_ranges();
  } catch (const std::exception&) {
    return {};  // advice only: the reads will report what is wrong with the files
  }
  if (ranges.empty() || static_cast<int64_t>(ranges.size()) != source.num_blocks()) return {};
  int64_t lowest = ranges[0].first;
  int64_t highest = ranges[0].second;
  for (const auto& [low, high] : ranges) {
    lowest = std::min(lowest, low);
    highest = std::max(highest, high);
  }
  const double labels = static_cast<double>(highest) - static_cast<double>(lowest) + 1;
  if (labels < 2 || labels > 1e5) return {};  // one label, or no classes (a regression target)
  double labels_per_piece = 0;
  for (int64_t b = 0; b < source.num_blocks(); ++b) {
    const auto& [low, high] = ranges[static_cast<size_t>(b)];
    const double span = std::min(labels, static_cast<double>(high) - static_cast<double>(low) + 1);
    labels_per_piece += span * static_cast<double>(source.block_rows(b)) / static_cast<double>(source.size());
  }
  if (labels_per_piece > labels / 2) return {};  // labels are not clustered by storage
  const double piece_rows = static_cast<double>(source.size()) / static_cast<double>(source.num_blocks());
  const double pieces = std::max(1.0, static_cast<double>(options.shuffle_window) / piece_rows);
  const double spread = std::sqrt((labels / labels_per_piece - 1) / pieces);
  if (spread <= kMaxShareSpread) return {};
  const double pieces_needed = (labels / labels_per_piece - 1) / (kMaxShareSpread * kMaxShareSpread);
  const double window_needed = std::min(pieces_needed * piece_rows, static_cast<double>(source.size()));
  const int64_t window = static_cast<int64_t>(std::ceil(window_needed));
  // The remedy that works for how the window was set: a window the caller chose stays as it is
  // whatever the budget.
  const int64_t budget_needed = round_up_to_shown_size(budget_for_window(window));
  char remedy[256];
  if (window_given && budget_needed <= options.memory_budget)
    std::snprintf(remedy, sizeof(remedy), "Raise the shuffle window to %lld samples", static_cast<long long>(window));
  else if (window_given)
    std::snprintf(remedy, sizeof(remedy), "Raise the shuffle window to %lld samples and the memory budget to %s",
                  static_cast<long long>(window), format_byte_size(budget_needed).c_str());
  else
    std::snprintf(remedy, sizeof(remedy), "Raise the memory budget to %s (a window of %lld samples)",
                  format_byte_size(budget_needed).c_str(), static_cast<long long>(window));
  char text[1024];
  std::snprintf(text, sizeof(text),
                "%s: the labels are clustered (a piece of about %.0f samples holds about %.1f of the %.0f labels, "
                "by the label statistics), and a shuffle window of %lld samples mixes about %.0f pieces: a "
                "label's share of a window varies by about %.0f%%, and training may reach a lower accuracy "
                "than with a full shuffle. %s, or %s.",
                source.name().c_str(), piece_rows, labels_per_piece, labels,
                static_cast<long long>(options.shuffle_window), pieces, 100 * spread, remedy,
                source.encoded() ? "write the set with its rows in a shuffled order (an image folder: `feeder convert FOLDER OUTDIR/ --shuffle-on-write SEED`)"
                                 : "rewrite the set with `feeder convert IN OUTDIR/ --shuffle-on-write SEED`");
  return text;
}

}  // namespace feeder::detail
