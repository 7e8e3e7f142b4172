// libFuzzer target for tar shards (feeder/image/tar_shards.h): the input is written to a temporary
// .tar file, opened (its member headers scanned, its labels read) and every block read as the
// stream reads it. Any input must either open and read or throw DataError, without crashes, hangs,
// leaks or huge allocations.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "feeder/error.h"
#include "feeder/image/tar_shards.h"

namespace {

const std::string& scratch_path() {
  static const std::string path = [] {
    std::string name = "/tmp/feeder-tar-fuzz-" + std::to_string(::getpid()) + ".tar";
    std::atexit([] { std::remove(scratch_path().c_str()); });
    return name;
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::FILE* file = std::fopen(scratch_path().c_str(), "wb");
  if (!file) return 0;
  const bool written = std::fwrite(data, 1, size, file) == size;
  if (std::fclose(file) != 0 || !written) return 0;
  try {
    const feeder::TarShards shards = feeder::open_tar_shards(scratch_path());
    const feeder::SampleSource& source = *shards.source;
    std::vector<uint8_t> scratch;
    for (int64_t b = 0; b < source.num_blocks(); ++b) {
      const int64_t rows = source.block_rows(b);
      const int64_t bytes = source.block_bytes(b);
      if (bytes > (int64_t{64} << 20)) continue;  // a header may claim a huge member: not allocated here
      std::vector<uint8_t> block(static_cast<size_t>(bytes));
      std::vector<int64_t> ends(static_cast<size_t>(rows)), labels(static_cast<size_t>(rows));
      try {
        source.read_block(b, scratch,
                          {.payload = block.data(), .capacity = bytes - rows * 16, .ends = ends.data(), .labels = labels.data()});
      } catch (const feeder::DataError&) {
      }
    }
  } catch (const feeder::DataError&) {
  }
  return 0;
}
