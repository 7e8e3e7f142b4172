#include "feeder/util/byte_size.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

#include "feeder/error.h"

namespace feeder {
namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Bytes per unit, or 0 for an unknown unit.
double unit_bytes(const std::string& unit) {
  struct Unit {
    const char* name;
    double bytes;
  };
  static constexpr Unit kUnits[] = {
      {"", 1.0},         {"b", 1.0},           {"kb", 1e3},           {"mb", 1e6},           {"gb", 1e9},
      {"tb", 1e12},      {"k", 1024.0},        {"m", 1048576.0},      {"g", 1073741824.0},   {"t", 1099511627776.0},
      {"kib", 1024.0},   {"mib", 1048576.0},   {"gib", 1073741824.0}, {"tib", 1099511627776.0},
  };
  for (const Unit& u : kUnits)
    if (unit == u.name) return u.bytes;
  return 0.0;
}

}  // namespace

int64_t parse_byte_size(std::string_view text, std::string_view what) {
  const std::string quoted = std::string(what) + " '" + std::string(text) + "'";
  size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) ++end;
  if (end == 0) throw OptionsError(quoted + ": expected a size such as 16MB, 256MiB or 2GB");
  // The whole run of digits and dots must be one number: "1.2.3MB" is not 1.2 MB.
  double number = 0.0;
  const auto [number_end, parse_error] = std::from_chars(text.data(), text.data() + end, number);
  if (parse_error != std::errc() || number_end != text.data() + end) {
    throw OptionsError(quoted + ": expected a size such as 16MB, 256MiB or 2GB");
  }
  size_t unit_begin = end;
  while (unit_begin < text.size() && text[unit_begin] == ' ') ++unit_begin;
  const double scale = unit_bytes(lowercase(text.substr(unit_begin)));
  if (scale == 0.0)
    throw OptionsError(quoted + ": unknown unit; use B, kB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB");
  const double bytes = std::floor(number * scale);
  if (!(bytes >= 1.0)) throw OptionsError(quoted + ": must be at least 1 byte");
  if (bytes >= 9.2e18) throw OptionsError(quoted + ": too large");
  return static_cast<int64_t>(bytes);
}

std::string format_byte_size(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof(text), "%lld B", static_cast<long long>(bytes));
    return text;
  }
  // One decimal below 10 of a unit; a value that rounds up to 10 or to 1024 is shown as such
  // ("10 KiB", "1.0 MiB"), never as "10.0 KiB" or "1024 KiB".
  int decimals = value < 9.95 ? 1 : 0;
  if (decimals == 0 && std::round(value) >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
    decimals = 1;
  }
  std::snprintf(text, sizeof(text), "%.*f %s", decimals, value, kUnits[unit]);
  return text;
}

}  // namespace feeder
