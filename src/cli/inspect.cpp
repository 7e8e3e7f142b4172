// `feeder inspect FILE.parquet`: schema, row groups, and per column chunk the codec, encodings,
// sizes and page counts, read from the footer and page headers only (no values are decoded).
// `feeder inspect DIR` (or a glob): a summary of a sharded set, from its index or its footers. The
// report is the library's (feeder/convert/inspect.h); the command escapes it for the terminal.

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "app/command_line.h"
#include "cli/commands.h"
#include "feeder/convert/inspect.h"
#include "feeder/util/printable.h"

namespace feeder::cli {

Command add_inspect_command(CLI::App& parent) {
  auto path = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand(
      "inspect", "show a Parquet file's schema, row groups, codecs and encodings, or summarise a sharded set");
  app->add_option("FILE", *path, "a .parquet file, or a sharded set: a directory or a glob such as 'data/part-*.parquet'")
      ->required();
  add_storage_options(*app);
  return {app, [path] {
            std::cout << printable(inspect_report(*path));
            return 0;
          }};
}

int inspect_main(const std::vector<std::string>& args) { return run_single_command(add_inspect_command, args); }

}  // namespace feeder::cli
