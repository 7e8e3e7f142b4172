#pragma once

// Internal to feeder_torch: the message of an exception, without the C++ backtrace that LibTorch's
// c10::Error appends to what(); the first line says what happened, the rest is noise to a user.

#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace feeder::detail {

inline std::string error_text(const std::exception& error) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error)) return c10_error->what_without_backtrace();
  return error.what();
}

}  // namespace feeder::detail
