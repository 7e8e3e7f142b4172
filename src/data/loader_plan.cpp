// LoaderPlan: the loader's options checked and resolved once, with its budget arithmetic; pure
// functions of the source and the options, called by the loader's consumer thread.

#include "data/detail/loader_plan.h"

#include <xxhash.h>

#include <algorithm>
#include <string>

#include "data/detail/buffer_pool.h"
#include "data/detail/page_advice.h"
#include "data/detail/shuffle_advice.h"
#include "feeder/data/sampler.h"
#include "feeder/error.h"
#include "feeder/system/runtime.h"
#include "feeder/util/byte_size.h"

namespace feeder::detail {
namespace {

// Far above any batch that fits a machine's memory, and low enough that batch_size * world_size *
// prefetch cannot overflow.
constexpr int64_t kMaxBatchSize = int64_t{1} << 30;

// The options a loader checks itself; the batch shape and the ranks are EpochPlan::check's.
void validate(const LoaderOptions& options) {
  if (options.num_workers < 0)
    throw OptionsError("num_workers must be 0 (assemble on the calling thread) or more, got " +
                       std::to_string(options.num_workers));
  if (options.num_workers > 256)
    throw OptionsError("num_workers " + std::to_string(options.num_workers) + " is absurd; use at most 256");
  if (options.batch_size > kMaxBatchSize)
    throw OptionsError("batch_size " + std::to_string(options.batch_size) + " is absurd; use at most " +
                       std::to_string(kMaxBatchSize));
  if (options.prefetch < 1)
    throw OptionsError("prefetch must be at least 1 batch, got " + std::to_string(options.prefetch));
  if (options.prefetch > 1024)
    throw OptionsError("prefetch " + std::to_string(options.prefetch) + " is absurd; use at most 1024");
  if (!(options.normalization.std > 0.0f))
    throw OptionsError("normalization std must be positive, got " + std::to_string(options.normalization.std));
  if (options.dtype == ImageDtype::kUint8 && (options.normalization.mean != 0.0f || options.normalization.std != 1.0f))
    throw OptionsError("uint8 images are served unnormalised: leave normalization at mean 0, std 1 (normalise on "
                       "the device), or ask for float32");
  if (options.memory_budget < 0)
    throw OptionsError("memory_budget must be positive (or 0 for the default), got " +
                       std::to_string(options.memory_budget));
  if (options.shuffle_window < 0)
    throw OptionsError("shuffle_window must be positive (or 0 for the default), got " +
                       std::to_string(options.shuffle_window));
}

// What the source's kind of samples allows: a sample stage for encoded images and only for them,
// float32 pixels served as they are.
void check_against_source(const SampleSource& source, const LoaderOptions& options) {
  const bool normalised = options.normalization.mean != 0.0f || options.normalization.std != 1.0f;
  if (source.encoded() && !options.sample_stage)
    throw OptionsError(source.name() + ": its samples are encoded images: the loader needs a sample stage (the "
                       "output size, crop and normalisation: ImageStage)");
  if (!source.encoded() && options.sample_stage)
    throw OptionsError(source.name() + ": its samples are pixels of one size, which the loader converts itself; a "
                       "sample stage is for encoded images");
  if (source.encoded() && normalised)
    throw OptionsError(source.name() + ": encoded images are normalised by their sample stage (its mean and "
                       "std per channel); leave the loader's normalization at mean 0, std 1");
  const ImageStore* store = pixel_store(source);
  if (store == nullptr || store->pixel_type() != PixelType::kFloat32) return;
  if (options.dtype == ImageDtype::kUint8)
    throw OptionsError(source.name() + ": its pixels are float32 values: they cannot be served as uint8");
  if (normalised)
    throw OptionsError(source.name() + ": its pixels are float32 values, served as they are: normalization "
                       "applies to uint8 pixels only (leave it at mean 0, std 1)");
}

int64_t max_block_rows(const SampleSource& source) {
  int64_t rows = 0;
  for (int64_t b = 0; b < source.num_blocks(); ++b) rows = std::max(rows, source.block_rows(b));
  return rows;
}

// Readers decoding blocks ahead of the batches. Two at least: at the start of an epoch the first
// window is read before the first batch, while the model waits, so two readers halve that wait;
// later they run ahead within the budget. More workers get more readers (up to one each) only from
// the budget the window leaves over, so that the window, and with it the order, never depends on
// num_workers.
constexpr int kBaseReaders = 2;
constexpr int kNetworkReaders = 8;
// The share of the budget the automatic window leaves for read buffers beyond kBaseReaders'.
constexpr int64_t kReaderReserveShare = 16;
// Batch buffers a loader has at most: `prefetch` assembled or being assembled, the one next()
// handed out, and the one before it, which a loop over the batches still holds while it asks for
// the next (0 workers need two). Counted as prefetch + 2 whatever num_workers is, so that the
// window does not depend on it.
int64_t batch_buffers(const LoaderOptions& options) { return options.prefetch + 2; }

// One batch buffer's bytes: the rows of this rank's largest batch, as the loader allocates them.
int64_t batch_bytes(const SampleSource& source, const LoaderOptions& options) {
  const ImageShape shape = options.sample_stage ? options.sample_stage->output_shape() : source.shape();
  const int64_t samples = EpochPlan::count_samples(source.size(), options.batch_size, options.drop_last, options.world_size);
  const int64_t rows = std::min(options.batch_size, std::max<int64_t>(1, samples));
  return batch_buffer_bytes(rows, batch_schema(shape, options.dtype, source.value_fields()));
}

// What a stream's loader holds besides its decoded blocks: the epoch order, `readers` read buffers
// and its batch buffers (the budget bounds the loader's memory, not the stream's alone).
int64_t stream_overhead_bytes(const SampleSource& source, const LoaderOptions& options, int readers) {
  const int64_t padding = EpochPlan::count_padding(source.size(), options.drop_last, options.world_size);
  return (source.size() + padding) * static_cast<int64_t>(sizeof(int64_t)) + readers * source.max_read_bytes() +
         batch_buffers(options) * batch_bytes(source, options);
}

int64_t in_flight_batches(const LoaderOptions& options) { return options.num_workers == 0 ? 1 : options.prefetch; }

// Rows of decoded blocks a stream must be able to hold with shuffle window `window` (0 for the
// fixed part only) and `in_flight` batches in flight. Those batches span in_flight * world_size *
// batch_size positions of the order; the windows they touch hold those positions plus, at either
// end, at most one window that is only partly in the span, and a window is at most window +
// (largest block - 1) rows. The padding at the end of the epoch re-reads up to world_size - 1
// samples, each from a block of its own at worst.
int64_t required_rows(const SampleSource& source, const LoaderOptions& options, int64_t window, int64_t in_flight) {
  const int64_t span = in_flight * options.world_size * options.batch_size;
  const int64_t largest = max_block_rows(source);
  const int64_t padding = EpochPlan::count_padding(source.size(), options.drop_last, options.world_size);
  const int64_t padding_rows = std::min(padding, source.num_blocks()) * largest;
  return span + 2 * (window + largest - 1) + padding_rows;
}

// Readers whose buffers the automatic window leaves room for: kBaseReaders, and up to
// kNetworkReaders as far as a sixteenth of the budget holds their buffers. A function of the
// source's read size and the options only, not of where the set is, so that the window (and with
// it the order) is the same from a local disk and over a network, where the readers it leaves
// room for hide round trips.
int reserved_readers(const SampleSource& source, const LoaderOptions& options) {
  const int64_t read_bytes = std::max<int64_t>(1, source.max_read_bytes());
  const int64_t extra = options.memory_budget / kReaderReserveShare / read_bytes;
  return kBaseReaders + static_cast<int>(std::min<int64_t>(kNetworkReaders - kBaseReaders, extra));
}

// The stream's readers for resolved options: kBaseReaders, plus one per worker beyond them while
// the budget left after the window and the batches in flight holds their read buffers.
int stream_readers(const SampleSource& source, const LoaderOptions& options) {
  const int64_t needed =
      stream_overhead_bytes(source, options, kBaseReaders) +
      source.held_bytes_for_rows(required_rows(source, options, options.shuffle_window, in_flight_batches(options)));
  const int64_t spare = std::max<int64_t>(0, options.memory_budget - needed);
  // Reads over a network are mostly waits on round trips: more of them in flight at once hide
  // those (up to kNetworkReaders, within the budget's room for their buffers).
  const int64_t readers = source.reads_over_network() ? std::max(kNetworkReaders, options.num_workers)
                                                      : std::max(kBaseReaders, options.num_workers);
  const int64_t wanted = readers - kBaseReaders;
  const int64_t affordable = source.max_read_bytes() > 0 ? spare / source.max_read_bytes() : wanted;
  return kBaseReaders + static_cast<int>(std::min(wanted, affordable));
}

// The largest window whose blocks fit `block_budget` (the bytes grow with the window: a binary
// search). Computed for `prefetch` batches in flight and kBaseReaders readers whatever num_workers
// is (0 workers have one batch in flight), so that the order does not depend on it.
int64_t largest_window(const SampleSource& source, const LoaderOptions& options, int64_t block_budget) {
  const auto fits = [&](int64_t window) {
    return source.held_bytes_for_rows(required_rows(source, options, window, options.prefetch)) <= block_budget;
  };
  int64_t low = 1;
  int64_t high = source.size();
  while (low < high) {
    const int64_t mid = low + (high - low + 1) / 2;
    if (fits(mid)) low = mid; else high = mid - 1;
  }
  return low;
}

// Throws BudgetError saying what the stream needs when `block_budget` cannot hold the batches in
// flight and two windows.
void check_stream_budget(const SampleSource& source, const LoaderOptions& options, int64_t block_budget) {
  const int64_t window = options.shuffle_window;
  const int64_t in_flight = in_flight_batches(options);
  const int64_t needed_bytes = source.held_bytes_for_rows(required_rows(source, options, window, in_flight));
  if (block_budget >= needed_bytes) return;
  const int64_t overhead = options.memory_budget - block_budget;
  throw BudgetError(source.name() + ": memory_budget " + format_byte_size(options.memory_budget) +
                     " is too small: the loader needs " + format_byte_size(overhead) +
                      " for the epoch order, read buffers and " + std::to_string(batch_buffers(options)) +
                      " batch buffers (prefetch + 2, " + format_byte_size(batch_bytes(source, options)) + " each) plus " +
                      format_byte_size(needed_bytes) +
                     (source.encoded() ? " of encoded samples" : " of decoded samples") + " (the batches in flight: " +
                     (options.num_workers == 0 ? std::string("1 without workers") : "prefetch " + std::to_string(in_flight)) +
                     " x world_size " + std::to_string(options.world_size) + " x batch_size " +
                     std::to_string(options.batch_size) + " samples, and two shuffle windows of " +
                     std::to_string(window) + (window == 1 ? " sample" : " samples") + " plus a piece of " +
                     std::to_string(max_block_rows(source)) +
                     " rows each, the unit the set is read in); raise the budget" +
                     (window > 1 ? ", or lower the shuffle window, prefetch or batch size"
                                 : ", or lower prefetch or the batch size"),
                    options.memory_budget - block_budget + needed_bytes, options.memory_budget, window > 1);
}

// The options in effect: checked, and every default replaced by its value.
LoaderOptions resolve_options(const SampleSource& source, const LoaderOptions& given) {
  LoaderOptions options = given;
  const int64_t size = source.size();
  EpochPlan::check(size, options.batch_size, options.drop_last, options.rank, options.world_size, source.name());
  validate(options);
  check_against_source(source, options);
  if (random_access(source)) {
    options.shuffle_window = options.shuffle_window == 0 ? size : std::min(options.shuffle_window, size);
    options.memory_budget = 0;
    return options;
  }
  options.memory_budget = options.memory_budget > 0 ? options.memory_budget : default_memory_budget();
  const int64_t block_budget = options.memory_budget - stream_overhead_bytes(source, options, kBaseReaders);
  // Without shuffle the window orders nothing, but groups what is read together: a window's pieces
  // of one page are decompressed once (windows of one piece read a page once per piece).
  if (options.shuffle_window > 0) {
    options.shuffle_window = std::min(options.shuffle_window, size);
  } else {
    // Room for the reserved readers' buffers where the budget holds the smallest window with them.
    const int64_t reserved_budget = options.memory_budget - stream_overhead_bytes(source, options, reserved_readers(source, options));
    const bool room = source.held_bytes_for_rows(required_rows(source, options, 1, options.prefetch)) <= reserved_budget;
    options.shuffle_window = largest_window(source, options, room ? reserved_budget : block_budget);
  }
  check_stream_budget(source, options, block_budget);
  return options;
}

}  // namespace

LoaderPlan LoaderPlan::resolve(const SampleSource& source, const LoaderOptions& given) {
  LoaderPlan plan;
  plan.options_ = resolve_options(source, given);
  const LoaderOptions& options = plan.options_;
  const int64_t size = source.size();
  plan.window_given_ = given.shuffle_window > 0;
  plan.streaming_ = random_access(source) == nullptr;
  plan.sample_shape_ = options.sample_stage ? options.sample_stage->output_shape() : source.shape();
  plan.num_samples_ = EpochPlan::count_samples(size, options.batch_size, options.drop_last, options.world_size);
  plan.num_batches_ = EpochPlan::count_batches(size, options.batch_size, options.drop_last, options.world_size);
  // No batch holds more than this rank's samples: a batch_size above them costs no memory.
  plan.largest_batch_ = std::min(options.batch_size, std::max<int64_t>(1, plan.num_samples_));
  const auto blocks = source.block_starts();
  plan.block_layout_ = XXH3_64bits(blocks.data(), blocks.size_bytes());
  if (plan.streaming_) {
    plan.num_readers_ = stream_readers(source, options);
    plan.stream_block_budget_ = options.memory_budget - stream_overhead_bytes(source, options, plan.num_readers_);
  }
  return plan;
}

LoaderPlan LoaderPlan::with_seed(uint64_t seed) const {
  LoaderPlan plan = *this;
  plan.options_.seed = seed;
  return plan;
}

LoaderPlan LoaderPlan::with_window(const SampleSource& source, int64_t window) const {
  LoaderPlan plan = *this;
  plan.options_.shuffle_window = window;
  if (!streaming_) return plan;
  const int64_t needed = source.held_bytes_for_rows(required_rows(source, options_, window, in_flight_batches(options_)));
  const int64_t most = options_.memory_budget - stream_overhead_bytes(source, options_, kBaseReaders);
  if (needed > most) {
    const int64_t needed_budget = options_.memory_budget - most + needed;
    throw BudgetError("cannot restore this loader state on " + source.name() + ": it was saved with a shuffle "
                      "window of " + std::to_string(window) + " samples, which memory_budget " +
                      format_byte_size(options_.memory_budget) + " cannot hold (its own window is " +
                      std::to_string(options_.shuffle_window) + " samples): give a memory budget of at least " +
                      format_byte_size(needed_budget), needed_budget, options_.memory_budget, false);
  }
  // A window saved with fewer buffers set aside for readers (a plan that left no room for more) is
  // held with fewer readers: their buffers' share of the budget goes to its blocks.
  while (plan.num_readers_ > kBaseReaders && needed > plan.stream_block_budget_) {
    --plan.num_readers_;
    plan.stream_block_budget_ = options_.memory_budget - stream_overhead_bytes(source, options_, plan.num_readers_);
  }
  return plan;
}

int64_t LoaderPlan::budget_for_window(const SampleSource& source, int64_t window) const {
  return stream_overhead_bytes(source, options_, kBaseReaders) +
         source.held_bytes_for_rows(required_rows(source, options_, window, options_.prefetch));
}

std::string plan_advice(const SampleSource& source, const LoaderPlan& plan) {
  std::string advice = shuffle_advice(source, plan.options(), plan.window_given(), [&](int64_t window) {
    return plan.budget_for_window(source, window);
  });
  const std::string pages = page_advice(source, plan.options());
  if (!pages.empty()) advice += (advice.empty() ? "" : " ") + pages;
  return advice;
}

}  // namespace feeder::detail
