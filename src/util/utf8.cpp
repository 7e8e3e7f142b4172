#include "feeder/util/utf8.h"

namespace feeder {

int utf8_sequence(const unsigned char* bytes, size_t size, char32_t& point) {
  const unsigned char lead = bytes[0];
  int length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range, UTF-8's table
  if (lead < 0x80) {
    point = lead;
    return 1;
  } else if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, point = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, point = lead & 0x0F;
    if (lead == 0xE0) low = 0xA0;   // no overlong forms
    if (lead == 0xED) high = 0x9F;  // no encoded surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, point = lead & 0x07;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (static_cast<size_t>(length) > size) return 0;
  for (int k = 1; k < length; ++k) {
    const unsigned char next = bytes[k];
    if (next < (k == 1 ? low : 0x80) || next > (k == 1 ? high : 0xBF)) return 0;
    point = (point << 6) | (next & 0x3F);
  }
  return length;
}

}  // namespace feeder
