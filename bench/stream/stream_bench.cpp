// feeder-stream-bench (`feeder bench stream`): the loader streaming a dataset larger than its
// memory budget, against the in-memory loader on the same samples, the disk's sequential read rate
// (dd) and the budget itself. No LibTorch here: the process whose peak RSS is measured must hold
// only what the stream holds.
//
//   feeder bench stream [--cache DIR] [--samples N] ...    the whole benchmark (builds the set once)
//   feeder-stream-bench make-sorted --train F --out DIR     FashionMNIST sharded and sorted by label
//                                                           (--out F.csv: one CSV file)
//   feeder-stream-bench rss-probe --data DIR --budget B     one streamed epoch, prints its peak RSS
//   feeder-stream-bench shuffle-quality --data DIR --budget B   how well a streamed epoch mixes labels (pixel sets, or encoded images: --layout png)

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "app/command_line.h"
#include "app/data_dir.h"
#include "common/peak_rss.h"
#include "common/statistics.h"
#include "feeder/data/loader.h"
#include "feeder/data/random.h"
#include "feeder/data/sampler.h"
#include "feeder/error.h"
#include "feeder/formats/csv.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/formats/sharded.h"
#include "feeder/image/image_decoder.h"
#include "feeder/image/image_stage.h"
#include "feeder/stopwatch.h"
#include "feeder/util/byte_size.h"
#include "feeder/util/parallel_for.h"

namespace feeder::bench {
namespace {

namespace fs = std::filesystem;
using cli::at_least;
using cli::Command;

struct StreamBenchOptions {
  fs::path data_dir = cli::kDefaultDataDir;
  fs::path cache_dir = "build/bench-cache";
  int64_t num_samples = 5'000'000;
  int64_t shard_rows = 250'000;
  int64_t row_group_rows = 10'000;
  std::string codec = "lz4";
  int level = 0;  // the codec's level (feeder convert --level); 0: its default
  int64_t memory_budget = int64_t{256} << 20;
  int64_t batch_size = 512;
  int num_workers = 2;
  int repeats = 5;
  int64_t piece_rows = 0;  // the stream's pieces and the set's pages; 0: stream_piece_rows
  fs::path out;  // Markdown report; empty: stdout only

  int64_t resolved_piece_rows() const { return piece_rows > 0 ? piece_rows : stream_piece_rows(ImageShape{1, 28, 28}, num_samples); }
};

// Sample k of the large set: original k % 60000 (in a fixed permuted order) shifted by up to 2
// pixels each way and flipped left-right half the time, from a generator seeded by k, so the set
// compresses like real augmented data, not like 80 copies of the same bytes.
void augment(const uint8_t* original, uint8_t* out, int64_t height, int64_t width, SplitMix64& rng) {
  const int64_t dx = static_cast<int64_t>(rng.below(5)) - 2;
  const int64_t dy = static_cast<int64_t>(rng.below(5)) - 2;
  const bool flip = rng.below(2) == 1;
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      int64_t sx = (flip ? width - 1 - x : x) - dx;
      int64_t sy = y - dy;
      out[y * width + x] = sx < 0 || sx >= width || sy < 0 || sy >= height ? 0 : original[sy * width + sx];
    }
  }
}

fs::path large_set_dir(const StreamBenchOptions& options) {
  const std::string level = options.level != 0 ? "-l" + std::to_string(options.level) : "";
  return options.cache_dir / ("fashion-" + std::to_string(options.num_samples) + "-" + options.codec + level + "-rg" +
                              std::to_string(options.row_group_rows) + "-p" + std::to_string(options.resolved_piece_rows()));
}

// Builds the large set once; later runs find its index and reuse it.
ShardedDataset ensure_large_set(const StreamBenchOptions& options) {
  const fs::path dir = large_set_dir(options);
  if (fs::exists(dir / kShardIndexName)) return open_sharded_dataset(dir.string());
  std::cerr << "building " << dir.string() << " (" << options.num_samples
            << " augmented FashionMNIST samples; once, then cached)\n";
  const ImageStore original = load_images(cli::find_data_split(options.data_dir, Split::kTrain));
  const ImageShape shape = original.shape();
  ImageStore large(shape, options.num_samples, true);
  const std::vector<int64_t> pick = epoch_order(original.size(), true, 2026, 0);
  parallel_for(options.num_samples, 0, [&](int64_t k) {
    SplitMix64 rng = batch_generator(2026, 0, k);
    const int64_t source = pick[static_cast<size_t>(k % original.size())];
    augment(original.image(source), large.image(k), shape.height, shape.width, rng);
    large.labels()[static_cast<size_t>(k)] = original.label(source);
  });
  fs::remove_all(dir);
  ShardWriteOptions write;
  write.shard_rows = options.shard_rows;
  write.parquet.layout = parquet::ParquetLayout::kImage;
  write.parquet.codec = parquet::parse_parquet_codec(options.codec);
  write.parquet.compression_level = options.level;
  write.parquet.row_group_size = options.row_group_rows;
  write.parquet.page_rows = options.resolved_piece_rows();  // as feeder convert writes a sharded set
  const Stopwatch took;
  write_sharded(large, dir, write, [](int64_t done, int64_t total) {
    std::cerr << "\r  shard " << done << "/" << total << std::flush;
  });
  std::cerr << "\n  written in " << took.seconds() << " s\n";
  return open_sharded_dataset(dir.string());
}

LoaderOptions loader_options(const StreamBenchOptions& options) {
  LoaderOptions loader;
  loader.batch_size = options.batch_size;
  loader.num_workers = options.num_workers;
  loader.pin_memory = false;
  loader.memory_budget = options.memory_budget;
  return loader;
}

// One epoch; returns the samples delivered.
int64_t run_epoch(Loader& loader, int64_t epoch) {
  int64_t samples = 0;
  loader.start_epoch(epoch);
  while (auto batch = loader.next()) samples += batch->size();
  return samples;
}

void evict_from_page_cache(const ShardedDataset& dataset) {
  for (const ShardInfo& shard : dataset.shards) {
    const int fd = ::open(shard.path.c_str(), O_RDONLY);
    if (fd < 0) throw DataError(shard.path.string() + ": cannot open to evict it from the page cache");
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

uint64_t total_file_bytes(const ShardedDataset& dataset) {
  uint64_t bytes = 0;
  for (const ShardInfo& shard : dataset.shards) bytes += shard.size_bytes;
  return bytes;
}

// dd's sequential read rate of the first shards (evicted first), in MB/s.
double dd_read_mb_per_s(const ShardedDataset& dataset) {
  evict_from_page_cache(dataset);
  uint64_t bytes = 0;
  const Stopwatch took;
  for (size_t i = 0; i < std::min<size_t>(4, dataset.shards.size()); ++i) {
    const std::string command = "dd if='" + dataset.shards[i].path.string() + "' of=/dev/null bs=4M status=none";
    if (std::system(command.c_str()) != 0) throw DataError("dd failed on " + dataset.shards[i].path.string());
    bytes += dataset.shards[i].size_bytes;
  }
  return static_cast<double>(bytes) / 1e6 / took.seconds();
}

// Runs this executable's rss-probe in a child process and returns its peak RSS in bytes.
int64_t probe_peak_rss(const fs::path& dir, const StreamBenchOptions& options) {
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const std::string command = "'" + self.string() + "' rss-probe --data '" + dir.string() + "' --budget " +
                              std::to_string(options.memory_budget) + " --workers " +
                              std::to_string(options.num_workers) + " --batch-size " +
                              std::to_string(options.batch_size) + " --piece-rows " +
                              std::to_string(options.resolved_piece_rows());
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw DataError("cannot start " + command);
  long long peak = -1;
  if (std::fscanf(pipe, "peak_rss_bytes %lld", &peak) != 1) peak = -1;
  const int status = ::pclose(pipe);
  if (status != 0 || peak < 0) throw DataError("rss-probe failed (exit status " + std::to_string(status) + ")");
  return peak;
}

int run_stream_bench(const StreamBenchOptions& options) {
  const ShardedDataset dataset = ensure_large_set(options);
  const uint64_t file_bytes = total_file_bytes(dataset);
  std::ostringstream report;
  char line[512];
  std::snprintf(line, sizeof(line),
                "Dataset: %lld samples (%s decoded, %s in %zu %s shards of %lld rows, row groups of %lld), "
                "batch %lld, %d workers, budget %s, median of %d epochs\n\n",
                static_cast<long long>(dataset.num_rows), format_byte_size(dataset.decoded_bytes()).c_str(),
                format_byte_size(static_cast<int64_t>(file_bytes)).c_str(), dataset.shards.size(),
                options.codec.c_str(), static_cast<long long>(options.shard_rows),
                static_cast<long long>(options.row_group_rows), static_cast<long long>(options.batch_size),
                options.num_workers, format_byte_size(options.memory_budget).c_str(), options.repeats);
  report << line;

  // Peak RSS first, while the machine is quiet, in a process of its own.
  const int64_t peak_rss = probe_peak_rss(large_set_dir(options), options);

  // Cold: every shard evicted, one epoch read from the disk.
  std::shared_ptr<SampleSource> stream = open_parquet_source(dataset, {}, options.resolved_piece_rows());
  const double dd_rate = dd_read_mb_per_s(dataset);
  evict_from_page_cache(dataset);
  double cold_seconds = 0;
  int64_t cold_window = 0;
  {
    Loader loader(stream, loader_options(options));
    cold_window = loader.shuffle_window();
    const Stopwatch took;
    run_epoch(loader, 0);
    cold_seconds = took.seconds();
  }
  const double cold_rate = static_cast<double>(file_bytes) / 1e6 / cold_seconds;

  // Warm (files in the page cache: the cold epoch read them) against in memory (the same samples
  // read into one store first), epochs alternated so that the machine's drift from minute to
  // minute falls on both alike. After each streamed epoch the stream reads the next epoch's first
  // window ahead; a pause lets it finish before the in-memory epoch is timed.
  double load_seconds = 0;
  std::vector<double> stream_rates, memory_rates, ratios;
  {
    const Stopwatch took;
    std::shared_ptr<InMemorySource> memory = read_into_memory(*stream);
    load_seconds = took.seconds();
    Loader streamed(stream, loader_options(options));
    Loader in_memory(memory, loader_options(options));
    for (int r = 0; r < options.repeats; ++r) {
      const auto rate = [&](Loader& loader) {
        const Stopwatch epoch_time;
        const int64_t samples = run_epoch(loader, 1 + r);
        return static_cast<double>(samples) / epoch_time.seconds();
      };
      stream_rates.push_back(rate(streamed));
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      memory_rates.push_back(rate(in_memory));
      ratios.push_back(stream_rates.back() / memory_rates.back());
    }
  }
  const double stream_rate = *median(stream_rates);
  const double memory_rate = *median(memory_rates);

  report << "| measurement | value | reference | ratio |\n|---|---|---|---|\n";
  std::snprintf(line, sizeof(line),
                "| streaming, files in page cache | %.0f samples/s | in memory: %.0f samples/s | %.2f (epoch pairs: %.2f-%.2f) |\n",
                stream_rate, memory_rate, *median(ratios), *std::min_element(ratios.begin(), ratios.end()),
                *std::max_element(ratios.begin(), ratios.end()));
  report << line;
  std::snprintf(line, sizeof(line), "| streaming, cold files | %.0f MB/s read (%.1f s epoch) | dd: %.0f MB/s | %.2f |\n",
                cold_rate, cold_seconds, dd_rate, cold_rate / dd_rate);
  report << line;
  std::snprintf(line, sizeof(line), "| peak RSS, streaming one epoch | %s | budget + 64 MiB: %s | %.2f |\n",
                format_byte_size(peak_rss).c_str(), format_byte_size(options.memory_budget + (int64_t{64} << 20)).c_str(),
                static_cast<double>(peak_rss) / static_cast<double>(options.memory_budget + (int64_t{64} << 20)));
  report << line;
  std::snprintf(line, sizeof(line), "| reading the set into memory | %.1f s | | |\n", load_seconds);
  report << line;
  std::snprintf(line, sizeof(line), "\nShuffle window while streaming within the budget: %lld samples.\n",
                static_cast<long long>(cold_window));
  report << line;
  std::cout << report.str() << std::flush;
  if (!options.out.empty()) write_file_atomically(options.out, report.str());
  return peak_rss <= options.memory_budget + (int64_t{64} << 20) ? 0 : 1;
}

// One streamed epoch in this process; prints "peak_rss_bytes N" (the kernel's high-water mark).
int run_rss_probe(const std::string& dir, int64_t budget, int workers, int64_t batch_size, int64_t piece_rows) {
  const ShardedDataset dataset = open_sharded_dataset(dir);
  LoaderOptions options;
  options.batch_size = batch_size;
  options.num_workers = workers;
  options.pin_memory = false;
  options.memory_budget = budget;
  Loader loader(open_parquet_source(dataset, {}, piece_rows), options);
  const int64_t samples = run_epoch(loader, 0);
  if (samples != dataset.num_rows) throw DataError("rss-probe: the epoch gave " + std::to_string(samples) + " samples");
  std::printf("peak_rss_bytes %lld\n", static_cast<long long>(peak_rss_kib()) * 1024);
  std::fprintf(stderr, "rss-probe: stream held at most %s of decoded row groups\n",
               format_byte_size(loader.peak_stream_bytes()).c_str());
  return 0;
}

// How far a batch's labels are from the set's, for one epoch of `loader`: the mean number of
// distinct labels in a batch and the mean total variation distance between a batch's label
// frequencies and the set's (0: the same; 1: disjoint). A figure that needs no training, so that
// a change in how a stream mixes shows in seconds. Also the mean number of distinct pieces a batch
// draws from: what decoding each batch's samples from pieces held compressed would decompress.
struct MixQuality {
  double distinct_labels = 0;
  double distance = 0;
  double pieces = 0;
};

MixQuality mix_quality(Loader& loader, int64_t epoch, const std::map<int64_t, double>& set_frequency,
                       std::span<const int64_t> block_starts) {
  MixQuality quality;
  int64_t batches = 0;
  loader.start_epoch(epoch);
  while (auto batch = loader.next()) {
    std::map<int64_t, int64_t> counts;
    for (int64_t i = 0; i < batch->size(); ++i) ++counts[batch->labels()[i]];
    std::set<int64_t> pieces;
    for (const int64_t sample : batch->sample_indices())
      pieces.insert(std::upper_bound(block_starts.begin(), block_starts.end(), sample) - block_starts.begin());
    quality.pieces += static_cast<double>(pieces.size());
    double distance = 0;
    for (const auto& [label, frequency] : set_frequency) {
      const auto it = counts.find(label);
      const double here = it == counts.end() ? 0.0 : static_cast<double>(it->second) / static_cast<double>(batch->size());
      distance += std::abs(here - frequency);
    }
    quality.distinct_labels += static_cast<double>(counts.size());
    quality.distance += distance / 2;
    ++batches;
  }
  quality.distinct_labels /= static_cast<double>(std::max<int64_t>(batches, 1));
  quality.distance /= static_cast<double>(std::max<int64_t>(batches, 1));
  quality.pieces /= static_cast<double>(std::max<int64_t>(batches, 1));
  return quality;
}

// The stage that decodes a set of encoded images at the size and channels of its first image,
// resized only if others differ (as feeder convert --layout png stores a pixel set: all one size).
std::shared_ptr<const SampleStage> first_image_stage(const SampleSource& source) {
  std::vector<uint8_t> scratch, bytes(static_cast<size_t>(source.block_bytes(0)));
  std::vector<int64_t> ends(static_cast<size_t>(source.block_rows(0))), labels(ends.size());
  source.read_block(0, scratch,
                    {.payload = bytes.data(), .capacity = static_cast<int64_t>(bytes.size()), .ends = ends.data(),
                     .labels = labels.data()});
  const ImageHeader header = read_image_header(std::span<const uint8_t>(bytes.data(), static_cast<size_t>(ends[0])),
                                               source.sample_name(0));
  ImageStageOptions stage;
  stage.channels = header.channels <= 2 ? 1 : 3;
  stage.height = header.height;
  stage.width = header.width;
  stage.crop = ImageCrop::kResize;
  return std::make_shared<ImageStage>(stage);
}

// Microseconds to read and decode one piece (read_block: its pages from the page cache, the
// codec, the values), the median of three passes over every piece.
double piece_read_us(const SampleSource& source) {
  std::vector<uint8_t> scratch, pixels;
  std::vector<int64_t> labels;
  std::vector<double> passes;
  std::vector<int64_t> ends;
  for (int pass = 0; pass < 3; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t b = 0; b < source.num_blocks(); ++b) {
      labels.resize(static_cast<size_t>(source.block_rows(b)));
      if (source.encoded()) {  // the images' bytes only: each is decoded when a batch needs it
        pixels.resize(static_cast<size_t>(source.block_bytes(b)));
        ends.resize(static_cast<size_t>(source.block_rows(b)));
        source.read_block(b, scratch,
                          {.payload = pixels.data(), .capacity = static_cast<int64_t>(pixels.size()), .ends = ends.data(),
                           .labels = labels.data()});
        continue;
      }
      pixels.resize(static_cast<size_t>(source.block_rows(b) * source.shape().num_pixels()));
      source.read_block(b, scratch, {.payload = pixels.data(), .labels = labels.data()});
    }
    passes.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e6 /
                     static_cast<double>(std::max<int64_t>(source.num_blocks(), 1)));
  }
  return *median(passes);
}

int run_shuffle_quality(const std::string& dir, const std::vector<int64_t>& budgets, int64_t batch_size,
                        int64_t piece_rows, int epochs) {
  const ShardedDataset dataset = open_sharded_dataset(dir);
  const std::shared_ptr<SampleSource> stream = open_parquet_source(dataset, {}, piece_rows);
  LoaderOptions options;
  options.batch_size = batch_size;
  options.num_workers = 2;
  options.pin_memory = false;
  // In memory: a pixel set read into memory; a set of encoded images (feeder convert --layout png)
  // streamed within a budget that holds it all, which shuffles it whole as well.
  std::shared_ptr<const SampleSource> whole;
  LoaderOptions whole_options = options;
  if (stream->encoded()) {
    options.sample_stage = whole_options.sample_stage = first_image_stage(*stream);
    whole = stream;
    whole_options.memory_budget = int64_t{1} << 40;
  } else {
    whole = read_into_memory(*stream);
  }
  std::map<int64_t, double> set_frequency;
  {
    Loader labels(whole, whole_options);
    labels.start_epoch(0);
    while (auto batch = labels.next())
      for (int64_t i = 0; i < batch->size(); ++i) set_frequency[batch->labels()[i]] += 1.0 / static_cast<double>(stream->size());
  }
  std::printf("| set | pieces (rows) | budget | shuffle window | pieces per window | distinct labels per batch | distance from the set's labels | pieces per batch |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  const auto report = [&](Loader& loader, const std::string& budget) {
    MixQuality total;
    for (int epoch = 0; epoch < epochs; ++epoch) {
      const MixQuality quality = mix_quality(loader, epoch, set_frequency, stream->block_starts());
      total.distinct_labels += quality.distinct_labels / epochs;
      total.distance += quality.distance / epochs;
      total.pieces += quality.pieces / epochs;
    }
    const double mean_piece = static_cast<double>(stream->size()) / static_cast<double>(stream->num_blocks());
    std::printf("| %s | %lld (%.0f) | %s | %lld | %.1f | %.2f | %.3f | %.0f |\n", dir.c_str(),
                static_cast<long long>(stream->num_blocks()), mean_piece, budget.c_str(),
                static_cast<long long>(loader.shuffle_window()),
                static_cast<double>(loader.shuffle_window()) / mean_piece, total.distinct_labels, total.distance,
                total.pieces);
  };
  {
    Loader full(whole, whole_options);
    report(full, "in memory");
  }
  for (const int64_t budget : budgets) {
    options.memory_budget = budget;
    Loader streamed(stream, options);
    report(streamed, format_byte_size(budget));
  }
  std::printf("\nreading and decoding one piece: %.1f us (median of 3 passes over every piece)\n",
              piece_read_us(*stream));
  return 0;
}

// FashionMNIST's training set sorted by label (stable), sharded: the classic failure of streaming
// without a shuffle that spans shards.
int make_sorted(const fs::path& train, const fs::path& out, int64_t shard_rows, int64_t row_group_rows) {
  const ImageStore store = load_images(train);
  std::vector<int64_t> order(static_cast<size_t>(store.size()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return store.label(a) < store.label(b); });
  ImageStore sorted(store.shape(), store.size(), true);
  for (int64_t i = 0; i < store.size(); ++i) {
    const int64_t from = order[static_cast<size_t>(i)];
    std::memcpy(sorted.image(i), store.image(from), static_cast<size_t>(store.image_bytes()));
    sorted.labels()[static_cast<size_t>(i)] = store.label(from);
  }
  if (out.extension() == ".csv") {  // for `feeder convert` with its defaults, or for other writers
    write_csv(sorted, out);
    std::cout << out.string() << ": " << store.size() << " samples sorted by label\n";
    return 0;
  }
  ShardWriteOptions write;
  write.shard_rows = shard_rows;
  write.parquet.layout = parquet::ParquetLayout::kImage;
  write.parquet.row_group_size = row_group_rows;
  write_sharded(sorted, out, write);
  std::cout << out.string() << ": " << store.size() << " samples sorted by label\n";
  return 0;
}

}  // namespace
}  // namespace feeder::bench

int main(int argc, char** argv) {
  using namespace feeder::bench;
  using feeder::cli::at_least;
  CLI::App app("the loader streaming a set larger than its memory budget", "feeder bench stream");
  auto options = std::make_shared<StreamBenchOptions>();
  auto budget = std::make_shared<std::string>("256MiB");
  auto data_dir = std::make_shared<std::string>(feeder::cli::kDefaultDataDir.string());
  auto cache_dir = std::make_shared<std::string>(options->cache_dir.string());
  auto out = std::make_shared<std::string>();
  app.add_option("--data", *data_dir, "FashionMNIST directory")->capture_default_str();
  app.add_option("--cache", *cache_dir, "where the large set is built once")->capture_default_str();
  app.add_option("--samples", options->num_samples, "samples in the large set")->check(at_least(1))->capture_default_str();
  app.add_option("--shard-rows", options->shard_rows, "rows per shard")->check(at_least(1))->capture_default_str();
  app.add_option("--row-group-size", options->row_group_rows, "rows per row group")->check(at_least(1))->capture_default_str();
  app.add_option("--codec", options->codec, "Parquet codec of the large set")->capture_default_str();
  app.add_option("--level", options->level, "the codec's level (feeder convert --level); 0: its default");
  app.add_option("--piece-rows", options->piece_rows, "rows per piece and per page (0: the stream's default)")
      ->capture_default_str();
  app.add_option("--budget", *budget, "the streaming loader's memory budget")->capture_default_str();
  app.add_option("--batch-size", options->batch_size, "samples per batch")->check(at_least(1))->capture_default_str();
  app.add_option("--workers", options->num_workers, "loader workers")->check(at_least(0))->capture_default_str();
  app.add_option("--repeats", options->repeats, "epoch pairs, streamed and in memory (medians)")->check(at_least(1))->capture_default_str();
  app.add_option("--out", *out, "also write the Markdown report here");

  auto probe_dir = std::make_shared<std::string>();
  auto probe_budget = std::make_shared<int64_t>(0);
  auto probe_workers = std::make_shared<int>(2);
  auto probe_batch = std::make_shared<int64_t>(512);
  auto probe_pieces = std::make_shared<int64_t>(0);
  CLI::App* probe = app.add_subcommand("rss-probe", "stream one epoch and print this process's peak RSS");
  probe->add_option("--data", *probe_dir)->required();
  probe->add_option("--budget", *probe_budget)->required();
  probe->add_option("--workers", *probe_workers);
  probe->add_option("--batch-size", *probe_batch);
  probe->add_option("--piece-rows", *probe_pieces);

  auto quality_dir = std::make_shared<std::string>();
  auto quality_budgets = std::make_shared<std::vector<std::string>>();
  auto quality_batch = std::make_shared<int64_t>(64);
  auto quality_pieces = std::make_shared<int64_t>(0);
  auto quality_epochs = std::make_shared<int>(2);
  CLI::App* quality = app.add_subcommand("shuffle-quality", "how well streamed epochs mix labels, against in memory");
  quality->add_option("--data", *quality_dir, "a sharded set (directory, glob or file)")->required();
  quality->add_option("--budget", *quality_budgets, "one or more memory budgets")->required();
  quality->add_option("--batch-size", *quality_batch)->check(at_least(1))->capture_default_str();
  quality->add_option("--piece-rows", *quality_pieces, "rows per piece (0: the default)")->capture_default_str();
  quality->add_option("--epochs", *quality_epochs)->check(at_least(1))->capture_default_str();

  auto sorted_train = std::make_shared<std::string>();
  auto sorted_out = std::make_shared<std::string>();
  auto sorted_shard_rows = std::make_shared<int64_t>(6000);
  auto sorted_row_group = std::make_shared<int64_t>(1000);
  CLI::App* sorted = app.add_subcommand("make-sorted", "write a training file sharded and sorted by label");
  sorted->add_option("--train", *sorted_train)->required();
  sorted->add_option("--out", *sorted_out)->required();
  sorted->add_option("--shard-rows", *sorted_shard_rows)->capture_default_str();
  sorted->add_option("--row-group-size", *sorted_row_group)->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*probe) return run_rss_probe(*probe_dir, *probe_budget, *probe_workers, *probe_batch, *probe_pieces);
    if (*sorted) return make_sorted(*sorted_train, *sorted_out, *sorted_shard_rows, *sorted_row_group);
    if (*quality) {
      std::vector<int64_t> budgets;
      for (const std::string& text : *quality_budgets) budgets.push_back(feeder::parse_byte_size(text, "--budget"));
      return run_shuffle_quality(*quality_dir, budgets, *quality_batch, *quality_pieces, *quality_epochs);
    }
    options->memory_budget = feeder::parse_byte_size(*budget, "--budget");
    options->data_dir = *data_dir;
    options->cache_dir = *cache_dir;
    options->out = *out;
    return run_stream_bench(*options);
  } catch (const std::exception& e) {
    std::cerr << "feeder bench stream: " << e.what() << "\n";
    return 1;
  }
}
