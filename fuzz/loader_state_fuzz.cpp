// libFuzzer target for a saved loader state: LoaderState::from_json, then Loader::restore and the
// batches after it. That text arrives from outside (Python's load_state_dict, a checkpoint file),
// so any input must either restore and give batches or throw OptionsError, without crashes,
// overflows, hangs or leaks. The first input byte picks the loader it is restored into (in memory
// or streamed in blocks; shuffled or not; a window given or chosen by the loader); the rest is the
// state's JSON. The seed corpus (fuzz/corpus/loader_state_fuzz) holds states these loaders wrote.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "../tests/core/numbered_store.h"
#include "../tests/core/streamed_store.h"
#include "feeder/data/loader.h"
#include "feeder/error.h"

namespace {

constexpr int kLoaders = 4;

std::unique_ptr<feeder::Loader> make_loader(int kind) {
  const std::shared_ptr<const feeder::ImageStore> store = feeder::testing::numbered_store(403, {1, 8, 8});
  feeder::LoaderOptions options = feeder::testing::options_with(8, 0);
  options.shuffle = kind != 3;
  if (kind == 0) return std::make_unique<feeder::Loader>(store, options);
  if (kind == 2) options.shuffle_window = 30;
  // Blocks of 10 samples of 64 bytes; a budget whose default window is a fraction of the set.
  options.memory_budget = 24 << 10;
  auto source = std::make_shared<feeder::testing::StreamedStore>(store, feeder::testing::uniform_blocks(403, 10));
  return std::make_unique<feeder::Loader>(source, options);
}

feeder::Loader& loader(int kind) {
  static std::unique_ptr<feeder::Loader> loaders[kLoaders] = {make_loader(0), make_loader(1), make_loader(2),
                                                             make_loader(3)};
  return *loaders[kind];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  feeder::Loader& target = loader(data[0] % kLoaders);
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    target.restore(feeder::LoaderState::from_json(text));
  } catch (const feeder::OptionsError&) {
    return 0;
  }
  // Restored: the rest of the epoch, as the state says.
  int64_t batches = 0;
  while (std::optional<feeder::Batch> batch = target.next()) {
    if (batch->size() < 1 || batch->size() > 8) std::abort();
    ++batches;
  }
  if (batches > target.num_batches() || target.state().batches_delivered != target.num_batches()) std::abort();
  return 0;
}
