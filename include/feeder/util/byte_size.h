#pragma once

// Sizes in bytes as people write them ("256MiB") and read them. Pure functions: any thread.

#include <cstdint>
#include <string>
#include <string_view>

namespace feeder {

// Parses a size such as "16MB", "256MiB", "2GB", "1.5G" or "4096": decimal units (kB/KB, MB, GB, TB)
// are powers of 1000, binary ones (KiB, MiB, GiB, TiB) and the bare letters K, M, G, T are powers
// of 1024, a plain number is bytes; case-insensitive, spaces allowed before the unit. Throws
// OptionsError quoting `what` and the text when it is not a positive size that fits in int64.
int64_t parse_byte_size(std::string_view text, std::string_view what = "size");

// "256 MiB", "1.5 GiB", "812 B": binary units, one decimal below 10 of a unit, none above.
std::string format_byte_size(int64_t bytes);

// `bytes` rounded up to a size format_byte_size shows exactly, so that a size a message advises is
// at least `bytes` as the reader types it back.
int64_t round_up_to_shown_size(int64_t bytes);

}  // namespace feeder
