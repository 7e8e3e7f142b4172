#pragma once

// Internal: the checks on a Parquet file's two ends (magics, footer length) and on its parsed
// footer, shared by ParquetFile (whole file in memory) and ParquetRowGroupReader (footer read with
// pread), so both reject the same files with the same messages.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "feeder/formats/parquet/metadata.h"

namespace feeder::parquet::detail {

inline constexpr size_t kMagicBytes = 4;
inline constexpr size_t kFooterTailBytes = 8;  // u32 footer length + "PAR1"

// Checks the leading and trailing magics and the footer length of a file of `file_size` bytes, given
// its first min(4, file_size) bytes (`head`) and its last min(8, file_size) bytes (`tail`). Returns
// the footer length, which is then known to fit between the magics. Throws DataError naming `name`.
uint32_t check_file_ends(std::span<const uint8_t> head, std::span<const uint8_t> tail, uint64_t file_size,
                         const std::string& name);

// Parses the footer that starts at byte `footer_start` of the file (so every column chunk must lie
// in [4, footer_start)) and checks that the row groups add up to the declared row count.
FileMetadata parse_footer(std::span<const uint8_t> footer, uint64_t footer_start, const std::string& name);

}  // namespace feeder::parquet::detail
