#include <iostream>

#include "cli/commands.h"

namespace feeder::cli {

int inspect_main(const std::vector<std::string>& args) {
  std::cerr << "feeder inspect: not available yet\n";
  return 2;
}

}  // namespace feeder::cli
