#include "feeder/data/random.h"

namespace feeder {

SplitMix64 batch_generator(uint64_t seed, int64_t epoch, int64_t batch_idx) {
  // Each input goes through a full splitmix64 step before the next is mixed in, so nearby
  // (seed, epoch, batch) triples give unrelated streams; the constant keeps this stream apart from
  // the shuffle's, which starts from the same seed.
  SplitMix64 mix(seed ^ 0x6a09e667f3bcc909ull);
  SplitMix64 with_epoch(mix.next() ^ static_cast<uint64_t>(epoch));
  SplitMix64 with_batch(with_epoch.next() ^ static_cast<uint64_t>(batch_idx));
  return SplitMix64(with_batch.next());
}

SplitMix64 sample_generator(uint64_t seed, int64_t epoch, int64_t sample, int64_t occurrence) {
  // As batch_generator, with its own constant; a repeat mixes in its number last, so that the
  // first occurrence keeps the stream (and the golden values) of (seed, epoch, sample).
  SplitMix64 mix(seed ^ 0xbb67ae8584caa73bull);
  SplitMix64 with_epoch(mix.next() ^ static_cast<uint64_t>(epoch));
  SplitMix64 with_sample(with_epoch.next() ^ static_cast<uint64_t>(sample));
  if (occurrence == 0) return SplitMix64(with_sample.next());
  SplitMix64 with_occurrence(with_sample.next() ^ (static_cast<uint64_t>(occurrence) * 0x3c6ef372fe94f82bull));
  return SplitMix64(with_occurrence.next());
}

}  // namespace feeder
