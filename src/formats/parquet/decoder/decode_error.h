#pragma once

#include <stdexcept>

namespace feeder::parquet::decoder {

// Thrown by decoders, which know the bytes but not where they come from; the page reader catches it
// and rethrows a DataError prefixed with the file, column and page.
class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace feeder::parquet::decoder
