#pragma once

// The generators behind every random choice feeder makes: the epoch order and the generator each
// batch transform receives. Their output is fixed by definition (unlike the standard library's
// engines' seeding and its distributions), so results are identical across compilers and machines.
//
// Thread safety: SplitMix64 is a small value with no shared state: one per thread.
// batch_generator is a pure function.

#include <cstdint>
#include <limits>

namespace feeder {

// splitmix64 (Steele, Lea and Flood). A small value type: copy it to fork a stream. Not thread
// safe; give each thread its own. Satisfies UniformRandomBitGenerator, so std distributions accept
// it, but prefer below() and uniform(), whose results do not depend on the standard library.
class SplitMix64 {
 public:
  using result_type = uint64_t;

  explicit SplitMix64(uint64_t state) : state_(state) {}

  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<uint64_t>::max(); }
  result_type operator()() { return next(); }

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, bound) without modulo bias (Lemire's multiply-shift with rejection); bound > 0.
  uint64_t below(uint64_t bound) {
    unsigned __int128 product = static_cast<unsigned __int128>(next()) * bound;
    auto low = static_cast<uint64_t>(product);
    if (low < bound) {
      const uint64_t threshold = -bound % bound;
      while (low < threshold) {
        product = static_cast<unsigned __int128>(next()) * bound;
        low = static_cast<uint64_t>(product);
      }
    }
    return static_cast<uint64_t>(product >> 64);
  }

  // Uniform in [0, 1), with 24 random bits: every float of the form k / 2^24.
  float uniform() { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }
  // Uniform in [0, 1), with 53 random bits: every double of the form k / 2^53.
  double uniform_double() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// The generator a batch transform receives for batch `batch_idx` of epoch `epoch`: a pure function
// of the three, independent of the shuffle's stream, so a transform that draws only from it gives
// the same batches for any number of workers and in any order they run.
SplitMix64 batch_generator(uint64_t seed, int64_t epoch, int64_t batch_idx);

// The generator of sample `sample` (its index in the dataset) in epoch `epoch`: what a per-sample
// stage draws from (a random crop, a flip). A pure function of its arguments, apart from the batch
// and shuffle streams, so a sample's augmentation does not depend on which batch, rank or worker
// makes it. `occurrence`: how many times the epoch's order had the sample before (a sampler with
// replacement, repeated augmentation, a rank's padding): each copy is augmented anew, as torch
// draws afresh at every __getitem__. The first occurrence's stream is the one of (seed, epoch,
// sample) alone.
SplitMix64 sample_generator(uint64_t seed, int64_t epoch, int64_t sample, int64_t occurrence = 0);

}  // namespace feeder
