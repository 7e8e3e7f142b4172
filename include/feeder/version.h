#pragma once

// The version of the library. The CMake package (feederConfigVersion.cmake) and feeder.pc take
// their version from this line. A constant: any thread.

namespace feeder {

inline constexpr const char* kVersion = "0.1.0";

}  // namespace feeder
