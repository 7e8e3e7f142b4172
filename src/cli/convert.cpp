#include <iostream>

#include "cli/commands.h"

namespace feeder::cli {

int convert_main(const std::vector<std::string>& args) {
  std::cerr << "feeder convert: not available yet\n";
  return 2;
}

}  // namespace feeder::cli
