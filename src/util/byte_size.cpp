#include "feeder/util/byte_size.h"

#include <cctype>
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
  double number = 0.0;
  try {
    number = std::stod(std::string(text.substr(0, end)));
  } catch (const std::exception&) {
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
  if (unit == 0) std::snprintf(text, sizeof(text), "%lld B", static_cast<long long>(bytes));
  else std::snprintf(text, sizeof(text), "%.*f %s", value < 10.0 ? 1 : 0, value, kUnits[unit]);
  return text;
}

}  // namespace feeder
