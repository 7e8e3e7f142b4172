#include "app/command_line.h"

#include <algorithm>
#include <exception>
#include <iostream>

#include "feeder/util/printable.h"
#include "feeder/error.h"

namespace feeder::cli {
namespace {

// "feeder bench loader": the app's name and the subcommands the parse selected, for messages.
std::string command_path(const CLI::App& app) {
  std::string path = app.get_name();
  for (const CLI::App* current = &app; !current->get_subcommands().empty();) {
    current = current->get_subcommands().front();
    path += " " + current->get_name();
  }
  return path;
}

}  // namespace

int run_command_line(CLI::App& app, std::vector<std::string> args, const std::vector<Command>& commands) {
  const std::string first = args.empty() ? "" : args.front();
  // CLI11 takes the arguments last to first.
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();  // the selected subcommand's help, with its full name
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& version) {
    std::cout << version.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& error) {
    // CLI11 would only say that a subcommand is required: name the word it did not know.
    const bool unknown_command = app.get_subcommands().empty() && !first.empty() && first[0] != '-';
    std::cerr << command_path(app) << ": "
              << (unknown_command ? "unknown command '" + first + "'" : std::string(error.what())) << "\n\n"
              << app.help();
    return 2;
  }
  const std::string name = command_path(app);
  for (const Command& command : commands) {
    if (!command.app->parsed()) continue;
    try {
      return command.run();
    } catch (const OptionsError& error) {
      std::cerr << name << ": " << printable(error.what()) << "\n";
      return 2;
    } catch (const std::exception& error) {
      // Library messages already name the file and the place in it.
      std::cerr << name << ": " << printable(error.what()) << "\n";
      return 1;
    }
  }
  std::cerr << app.help();
  return 2;
}

int run_single_command(Command (*add)(CLI::App&), const std::vector<std::string>& args) {
  CLI::App app("", "feeder");
  const Command command = add(app);
  std::vector<std::string> command_line = {command.app->get_name()};
  command_line.insert(command_line.end(), args.begin(), args.end());
  return run_command_line(app, command_line, {command});
}

CLI::Validator at_least(long long min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        long long value = 0;
        if (!CLI::detail::lexical_cast(text, value) || value < min) {
          return "needs an integer >= " + std::to_string(min) + ", got '" + text + "'";
        }
        return "";
      },
      "INT>=" + std::to_string(min));
}

CLI::Validator sane_range(long long min, long long max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        long long value = 0;
        if (!CLI::detail::lexical_cast(text, value) || value < min) {
          return "needs an integer >= " + std::to_string(min) + ", got '" + text + "'";
        }
        if (value > max) return text + " is absurd; use at most " + std::to_string(max);
        return "";
      },
      "INT in " + std::to_string(min) + ".." + std::to_string(max));
}

}  // namespace feeder::cli
