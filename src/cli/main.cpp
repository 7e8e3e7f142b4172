// feeder: the command-line front end. Each command registers its options and its run function in
// its own file; main only assembles them and turns the outcome into an exit code.

#include <iostream>
#include <string>
#include <vector>

#include "app/command_line.h"
#include "cli/bench.h"
#include "cli/commands.h"
#include "cli/interrupt_signals.h"
#include "cli/train.h"
#include "feeder/util/interrupt.h"
#include "feeder/version.h"

int main(int argc, char** argv) {
  using namespace feeder::cli;
  CLI::App app("feeder: a fast data loader for LibTorch training, with its trainer and benchmarks", "feeder");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("feeder ") + feeder::kVersion);
  app.footer("`feeder <command> --help` describes a command's options.");

  std::vector<Command> commands;
  commands.push_back(add_train_command(app));
  commands.push_back(add_bench_command(app));
  // Ctrl-C stops a conversion at its next image, row group or shard, which then removes what it
  // wrote; the process then ends by the signal, as a shell expects.
  Command convert = add_convert_command(app);
  convert.run = [run = convert.run] {
    InterruptOnSignals signals;
    try {
      return run();
    } catch (const feeder::Interrupted&) {
      std::cerr << "feeder convert: interrupted; what it had written is removed" << std::endl;
      signals.end_by_signal();
      return 130;  // as a shell reports SIGINT, should the signal not end the process
    }
  };
  commands.push_back(convert);
  commands.push_back(add_inspect_command(app));
  CLI::App* version = app.add_subcommand("version", "print the version");
  commands.push_back({version, [] {
                        std::cout << "feeder " << feeder::kVersion << "\n";
                        return 0;
                      }});
  return run_command_line(app, std::vector<std::string>(argv + 1, argv + argc), commands);
}
