// libFuzzer target for the CSV reader. Parses each input with 1 and with 3 threads: besides the
// sanitizers, it checks that chunked parsing changes nothing, neither the store nor which error is
// reported (the first in file order).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "feeder/error.h"
#include "feeder/formats/csv.h"

namespace {

struct Outcome {
  feeder::ImageStore store;
  std::string error;  // empty on success
};

Outcome parse(std::span<const uint8_t> input, int num_threads) {
  feeder::CsvReadOptions options;
  options.num_threads = num_threads;
  Outcome outcome;
  try {
    outcome.store = feeder::read_csv_bytes(input, "fuzz.csv", options);
  } catch (const feeder::DataError& error) {
    outcome.error = error.what();
    if (outcome.error.empty()) std::abort();
  }
  return outcome;
}

bool same_store(const feeder::ImageStore& a, const feeder::ImageStore& b) {
  return a.shape() == b.shape() && a.size() == b.size() && a.labeled() == b.labeled() &&
         std::equal(a.pixels().begin(), a.pixels().end(), b.pixels().begin(), b.pixels().end()) &&
         std::equal(a.labels().begin(), a.labels().end(), b.labels().begin(), b.labels().end());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> input(data, size);
  const Outcome one = parse(input, 1);
  const Outcome three = parse(input, 3);
  if (one.error != three.error) std::abort();
  if (one.error.empty() && !same_store(one.store, three.store)) std::abort();
  return 0;
}
