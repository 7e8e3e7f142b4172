#include "app/command_line.h"

#include <algorithm>
#include <exception>
#include <iostream>
#include <memory>

#include "feeder/error.h"
#include "feeder/io/object_storage.h"
#include "feeder/util/printable.h"
#include "feeder/util/byte_size.h"

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

void add_storage_options(CLI::App& app) {
  auto options = std::make_shared<StorageOptions>();
  auto addressing = std::make_shared<std::string>("auto");
  auto cache_limit = std::make_shared<std::string>();
  const std::string group = "Remote data (s3://, http://, https://; AWS's environment variables and ~/.aws also apply)";
  app.add_option("--s3-endpoint", options->endpoint, "S3 endpoint URL (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else AWS's own)")->group(group);
  app.add_option("--s3-region", options->region, "region requests are signed for (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's, else us-east-1)")->group(group);
  app.add_option("--s3-profile", options->profile, "profile of ~/.aws/credentials and ~/.aws/config (default: AWS_PROFILE, else default)")->group(group);
  app.add_flag("--s3-anonymous", options->anonymous, "unsigned requests, as to a public bucket")->group(group);
  app.add_option("--s3-addressing", *addressing, "bucket in the path or the host name: auto (path for an endpoint given), path or virtual")
      ->check(CLI::IsMember({"auto", "path", "virtual"}))
      ->group(group);
  app.add_option("--ca-bundle", options->ca_bundle, "PEM file of certificate authorities for HTTPS (default: AWS_CA_BUNDLE, else the system's)")->group(group);
  app.add_option("--max-connections", options->max_connections, "connections open at once")->check(sane_range(1, 1024))->capture_default_str()->group(group);
  app.add_option("--max-retries", options->max_retries, "retries of a transient failure (with backoff, within --retry-seconds)")->check(sane_range(0, 100))->capture_default_str()->group(group);
  app.add_option("--max-listed-keys", options->max_listed_keys, "most keys one listing of an s3:// prefix may give (a server that lists for ever is stopped there)")->check(sane_range(1, int64_t{1} << 40))->capture_default_str()->group(group);
  app.add_option("--stall-seconds", options->stall_timeout_seconds, "a transfer that moves no byte this long fails (and is retried)")->check(CLI::Range(0.1, 3600.0))->capture_default_str()->group(group);
  app.add_option("--min-bytes-per-second", options->min_bytes_per_second, "a request fails (and is retried) past 10 s + --stall-seconds + its bytes at this rate")->check(CLI::Range(1.0, 1e12))->capture_default_str()->group(group);
  app.add_option("--retry-seconds", options->retry_seconds, "time a request may take over its retries")->check(CLI::Range(0.0, 3600.0))->capture_default_str()->group(group);
  app.add_option("--cache-dir", options->cache_dir, "keep what is read in this local directory, so that later epochs and runs read it there (shared by the node's processes)")->group(group);
  app.add_option("--cache-limit", *cache_limit, "most bytes kept in --cache-dir, least recently used removed first (\"50GB\", \"200GiB\"; default: no limit)")->group(group);
  app.parse_complete_callback([options, addressing, cache_limit] {
    options->addressing = parse_addressing_style(*addressing);
    if (!cache_limit->empty()) {
      if (options->cache_dir.empty()) throw CLI::ValidationError("--cache-limit", "needs --cache-dir");
      try {
        options->cache_limit = parse_byte_size(*cache_limit, "--cache-limit");
      } catch (const OptionsError& error) {
        throw CLI::ValidationError(error.what());
      }
    }
    set_storage_options(*options);
  });
}

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
