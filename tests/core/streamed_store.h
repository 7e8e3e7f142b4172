#pragma once

// An in-memory store presented as a stream of blocks, for the loader tests: the loader sees no
// store and reads blocks, as from Parquet shards. It can also misbehave on purpose: fail given
// blocks, fail reads at random, be slow, hold reads at a gate, or lose its blocks mid-epoch (a
// shard that vanished).
//
// Threads: read_blocks() runs on the stream's reader threads; everything it touches is atomic or
// guarded by mutex_. The test thread sets the behaviour and opens the gate.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <stdexcept>

#include "io/detail/request_abort.h"
#include <string>
#include <thread>
#include <vector>

#include "feeder/data/source.h"
#include "feeder/error.h"
#include "feeder/store/image_store.h"

namespace feeder::testing {

// Block b holds samples [starts[b], starts[b+1]) of `sizes`.
inline std::vector<int64_t> starts_of(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> starts{0};
  for (int64_t size : sizes) starts.push_back(starts.back() + size);
  return starts;
}

inline std::vector<int64_t> uniform_blocks(int64_t num_samples, int64_t rows) {
  std::vector<int64_t> sizes;
  for (int64_t first = 0; first < num_samples; first += rows) sizes.push_back(std::min(rows, num_samples - first));
  return sizes;
}

class StreamedStore : public SampleSource {
 public:
  // Blocks in `failing` throw the DataError a truncated Parquet shard would.
  StreamedStore(std::shared_ptr<const ImageStore> store, std::vector<int64_t> block_sizes, std::set<int64_t> failing = {})
      : store_(std::move(store)),
        starts_(starts_of(block_sizes)),
        failing_(std::move(failing)),
        block_reads_(block_sizes.size(), 0),
        schema_(image_schema(store_->shape(), false, true)) {}

  int64_t size() const override { return store_->size(); }
  const Schema& schema() const override { return schema_; }
  uint64_t fingerprint() const override { return 0x5eed0000u + static_cast<uint64_t>(store_->size()); }
  std::string name() const override { return "streamed"; }
  std::span<const int64_t> block_starts() const override { return starts_; }
  int64_t max_read_bytes() const override { return 0; }
  // Blocks b and c are read together when b / group_blocks == c / group_blocks, as the pieces of
  // one Parquet row group are.
  int64_t read_group(int64_t b) const override { return b / group_blocks; }

  void read_one(int64_t b, uint8_t* pixels, int64_t* labels) const {
    const int64_t read_number = reads.fetch_add(1);
    {
      std::unique_lock lock(mutex_);
      ++block_reads_[static_cast<size_t>(b)];
      ++reads_begun_;
      begun_.notify_all();
      // Bounded: a test that forgets to open the gate fails on its own watchdog, not here. As a
      // network read does, a read held at the gate ends when its reader is asked to give it up.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!gate_open_ && std::chrono::steady_clock::now() < deadline) {
        gate_cv_.wait_for(lock, std::chrono::milliseconds(10));
        if (!gate_open_ && detail::request_abort_asked()) {
          ++reads_aborted_;
          throw detail::RequestAborted();
        }
      }
    }
    if (const int64_t us = max_delay_us.load(); us > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(mix(static_cast<uint64_t>(read_number)) % static_cast<uint64_t>(us)));
    }
    if (failing_.count(b)) throw DataError("part-00001.parquet: row group " + std::to_string(b) + ": truncated");
    if (b >= vanished_from.load()) throw DataError("part-00002.parquet: No such file or directory (row group " + std::to_string(b) + ")");
    if (const uint64_t per_mille = fail_per_mille.load();
        per_mille > 0 && mix(static_cast<uint64_t>(read_number) ^ 0xfa11u) % 1000 < per_mille) {
      throw DataError("part-00003.parquet: row group " + std::to_string(b) + ": read failed");
    }
    const int64_t first = starts_[static_cast<size_t>(b)];
    const int64_t rows = starts_[static_cast<size_t>(b) + 1] - first;
    std::copy_n(store_->image(first), rows * store_->image_bytes(), pixels);
    std::copy_n(store_->labels().begin() + first, rows, labels);
  }

  void read_blocks(std::span<const int64_t> blocks, std::vector<uint8_t>&, std::span<const BlockBuffers> out) const override {
    for (const int64_t b : blocks) {
      if (read_group(b) != read_group(blocks.front())) throw std::logic_error("blocks of several groups read together");
    }
    group_reads.fetch_add(1);
    for (size_t i = 0; i < blocks.size(); ++i) read_one(blocks[i], out[i].payload, out[i].labels);
  }

  std::vector<int64_t> block_reads() const {
    const std::lock_guard lock(mutex_);
    return block_reads_;
  }

  // Reads wait at the gate until it opens (it starts open).
  void close_gate() {
    const std::lock_guard lock(mutex_);
    gate_open_ = false;
  }
  void open_gate() {
    {
      const std::lock_guard lock(mutex_);
      gate_open_ = true;
    }
    gate_cv_.notify_all();
  }
  // Reads given up at the gate because their reader was asked to (request_abort_asked()).
  int64_t reads_aborted() const {
    const std::lock_guard lock(mutex_);
    return reads_aborted_;
  }
  // Waits (at most 10 s) until `n` reads have begun in all; false if they did not.
  bool wait_for_reads_begun(int64_t n) const {
    std::unique_lock lock(mutex_);
    return begun_.wait_for(lock, std::chrono::seconds(10), [&] { return reads_begun_ >= n; });
  }

  mutable std::atomic<int64_t> reads{0};
  mutable std::atomic<int64_t> group_reads{0};  // read_blocks() calls
  // Set before any loader reads the store.
  int64_t group_blocks = 1;
  // Misbehaviour, set by the test at any time: each read sleeps up to this long; this many reads in
  // a thousand fail; blocks from this one on are gone.
  std::atomic<int64_t> max_delay_us{0};
  std::atomic<uint64_t> fail_per_mille{0};
  std::atomic<int64_t> vanished_from{INT64_MAX};

 private:
  static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }

  std::shared_ptr<const ImageStore> store_;
  std::vector<int64_t> starts_;
  std::set<int64_t> failing_;
  mutable std::mutex mutex_;
  mutable std::condition_variable gate_cv_;
  mutable std::condition_variable begun_;
  bool gate_open_ = true;              // guarded by mutex_
  mutable int64_t reads_begun_ = 0;    // guarded by mutex_
  mutable int64_t reads_aborted_ = 0;  // guarded by mutex_
  mutable std::vector<int64_t> block_reads_;  // guarded by mutex_
  Schema schema_;
};

}  // namespace feeder::testing
