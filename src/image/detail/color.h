#pragma once

// The color conversions a decode ends with, as PIL makes them (Pillow's Convert.c), so that decoded
// pixels equal PIL's `Image.convert("RGB")` and `convert("L")`.

#include <cstdint>

namespace feeder::detail {

// ITU-R 601-2 luma in 16-bit fixed point, rounded: PIL's RGB -> L.
inline void rgb_to_gray(const uint8_t* rgb, uint8_t* gray, int64_t pixels) {
  for (int64_t i = 0; i < pixels; ++i, rgb += 3)
    gray[i] = static_cast<uint8_t>((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16);
}

// Backwards, so that it works in place with `rgb` at the start of the same buffer.
inline void gray_to_rgb(const uint8_t* gray, uint8_t* rgb, int64_t pixels) {
  for (int64_t i = pixels - 1; i >= 0; --i) {
    const uint8_t value = gray[i];
    rgb[3 * i] = value;
    rgb[3 * i + 1] = value;
    rgb[3 * i + 2] = value;
  }
}

// PIL's CMYK -> RGB: each channel (255 - K) - C * (255 - K) / 255, the division rounded as PIL's
// MULDIV255. `inverted`: the values are stored as 255 - value (Adobe's CMYK JPEGs). Forwards, so that
// it works in place with `rgb` at the start of the same buffer.
inline void cmyk_to_rgb(const uint8_t* cmyk, uint8_t* rgb, int64_t pixels, bool inverted) {
  for (int64_t i = 0; i < pixels; ++i, cmyk += 4, rgb += 3) {
    const int flip = inverted ? 255 : 0;
    const int nk = 255 - (cmyk[3] ^ flip);
    for (int c = 0; c < 3; ++c) {
      const int product = (cmyk[c] ^ flip) * nk + 128;
      const int value = nk - (((product >> 8) + product) >> 8);
      rgb[c] = static_cast<uint8_t>(value < 0 ? 0 : value);
    }
  }
}

}  // namespace feeder::detail
