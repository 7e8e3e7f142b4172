// libFuzzer target for feeder's UTF-8 reader (feeder/util/utf8.h), which reads names from the data
// (file names, tar members) to sort them as Python does and to escape them on a terminal. Any input
// must be read without overruns, and every sequence it accepts must be UTF-8 as Python's strict
// decoder takes it: the code point re-encodes to exactly the bytes read, is no surrogate and is at
// most U+10FFFF.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "feeder/util/utf8.h"

namespace {

// The shortest UTF-8 encoding of `point`, into `out`; its length.
int encode(char32_t point, unsigned char* out) {
  if (point < 0x80) return out[0] = static_cast<unsigned char>(point), 1;
  if (point < 0x800) {
    out[0] = static_cast<unsigned char>(0xC0 | (point >> 6));
    out[1] = static_cast<unsigned char>(0x80 | (point & 0x3F));
    return 2;
  }
  if (point < 0x10000) {
    out[0] = static_cast<unsigned char>(0xE0 | (point >> 12));
    out[1] = static_cast<unsigned char>(0x80 | ((point >> 6) & 0x3F));
    out[2] = static_cast<unsigned char>(0x80 | (point & 0x3F));
    return 3;
  }
  out[0] = static_cast<unsigned char>(0xF0 | (point >> 18));
  out[1] = static_cast<unsigned char>(0x80 | ((point >> 12) & 0x3F));
  out[2] = static_cast<unsigned char>(0x80 | ((point >> 6) & 0x3F));
  out[3] = static_cast<unsigned char>(0x80 | (point & 0x3F));
  return 4;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (size_t i = 0; i < size;) {
    char32_t point = 0;
    const int length = feeder::utf8_sequence(data + i, size - i, point);
    if (length < 0 || length > 4 || static_cast<size_t>(length) > size - i) std::abort();
    if (length == 0) {
      ++i;
      continue;
    }
    if (point > 0x10FFFF || (point >= 0xD800 && point <= 0xDFFF)) std::abort();
    unsigned char again[4];
    if (encode(point, again) != length) std::abort();  // an overlong form was accepted
    for (int k = 0; k < length; ++k)
      if (again[k] != data[i + static_cast<size_t>(k)]) std::abort();
    i += static_cast<size_t>(length);
  }
  return 0;
}
