#pragma once

// Internal: the Thrift-generated Parquet structs (namespace feeder::parquet::format, generated from
// third_party/parquet-format/parquet.thrift) and bounded compact-protocol (de)serialization.
// Shared by the reader and the writer so both speak through the same generated code.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>

#include "parquet_types.h"

namespace feeder::parquet::detail {

// The wire value of a generated enum field. Files may hold values outside the enum's list, and
// loading such a value as the enum type is undefined, so it is read as the integer it was stored as.
// The minimum and maximum of `statistics` as stored: min_value/max_value, else the deprecated
// min/max; left unset when it has neither pair. For chunk and page statistics alike.
inline void statistics_min_max(const format::Statistics& statistics, std::optional<std::string>& min,
                               std::optional<std::string>& max) {
  if (statistics.__isset.min_value && statistics.__isset.max_value) {
    min = statistics.min_value;
    max = statistics.max_value;
  } else if (statistics.__isset.min && statistics.__isset.max) {
    min = statistics.min;
    max = statistics.max;
  }
}

template <class E>
int32_t raw_enum(const E& value) {
  static_assert(std::is_enum_v<E> && sizeof(E) == sizeof(int32_t));
  int32_t raw;
  std::memcpy(&raw, &value, sizeof(raw));
  return raw;
}

// Decodes one compact-protocol struct from data[0, size_bytes). Every string, binary and container
// length is bounded by size_bytes (no allocation larger than the input), nesting depth is bounded,
// and reading past the end is an error. Returns the number of bytes consumed.
// Throws DataError("<context>: <what> ...") on malformed input.
size_t read_file_metadata(const uint8_t* data, size_t size_bytes, format::FileMetaData& out,
                          const std::string& context);
size_t read_page_header(const uint8_t* data, size_t size_bytes, format::PageHeader& out,
                        const std::string& context);

// Encodes with the compact protocol, as Parquet requires.
std::string serialize_file_metadata(const format::FileMetaData& metadata);
std::string serialize_page_header(const format::PageHeader& header);

}  // namespace feeder::parquet::detail
