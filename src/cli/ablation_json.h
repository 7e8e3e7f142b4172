#pragma once

// Just enough JSON reading for the ablation to read back its rows' result files (its own and the
// Python reference's). Not a general library: no \u escapes beyond ASCII/BMP, numbers as double.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace feeder::cli {

struct JsonValue {
  enum class Kind { kNull, kBoolean, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue, std::less<>> object;

  // The member `key` of an object, or nullptr (also when this is not an object).
  const JsonValue* find(std::string_view key) const;
  // The member `key` when it is a number, else empty (missing, null or another kind).
  std::optional<double> number_at(std::string_view key) const;
  std::optional<bool> bool_at(std::string_view key) const;
};

// Parses a whole document; throws DataError "<source>: byte N: ..." when it is not valid JSON.
JsonValue parse_json(std::string_view text, std::string_view source);

}  // namespace feeder::cli
