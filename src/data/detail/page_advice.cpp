#include "data/detail/page_advice.h"

#include <cmath>
#include <cstdio>

namespace feeder::detail {

namespace {

// Pages read this many times an epoch or more are reported. Each window reads and decompresses
// whole pages but decodes only its own rows of them (ParquetRowGroupReader::read_rows): DuckDB's
// label-sorted FashionMNIST streamed within a quarter of its size reads its row group about 12
// times an epoch, and feeder train's passes took 15-20% longer than in memory; within a half,
// about 5 times and 6-8% longer (bench/RESULTS.md).
constexpr double kMinDecodesToReport = 4;

}  // namespace

std::string page_advice(const SampleSource& source, const LoaderOptions& options) {
  if (random_access(source) || source.num_blocks() == 0) return {};
  const int64_t page_rows = source.largest_page_rows();
  if (page_rows <= 0 || options.shuffle_window <= 0) return {};
  const double size = static_cast<double>(source.size());
  const double piece_rows = size / static_cast<double>(source.num_blocks());
  const double windows = std::ceil(size / static_cast<double>(options.shuffle_window));
  // A page of P pieces, each in a window of its own chosen at random among W: the windows that take
  // one of its pieces each read it, W * (1 - (1 - 1/W)^P) of them on average. Unshuffled, its
  // pieces are in consecutive windows: as many as the page spans.
  const double pieces_per_page = static_cast<double>(page_rows) / piece_rows;
  const double decodes =
      options.shuffle ? windows * (1 - std::pow(1 - 1 / windows, pieces_per_page))
                      : std::ceil(static_cast<double>(page_rows) / static_cast<double>(options.shuffle_window));
  if (decodes < kMinDecodesToReport) return {};
  char text[1024];
  std::snprintf(text, sizeof(text),
                "%s: its pages hold up to %lld rows each (a row group's column in one page, as DuckDB writes "
                "them, and feeder convert a single file), and the stream takes pieces of about %.0f rows: each of an epoch's %.0f "
                "windows reads and decompresses whole pages for the rows it takes from them, about "
                "%.0f times the set an epoch, on the cores training needs. Rewrite it once with `feeder convert IN "
                "OUTDIR/` (pages of one piece each), or raise the memory budget so that fewer windows "
                "cover the set.",
                source.name().c_str(), static_cast<long long>(page_rows), piece_rows, windows, decodes);
  return text;
}

}  // namespace feeder::detail
