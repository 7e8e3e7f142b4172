// libFuzzer target for the Parquet reader: any input must either decode or throw DataError, without
// crashes, hangs, leaks or huge allocations. Runs the generic column path, the image path and the
// page-header walk used by `feeder inspect`, all from memory.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "feeder/error.h"
#include "feeder/formats/parquet/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feeder::parquet;
  ReaderOptions options;
  options.verify_checksums = (size & 1) != 0;  // exercise both paths
  options.max_decoded_bytes = int64_t{64} << 20;
  try {
    const ParquetFile file = ParquetFile::from_buffer(std::vector<uint8_t>(data, data + size), "fuzz.parquet", options);
    const auto& meta = file.metadata();
    for (int64_t rg = 0; rg < static_cast<int64_t>(meta.row_groups.size()); ++rg) {
      for (int64_t c = 0; c < static_cast<int64_t>(meta.columns.size()); ++c) {
        try {
          file.summarize_pages(rg, c);
        } catch (const feeder::DataError&) {
        }
      }
    }
    for (int64_t c = 0; c < static_cast<int64_t>(meta.columns.size()); ++c) {
      try {
        file.read_column(c);
      } catch (const feeder::DataError&) {
      }
    }
    ParquetImageOptions image_options;
    image_options.num_threads = 2;
    image_options.max_decoded_bytes = options.max_decoded_bytes;
    image_options.verify_checksums = options.verify_checksums;
    read_parquet_images(file, image_options);
  } catch (const feeder::DataError&) {
  }
  return 0;
}
