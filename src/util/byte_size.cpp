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

namespace {

// How format_byte_size shows `bytes`: a value in a unit (0: bytes, 1: KiB, ...) with 0 or 1 decimals.
struct ShownSize {
  double value = 0;
  int unit = 0;
  int decimals = 0;
};

ShownSize shown_size(int64_t bytes) {
  ShownSize shown{static_cast<double>(bytes), 0, 0};
  while (shown.value >= 1024.0 && shown.unit < 4) {
    shown.value /= 1024.0;
    ++shown.unit;
  }
  if (shown.unit == 0) return shown;
  // One decimal below 10 of a unit; a value that rounds up to 10 or to 1024 is shown as such
  // ("10 KiB", "1.0 MiB"), never as "10.0 KiB" or "1024 KiB".
  shown.decimals = shown.value < 9.95 ? 1 : 0;
  if (shown.decimals == 0 && std::round(shown.value) >= 1024.0 && shown.unit < 4) {
    shown.value /= 1024.0;
    ++shown.unit;
    shown.decimals = 1;
  }
  return shown;
}

}  // namespace

std::string format_byte_size(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  const ShownSize shown = shown_size(bytes);
  char text[32];
  if (shown.unit == 0)
    std::snprintf(text, sizeof(text), "%lld B", static_cast<long long>(bytes));
  else
    std::snprintf(text, sizeof(text), "%.*f %s", shown.decimals, shown.value, kUnits[shown.unit]);
  return text;
}

int64_t round_up_to_shown_size(int64_t bytes) {
  const ShownSize shown = shown_size(bytes);
  if (shown.unit == 0) return bytes;
  const double step = std::pow(1024.0, shown.unit) / (shown.decimals ? 10.0 : 1.0);
  return static_cast<int64_t>(std::ceil(static_cast<double>(bytes) / step) * step);
}

}  // namespace feeder
