#pragma once

// Internal to the loader: BatchAssembly, how a batch's rows are made from its samples, picked once by
// the loader's constructor from its source: pixels of a store in memory, pixels of the stream's
// blocks, or encoded samples (in memory or streamed) through the sample stage. Workers call
// assemble() concurrently (the consumer thread too, without workers); it holds nothing mutable.

#include <cstdint>
#include <memory>

#include "data/detail/buffer_pool.h"
#include "data/detail/loader_plan.h"
#include "feeder/data/loader.h"
#include "feeder/data/sampler.h"
#include "feeder/data/source.h"

namespace feeder::detail {

class BlockStream;

// What a batch's assembly reads of the epoch in progress; the loader's consumer thread replaces
// what it refers to only while no worker assembles.
struct EpochView {
  const LoaderPlan& plan;
  const EpochPlan& order;  // this rank's batches
  int64_t epoch = 0;
};

class BatchAssembly {
 public:
  virtual ~BatchAssembly() = default;
  // Batch `batch_index` of the epoch, in a buffer of the pool. Throws BatchCancelled when the stream
  // was cancelled while the batch waited for its blocks; a sample's error fails the batch (DataError),
  // unless skip_bad_samples leaves an encoded sample out.
  virtual Batch assemble(const EpochView& epoch, int64_t batch_index) const = 0;
};

// The assembly for `source`: `stream` is the loader's when it streams (it must outlive the
// assembly), else nullptr.
std::unique_ptr<BatchAssembly> make_batch_assembly(std::shared_ptr<const SampleSource> source,
                                                   std::shared_ptr<BufferPool> pool, BlockStream* stream);

}  // namespace feeder::detail
