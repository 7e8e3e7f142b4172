#include "feeder/util/printable.h"

#include <cstdio>

#include "feeder/util/utf8.h"

namespace feeder {

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    char32_t point = 0;
    const int length = utf8_sequence(bytes + i, text.size() - i, point);
    const bool control = length == 1 && ((point < 0x20 && point != '\n' && point != '\t') || point == 0x7F);
    const bool c1 = length == 2 && point >= 0x80 && point < 0xA0;  // C1 controls (CSI is U+009B)
    if (length == 0 || control || c1) {
      for (int k = 0; k < (length == 0 ? 1 : length); ++k) {
        char escaped[5];
        std::snprintf(escaped, sizeof(escaped), "\\x%02X", bytes[i + static_cast<size_t>(k)]);
        out += escaped;
      }
      i += length == 0 ? 1 : static_cast<size_t>(length);
      continue;
    }
    out.append(text.substr(i, static_cast<size_t>(length)));
    i += static_cast<size_t>(length);
  }
  return out;
}

}  // namespace feeder
