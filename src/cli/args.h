#pragma once

// Helpers shared by the commands' argument parsers.

#include <charconv>
#include <string>
#include <string_view>

#include "feeder/error.h"

namespace feeder::cli {

// The integer value of `flag`, which must be at least min_value; OptionsError naming the flag otherwise.
template <typename Int>
Int parse_int(std::string_view flag, std::string_view text, Int min_value) {
  Int number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc{} || end != text.data() + text.size() || number < min_value) {
    throw OptionsError(std::string(flag) + " needs an integer >= " + std::to_string(min_value) + ", got '" +
                       std::string(text) + "'");
  }
  return number;
}

}  // namespace feeder::cli
