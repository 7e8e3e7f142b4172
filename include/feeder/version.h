#pragma once

namespace feeder {

inline constexpr const char* kVersion = "0.1.0";

}  // namespace feeder
