// libFuzzer target for the IDX reader. The first input byte picks the mode: even = an image file
// alone; odd = an image file and a label file, split at the offset given by the next two bytes
// (big-endian), so that the label checks and the count cross-check are reached too.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "feeder/error.h"
#include "feeder/formats/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::span<const uint8_t> input(data + 1, size - 1);
  try {
    feeder::ImageStore store;
    if (data[0] % 2 == 0) {
      store = feeder::read_idx_bytes(input, "images");
    } else {
      if (input.size() < 2) return 0;
      const size_t split = std::min<size_t>(input.size() - 2, (size_t{input[0]} << 8) | input[1]);
      const std::span<const uint8_t> files = input.subspan(2);
      store = feeder::read_idx_bytes(files.first(split), "images", files.subspan(split), "labels");
    }
    // A store that was accepted must be consistent with its own shape.
    if (store.pixels().size() != static_cast<size_t>(store.size() * store.image_bytes())) std::abort();
    for (int64_t label : store.labels())
      if (label != feeder::kNoLabel && (label < 0 || label > 255)) std::abort();
  } catch (const feeder::DataError&) {
    // Rejecting bad input with a message is the expected outcome.
  }
  return 0;
}
