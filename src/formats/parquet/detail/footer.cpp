#include "formats/parquet/detail/footer.h"

#include <cstring>

#include "feeder/error.h"

namespace feeder::parquet::detail {

uint32_t check_file_ends(std::span<const uint8_t> head, std::span<const uint8_t> tail, uint64_t file_size,
                         const std::string& name) {
  if (head.size() >= kMagicBytes && std::memcmp(head.data(), "PARE", 4) == 0) {
    throw DataError(name + ": encrypted parquet not supported (magic PARE)");
  }
  if (file_size < kMagicBytes + kFooterTailBytes || tail.size() < kFooterTailBytes) {
    throw DataError(name + ": not a Parquet file: " + std::to_string(file_size) + " bytes is too short (truncated?)");
  }
  if (std::memcmp(head.data(), "PAR1", 4) != 0) {
    throw DataError(name + ": not a Parquet file: bad magic at the start (expected PAR1)");
  }
  const uint8_t* magic = tail.data() + tail.size() - 4;
  if (std::memcmp(magic, "PARE", 4) == 0) throw DataError(name + ": encrypted parquet not supported (footer magic PARE)");
  if (std::memcmp(magic, "PAR1", 4) != 0) {
    throw DataError(name + ": not a Parquet file: bad magic at the end (expected PAR1; truncated file?)");
  }
  uint32_t footer_bytes = 0;
  std::memcpy(&footer_bytes, tail.data() + tail.size() - kFooterTailBytes, 4);
  const uint64_t room = file_size - kMagicBytes - kFooterTailBytes;
  if (footer_bytes == 0 || footer_bytes > room) {
    throw DataError(name + ": footer length " + std::to_string(footer_bytes) + " is larger than the file allows (" +
                    std::to_string(room) + " bytes between the magics)");
  }
  return footer_bytes;
}

FileMetadata parse_footer(std::span<const uint8_t> footer, uint64_t footer_start, const std::string& name) {
  FileMetadata metadata = parse_file_metadata(footer, static_cast<int64_t>(footer_start), name);
  int64_t rows = 0;
  bool overflow = false;
  for (const RowGroupInfo& group : metadata.row_groups) overflow = overflow || __builtin_add_overflow(rows, group.num_rows, &rows);
  if (overflow || rows != metadata.num_rows) {
    throw DataError(name + ": footer declares " + std::to_string(metadata.num_rows) +
                    " rows but its row groups add up to " +
                    (overflow ? std::string("more than 2^63") : std::to_string(rows)));
  }
  return metadata;
}

}  // namespace feeder::parquet::detail
