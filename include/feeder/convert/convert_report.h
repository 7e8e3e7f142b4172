#pragma once

// What a conversion (convert.h) did, as a value: every number the command's report shows, the
// images written as they are that a loader will fail on, and the warnings. Callers format it their
// own way, or as the command prints it (format_convert_report); none reads the text back.
//
// Thread safety: plain values; format_convert_report is a pure function.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "feeder/store/image_store.h"

namespace feeder {

// Which conversion ran, and so which table the report is.
enum class ConvertedSet {
  kFile,           // a pixel set as one .parquet or .csv file
  kShardedPixels,  // a pixel set as Parquet shards with index.json
  kEncodedImages,  // encoded images (or a pixel set as PNGs) as Parquet shards of their bytes
};

struct ConvertedShard {
  std::string name;  // the file's name: "part-00000.parquet"
  int64_t num_rows = 0;
  int64_t num_row_groups = 0;
  int64_t size_bytes = 0;
};

// Images written as they are that a loader fails on (or leaves out with its skip option).
struct BadImages {
  int64_t count = 0;
  std::vector<std::string> first;  // the first few errors, each naming its image
};

// Images over max_side re-encoded as JPEG.
struct ReencodedImages {
  int64_t max_side = 0;
  int jpeg_quality = 0;
  int64_t count = 0;
  int64_t bytes_before = 0;  // of the re-encoded images
  int64_t bytes_after = 0;
  double seconds = 0;
};

// A labeled set whose rows come in long runs of one label (sorted by label, as class-ordered
// exports are): it streams with few labels per batch unless shuffled on write.
struct LabelRuns {
  int64_t num_runs = 0;
  int64_t mean_rows = 0;  // rows per run, rounded down
};

struct ConvertReport {
  ConvertedSet set = ConvertedSet::kFile;
  // As the report shows them (names from the data, not yet escaped for a terminal): the input's
  // file name, or a directory's name with '/'; the output file's name, or its directory's with '/'.
  std::string input_name;
  std::string output_name;
  std::string format;  // pixel sets: "csv", "parquet image LZ4_RAW"
  int64_t num_rows = 0;
  ImageShape shape;  // pixel sets
  std::vector<ConvertedShard> shards;  // sets of shards, in order
  // Pixel sets: the input file's size, and the output's (a set's shards and index.json). Encoded
  // images: the images' bytes as read, and the shards'.
  int64_t input_bytes = 0;
  int64_t output_bytes = 0;
  double read_seconds = 0;
  double write_seconds = 0;  // encoded images: without the re-encoding's seconds

  // Sharded pixel sets: the shuffle seed, else the label runs when they are long.
  std::optional<uint64_t> shuffle_seed;
  std::optional<LabelRuns> label_runs;

  // Encoded images.
  bool labeled = false;
  int64_t num_classes = 0;               // distinct labels written (0 unlabeled)
  std::vector<std::string> class_names;  // a folder's classes, a Parquet set's ClassLabel names; else empty
  std::string skipped;                   // what the input held besides images ("" for nothing)
  std::string order;                     // the rows' order when not shuffled on write
  std::optional<ReencodedImages> reencoded;  // with max_side
  BadImages not_images;                  // headers that do not read as an image
  BadImages not_decoded;                 // over max_side and not decodable

  // Notes on the input worth a person's attention ("...: no labels file beside it (...): the images
  // are written unlabeled"); the conversion went on.
  std::vector<std::string> warnings;

  int64_t num_row_groups() const;
};

// The report as `feeder convert` prints it on stdout: a Markdown table (and a table of shards for
// a sharded pixel set), then a line for each of the labels, what was skipped, bad images, the
// re-encoding and the order. Names from the data are escaped (printable, feeder/util/printable.h).
std::string format_convert_report(const ConvertReport& report);

}  // namespace feeder
