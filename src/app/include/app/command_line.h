#pragma once

// What every feeder command shares: a command is a CLI11 subcommand whose options fill a struct,
// plus the function that runs it; run_command_line() parses, picks the command and turns the
// outcome into an exit code (0 ok, 1 bad data or a failed run, 2 a bad command line).

#include <CLI/CLI.hpp>

#include <functional>
#include <stdexcept>
#include <utility>
#include <string>
#include <vector>

namespace feeder::cli {

struct Command {
  CLI::App* app = nullptr;    // the subcommand, owned by its parent App
  std::function<int()> run;  // called once, after a successful parse, when this command was chosen
};

// Parses `args` (without the program name) with `app`, then runs the chosen command. Parse errors
// print "<program> <command>: <message>" and the command's usage to stderr and return 2; --help
// prints the help and returns 0; an exception from run() prints its message and returns 2 for an
// OptionsError, else 1.
int run_command_line(CLI::App& app, std::vector<std::string> args, const std::vector<Command>& commands);

// Runs the one command that `add` registers, as `feeder <command> args...`.
int run_single_command(Command (*add)(CLI::App&), const std::vector<std::string>& args);

// The options of s3:// and http(s):// paths (feeder/io/object_storage.h), in a group of their own;
// set for the process once the command line is parsed, before the command runs.
void add_storage_options(CLI::App& app);

// A validator for integer options that must be at least `min`; the message names the bound.
CLI::Validator at_least(long long min);
// An integer from `min` to `max`; above `max` the message calls the value absurd and gives the bound.
CLI::Validator sane_range(long long min, long long max);

// A validator that runs the library's own parser of a name (codec, precision, ...), so the choices
// and the message live in one place; `parse` throws OptionsError on a bad name.
template <typename Parse>
CLI::Validator parsed_by(Parse parse, std::string description) {
  return CLI::Validator(
      [parse](std::string& text) -> std::string {
        try {
          parse(text);
          return "";
        } catch (const std::invalid_argument& error) {
          return error.what();
        }
      },
      std::move(description));
}

}  // namespace feeder::cli
