// libFuzzer target for Parquet footers alone: the input's first 4 bytes are the offset at which the
// footer starts in its file (what every column chunk must lie before), the rest the footer's thrift
// bytes. It then resolves the image columns as both readers do. Any input must either parse or
// throw DataError, without crashes, hangs, leaks or huge allocations. Faster at the footer than
// parquet_fuzz, which must first find a whole file's ends.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "feeder/error.h"
#include "feeder/formats/parquet/reader.h"
#include "formats/parquet/detail/footer.h"
#include "formats/parquet/detail/image_columns.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feeder::parquet;
  if (size < 4) return 0;
  uint32_t footer_start = 0;
  std::memcpy(&footer_start, data, 4);
  const std::span<const uint8_t> footer(data + 4, size - 4);
  try {
    const FileMetadata metadata = detail::parse_footer(footer, footer_start, "fuzz.parquet");
    ParquetImageOptions options;
    options.max_decoded_bytes = int64_t{64} << 20;
    const detail::ImageColumns columns = detail::resolve_image_columns(metadata, "fuzz.parquet", options);
    (void)detail::describe_image_columns(metadata, columns);
  } catch (const feeder::DataError&) {
  }
  return 0;
}
