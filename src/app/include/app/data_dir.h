#pragma once

// The commands' default data: where Debian's dataset-fashion-mnist package puts FashionMNIST. The
// format layer takes any directory; only the application knows this one and how to install it.

#include <filesystem>
#include <string>

#include "feeder/error.h"
#include "feeder/formats/dataset_files.h"

namespace feeder::cli {

inline const std::filesystem::path kDefaultDataDir = "/usr/share/datasets/fashion-mnist";

// What to add to a "data not found" message about `dir`: how to get the default data when `dir` is
// the default directory, nothing for any other.
inline std::string missing_data_hint(const std::filesystem::path& dir) {
  if (dir.lexically_normal() != kDefaultDataDir.lexically_normal()) return "";
  return "; install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist) or pass "
         "--data DIR / --train FILE --test FILE";
}

// find_split_file, whose DataError also says how to get the data when `dir` is the default.
inline std::filesystem::path find_data_split(const std::filesystem::path& dir, Split split) {
  try {
    return find_split_file(dir, split);
  } catch (const DataError& error) {
    const std::string hint = missing_data_hint(dir);
    if (hint.empty()) throw;
    throw DataError(error.what() + hint);
  }
}

}  // namespace feeder::cli
