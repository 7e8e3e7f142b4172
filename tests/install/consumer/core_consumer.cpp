// Writes a small image set as Parquet shards (Thrift, zstd and xxHash inside feeder_core must link),
// streams it back through the loader with a range-for and prints what it saw.
#include <feeder/data/loader.h>
#include <feeder/formats/sharded.h>
#include <feeder/version.h>

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: core_consumer EMPTY_DIR\n";
    return 2;
  }
  feeder::ImageStore store({1, 4, 4}, 100, true);
  for (int64_t i = 0; i < store.size(); ++i) {
    store.labels()[i] = i % 10;
    for (int64_t p = 0; p < 16; ++p) store.image(i)[p] = static_cast<uint8_t>(i + p);
  }
  feeder::ShardWriteOptions write_options;
  write_options.shard_rows = 30;
  feeder::write_sharded(store, std::filesystem::path(argv[1]) / "set", write_options);

  feeder::ShardedDataset dataset = feeder::open_sharded_dataset((std::filesystem::path(argv[1]) / "set").string());
  feeder::LoaderOptions options;
  options.batch_size = 16;
  options.num_workers = 2;
  feeder::Loader loader(feeder::open_parquet_source(dataset), options);
  int64_t num_batches = 0, num_samples = 0, label_sum = 0;
  for (feeder::Batch& batch : loader.epoch(0)) {
    ++num_batches;
    num_samples += batch.size();
    for (int64_t i = 0; i < batch.size(); ++i) label_sum += batch.labels()[i];
  }
  std::cout << "feeder " << feeder::kVersion << ": " << num_batches << " batches, " << num_samples
            << " samples, label sum " << label_sum << "\n";
  return 0;
}
