#pragma once

// UTF-8 as Python decodes it (strict: no overlong forms, no encoded surrogates, nothing past
// U+10FFFF), for the names a file system hands over as bytes.
//
// Thread safety: pure functions.

#include <cstddef>

namespace feeder {

// The length (1 to 4) of the valid UTF-8 sequence that `bytes` (`size` of them, at least 1) starts
// with, its code point in `point`; 0 when it starts with none (a stray or invalid byte).
int utf8_sequence(const unsigned char* bytes, size_t size, char32_t& point);

}  // namespace feeder
