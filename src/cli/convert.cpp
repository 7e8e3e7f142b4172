// feeder convert IN OUT: the command line of the library's conversion (feeder/convert/convert.h).
// Its options fill ConvertOptions; the report goes to stdout as the library formats it, the
// warnings to stderr, and progress lines to stderr when it is a terminal.

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "app/command_line.h"
#include "cli/commands.h"
#include "feeder/convert/convert.h"
#include "feeder/formats/parquet/writer.h"
#include "feeder/util/byte_size.h"
#include "feeder/util/printable.h"

namespace feeder::cli {
namespace {

// Progress lines for a person watching, on a terminal only (not in logs or pipes).
ConvertProgress terminal_progress() {
  if (::isatty(STDERR_FILENO) != 1) return nullptr;
  return [](const std::string& line) { std::cerr << "feeder convert: " << line << std::endl; };
}

// Images written as they are that a loader will fail on: a warning naming the first few.
void warn_bad(const char* what, const BadImages& bad) {
  if (bad.count == 0) return;
  std::string reasons;
  for (const std::string& reason : bad.first) reasons += "\n  " + printable(reason);  // names from the data
  std::fprintf(stderr,
               "feeder convert: warning: %lld of the images %s; they are written as they are, and a loader fails "
               "on them (or leaves them out with on_error=\"skip\", --skip-bad-images). The first:%s\n",
               static_cast<long long>(bad.count), what, reasons.c_str());
}

// Options given as text that the library takes as values: kept as text until the command runs, so
// that "given or not" is whether the text is empty.
struct TextOptions {
  std::string layout;
  std::string codec;
  std::vector<int64_t> shape;
};

}  // namespace

Command add_convert_command(CLI::App& parent) {
  auto options = std::make_shared<ConvertOptions>();
  auto text = std::make_shared<TextOptions>();
  CLI::App* app = parent.add_subcommand("convert", "convert between CSV, IDX and Parquet, with a size report");
  app->footer(
      "IN:  .csv, .parquet or IDX (*-images-idx3-ubyte[.gz], labels read from the file beside it), or a folder\n"
      "     of JPEG/PNG/WebP images in torchvision's ImageFolder layout, or WebDataset-style tar shards (a .tar,\n"
      "     a directory of them or a glob: key.jpg + key.cls), or a Parquet set of encoded images (Hugging\n"
      "     Face datasets' files, any writer's), written as Parquet shards of the images' bytes\n"
      "     (no re-encoding unless --max-side; row groups of 100 images; --shuffle-on-write SEED recommended;\n"
      "     one shard's images are held in memory at a time)\n"
      "OUT: .parquet or .csv (the article's layout label,pixel1..pixelK), or a directory (OUT/, an existing\n"
      "     directory, or --shard-rows / --shard-size) for a sharded Parquet set: part-00000.parquet ...\n"
      "     plus index.json; shards of 256MB unless told otherwise, written to stream well: the image layout,\n"
      "     lz4, and pages of a 4096th of the set (16 KiB to 1 MiB of images: the stream's unit of shuffling;\n"
      "     --layout, --codec, --page-rows change them); --layout png\n"
      "     stores each image as a PNG of its own, which a stream holds compressed (a budget holds more\n"
      "     images) and decodes as batches need them (load it as encoded images: image_size=, channels=)");
  app->add_option("IN", options->input, "the input file, image folder or tar shards")->required();
  app->add_option("OUT", options->output, "the output file or directory")->required();
  app->add_option("--layout", text->layout,
                  "Parquet layout of a pixel set: columns, image, or png (each image a PNG of its own, held "
                  "compressed by a stream and decoded as its batch needs it: a budget then holds more images)")
      ->check(parsed_by(parse_convert_layout, "columns|image|png"));
  app->add_option("--codec", text->codec, "Parquet codec: zstd, snappy, gzip, lz4, brotli or none")
      ->check(parsed_by(parquet::parse_parquet_codec, "CODEC"));
  app->add_option("--level", options->level,
                  "the codec's compression level: zstd 1-22 (default 1), gzip 1-9 (6), brotli 1-11 (5), lz4 1-12 (its\n"
                  "high-compression mode: smaller pages that decompress faster, written several times slower;\n"
                  "default: its fast mode); snappy and none have none")
      ->check(at_least(1));
  app->add_option("--row-group-size", options->row_group_size, "rows per Parquet row group")->check(at_least(1));
  CLI::Option* shard_rows = app->add_option("--shard-rows", options->shard_rows, "rows per shard of a sharded set")
                                ->check(at_least(1));
  app->add_option("--shard-size", options->shard_size, "target size of a shard, e.g. 256MB or 1GiB")
      ->check(parsed_by([](const std::string& size) { return parse_byte_size(size, "--shard-size"); }, "SIZE"))
      ->excludes(shard_rows);
  app->add_option("--page-rows", options->page_rows,
                  "rows per data page of every column (default for sharded sets: the stream's piece, a 4096th of the "
                  "set, 16 KiB to 1 MiB of images)")
      ->check(at_least(1));
  app->add_option("--shuffle-on-write", options->shuffle_seed,
                  "sharded sets: write the rows in an order shuffled with this seed (recorded in index.json)");
  app->add_option("--max-side", options->max_side,
                  "encoded images: re-encode those whose longer side is over N px as JPEG, resized to N "
                  "(the others are kept as they are; --shard-size counts the images before re-encoding)")
      ->check(at_least(1));
  app->add_option("--jpeg-quality", options->jpeg_quality, "the JPEG quality of images re-encoded by --max-side")
      ->check(CLI::Range(1, 100))
      ->default_str(std::to_string(kDefaultJpegQuality));
  app->add_option("--shape", text->shape, "image shape CxHxW, e.g. 1x28x28")
      ->delimiter('x')
      ->expected(3)
      ->check(at_least(1));
  add_storage_options(*app);
  return {app, [options, text] {
            if (!text->layout.empty()) options->layout = parse_convert_layout(text->layout);
            if (!text->codec.empty()) options->codec = parquet::parse_parquet_codec(text->codec);
            if (!text->shape.empty()) options->shape = ImageShape{text->shape[0], text->shape[1], text->shape[2]};
            const ConvertReport report = convert_dataset(*options, terminal_progress());
            for (const std::string& warning : report.warnings) std::cerr << "feeder convert: " << warning << std::endl;
            warn_bad("do not read as images", report.not_images);
            warn_bad("larger than --max-side do not decode", report.not_decoded);
            std::fputs(format_convert_report(report).c_str(), stdout);
            return 0;
          }};
}

int convert_main(const std::vector<std::string>& args) { return run_single_command(add_convert_command, args); }

}  // namespace feeder::cli
