// feeder convert IN OUT: converts image sets between CSV, IDX and Parquet, chosen by extension, and
// prints a size report like the article's CSV-vs-Parquet table. `feeder convert IN OUTDIR/
// --shard-rows N` (or --shard-size 256MB) writes a sharded Parquet set (feeder/formats/sharded.h).

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli/command_line.h"
#include "cli/commands.h"
#include "feeder/util/printable.h"
#include "feeder/error.h"
#include "feeder/formats/csv.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/formats/dataset_kind.h"
#include "feeder/io/file_system.h"
#include "feeder/formats/parquet/class_labels.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/formats/parquet/writer.h"
#include "feeder/formats/sharded.h"
#include "feeder/image/encoded_rows.h"
#include "feeder/image/max_side.h"
#include "feeder/image/image_folder.h"
#include "feeder/image/tar_shards.h"
#include "feeder/stopwatch.h"
#include "feeder/util/byte_size.h"
#include "feeder/util/interrupt.h"

namespace feeder::cli {
namespace {

namespace fs = std::filesystem;

enum class OutputKind { kCsv, kParquet };

// The shard size when the output is a directory and neither --shard-rows nor --shard-size is given.
constexpr std::string_view kDefaultShardSize = "256MB";

struct ConvertArgs {
  fs::path input;
  fs::path output;
  OutputKind output_kind = OutputKind::kParquet;
  parquet::ParquetWriteOptions parquet;
  std::optional<ImageShape> shape;
  int64_t shard_rows = 0;  // 0: not given
  std::string shard_size;  // empty: not given
  bool layout_given = false;
  bool codec_given = false;
  bool page_rows_given = false;
  std::optional<uint64_t> shuffle_seed;
  bool row_group_size_given = false;
  int64_t max_side = 0;  // 0: images are kept as they are
  int jpeg_quality = 90;
  bool jpeg_quality_given = false;
  bool png = false;  // --layout png: each image of a pixel set as a PNG of its own
};

// A directory output: OUT ends in '/' or is a directory already, or a shard bound was given.
bool sharded_output(const ConvertArgs& args) {
  std::error_code error;
  return args.shard_rows > 0 || !args.shard_size.empty() || args.output.string().ends_with('/') ||
         fs::is_directory(args.output, error);
}

std::string lowercase_extension(const fs::path& path) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(), [](unsigned char c) { return std::tolower(c); });
  return extension;
}

OutputKind output_kind(const fs::path& output) {
  const std::string extension = lowercase_extension(output);
  if (extension == ".parquet") return OutputKind::kParquet;
  if (extension == ".csv") return OutputKind::kCsv;
  throw OptionsError("cannot tell the output format of '" + output.string() + "' (use .parquet or .csv)");
}

// Rebuilds `store` with another shape of the same number of pixels (IDX files carry (N,H,W) only).
ImageStore reshaped(ImageStore store, const ImageShape& shape, const fs::path& input) {
  if (store.shape() == shape) return store;
  if (store.image_bytes() != shape.num_pixels())
    throw DataError(input.string() + ": images have " + std::to_string(store.image_bytes()) + " pixels, --shape " +
                    to_string(shape) + " needs " + std::to_string(shape.num_pixels()));
  ImageStore result(shape, store.size(), store.labeled());
  std::copy(store.pixels().begin(), store.pixels().end(), result.pixels().begin());
  std::copy(store.labels().begin(), store.labels().end(), result.labels().begin());
  return result;
}

ImageStore load(const ConvertArgs& args) {
  // Image folders, tar shards and sets of encoded images are written by write_encoded_set; what is
  // left of the sets that are not one file is said here.
  switch (dataset_kind(args.input.string())) {
    case DatasetKind::kParquet: {
      const ShardedDataset dataset = open_sharded_dataset(args.input.string());
      throw DataError(args.input.string() + ": a sharded set of " + to_string(dataset.shape) +
                      " images: convert reads one of its files, or a set of encoded images (" +
                      (dataset.shards.empty() ? std::string("it has no shards") : dataset.shards.front().path.string()) +
                      ")");
    }
    case DatasetKind::kIdxDirectory:
      throw DataError(args.input.string() + ": a directory of IDX files: convert one of them (its " +
                      "*-images-idx3-ubyte[.gz] files)");
    case DatasetKind::kCsvFile: {
      CsvReadOptions options;
      options.shape = args.shape;
      return read_csv(args.input, options);
    }
    case DatasetKind::kParquetFile: {
      parquet::ParquetImageOptions options;
      options.shape = args.shape;  // unset: the shape the file records, else 1xSxS
      return parquet::read_parquet_images(args.input, options);
    }
    case DatasetKind::kIdxFile:
      // Labels come from the file beside it when there is one: say so when there is none.
      if (find_idx_labels(args.input).empty())
        std::fprintf(stderr, "feeder convert: %s: no labels file beside it (%s[.gz]): the images are written unlabeled\n",
                     args.input.string().c_str(), idx_labels_name(args.input).string().c_str());
      return args.shape ? reshaped(load_images(args.input), *args.shape, args.input) : load_images(args.input);
    case DatasetKind::kTarShards:
    case DatasetKind::kImageFolder:
    case DatasetKind::kArrays: break;
  }
  throw std::logic_error(args.input.string() + ": encoded images are written by write_encoded_set");
}

double megabytes(uint64_t bytes) { return static_cast<double>(bytes) / 1e6; }

void print_report(const ConvertArgs& args, const ImageStore& store, double read_seconds, double write_seconds) {
  const uint64_t input_bytes = fs::file_size(args.input);
  const uint64_t output_bytes = fs::file_size(args.output);
  const double ratio = output_bytes == 0 ? 0.0 : static_cast<double>(input_bytes) / static_cast<double>(output_bytes);
  std::string format = args.output_kind == OutputKind::kCsv ? "csv" : "parquet " + to_string(args.parquet.layout) + " " +
                                                                        parquet::to_string(args.parquet.codec);
  std::printf("| input | output | format | rows | shape | input MB | output MB | ratio | read s | write s | total s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::printf("| %s | %s | %s | %lld | %s | %.1f | %.1f | %.2fx | %.3f | %.3f | %.3f |\n",
              printable(args.input.filename().string()).c_str(), printable(args.output.filename().string()).c_str(),
              format.c_str(),
              static_cast<long long>(store.size()), to_string(store.shape()).c_str(), megabytes(input_bytes),
              megabytes(output_bytes), ratio, read_seconds, write_seconds, read_seconds + write_seconds);
}

// The output directory's name as the report shows it: "shards/".
std::string directory_name(const fs::path& dir) {
  const fs::path normal = dir.lexically_normal();
  const std::string name = normal.has_filename() ? normal.filename().string() : normal.parent_path().filename().string();
  return name + "/";
}

// An input as the report shows it: a directory's name with '/', else the file's or glob's name.
std::string input_name(const fs::path& input) {
  std::error_code error;
  return fs::is_directory(input, error) ? directory_name(input) : input.filename().string();
}

void print_sharded_report(const ConvertArgs& args, const ShardedDataset& dataset, double read_seconds,
                          double write_seconds) {
  const uint64_t input_bytes = fs::file_size(args.input);
  uint64_t output_bytes = fs::file_size(args.output / kShardIndexName);
  for (const ShardInfo& shard : dataset.shards) output_bytes += shard.size_bytes;
  const double ratio = output_bytes == 0 ? 0.0 : static_cast<double>(input_bytes) / static_cast<double>(output_bytes);
  const std::string format = "parquet " + to_string(args.parquet.layout) + " " + parquet::to_string(args.parquet.codec);
  std::printf("| input | output | format | rows | shape | shards | input MB | output MB | ratio | read s | write s | total s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::printf("| %s | %s | %s | %lld | %s | %zu | %.1f | %.1f | %.2fx | %.3f | %.3f | %.3f |\n",
              printable(args.input.filename().string()).c_str(), printable(directory_name(args.output)).c_str(),
              format.c_str(),
              static_cast<long long>(dataset.num_rows), to_string(dataset.shape).c_str(), dataset.shards.size(),
              megabytes(input_bytes), megabytes(output_bytes), ratio, read_seconds, write_seconds,
              read_seconds + write_seconds);
  std::printf("\n| shard | rows | row groups | MB |\n|---|---|---|---|\n");
  for (const ShardInfo& shard : dataset.shards) {
    std::printf("| %s | %lld | %zu | %.1f |\n", printable(shard.path.filename().string()).c_str(),
                static_cast<long long>(shard.num_rows), shard.row_group_rows.size(), megabytes(shard.size_bytes));
  }
}

// Progress lines for a person watching, on a terminal only (not in logs or pipes): a line per shard
// written, and every 64 blocks of a shuffle's copy into the spill file.
bool show_progress() { return ::isatty(STDERR_FILENO) == 1; }

std::function<void(int64_t, int64_t)> shard_progress() {
  if (!show_progress()) return nullptr;
  return [](int64_t done, int64_t total) {
    std::cerr << "feeder convert: shard " << done << "/" << total << " written" << std::endl;
  };
}

std::function<void(int64_t, int64_t)> spill_progress(std::string blocks) {
  if (!show_progress()) return nullptr;
  return [blocks = std::move(blocks)](int64_t done, int64_t total) {
    if (done % 64 == 0 || done == total)
      std::cerr << "feeder convert: copied " << done << "/" << total << " " << blocks << " for the shuffle" << std::endl;
  };
}

int run_sharded_convert(const ConvertArgs& args) {
  if (lowercase_extension(args.output) == ".csv") {
    throw OptionsError("a sharded set is Parquet; '" + args.output.string() + "' names a CSV file (give a directory)");
  }
  ShardWriteOptions options;
  options.parquet = args.parquet;
  // A set that will be streamed: one image column, lz4 (decompresses about 3x faster than zstd,
  // and a streamed epoch decompresses the whole set), and pages of one piece each (set below).
  if (!args.layout_given) options.parquet.layout = parquet::ParquetLayout::kImage;
  if (!args.codec_given) options.parquet.codec = parquet::Codec::kLz4Raw;
  options.shard_rows = args.shard_rows;
  options.shuffle_seed = args.shuffle_seed;
  if (args.shard_rows == 0) {
    options.shard_size_bytes = parse_byte_size(args.shard_size.empty() ? kDefaultShardSize : args.shard_size, "--shard-size");
  }
  const Stopwatch load_time;
  const ImageStore store = load(args);
  throw_if_interrupted();
  const double read_seconds = load_time.seconds();
  if (!args.page_rows_given) options.parquet.page_rows = stream_piece_rows(store.shape(), store.size());
  const Stopwatch write_time;
  const ShardedDataset dataset = write_sharded(store, args.output, options, shard_progress());
  ConvertArgs shown = args;
  shown.parquet = options.parquet;
  print_sharded_report(shown, dataset, read_seconds, write_time.seconds());
  if (dataset.shuffled_on_write) {
    std::printf("\nrows shuffled with seed %llu (recorded in %s)\n",
                static_cast<unsigned long long>(*dataset.shuffled_on_write), std::string(kShardIndexName).c_str());
  } else if (store.labeled()) {
    // Rows in long runs of one label (a set sorted by label, as class-ordered exports are) stream
    // with few labels per batch unless the window is large: said here, where it is cheap to fix.
    int64_t runs = store.size() > 0 ? 1 : 0;
    for (size_t i = 1; i < store.labels().size(); ++i) runs += store.labels()[i] != store.labels()[i - 1];
    constexpr int64_t kLongRun = 16;  // a shuffled set of 2 or more classes averages under 2 rows a run
    if (runs > 0 && store.size() / runs >= kLongRun)
      std::printf("\nrows in %lld runs of one label (%lld rows each on average, as in a set sorted by label): give "
                  "--shuffle-on-write SEED for a set that streams well\n",
                  static_cast<long long>(runs), static_cast<long long>(store.size() / runs));
  }
  return 0;
}

// Rows per row group of encoded images unless told: a row group is what a stream holds and reads
// at once, so a few MB of photographs; Hugging Face datasets writes image sets with 100 as well.
constexpr int64_t kEncodedRowGroupRows = 100;

// A set of encoded images to write, and what the report says of where it came from.
struct EncodedInput {
  std::unique_ptr<EncodedRowReader> rows;
  std::vector<std::string> classes;  // a folder's classes, a Parquet set's ClassLabel names; else empty
  std::string skipped;               // what was left out, for the report ("" for nothing)
  std::string order;                 // the order of the rows when not shuffled on write
  int64_t row_group_rows = kEncodedRowGroupRows;  // unless --row-group-size
};

// Options that apply to pixel sets only are refused for encoded images, whatever `what` they are.
void check_encoded_convert_args(const ConvertArgs& args, const std::string& what) {
  if (args.shape) throw OptionsError("--shape applies to pixel sets; encoded images keep their own sizes");
  if (args.layout_given || args.page_rows_given)
    throw OptionsError("--layout and --page-rows apply to pixel sets; " + what + " is written as its images' bytes");
  if (lowercase_extension(args.output) == ".parquet" || lowercase_extension(args.output) == ".csv")
    throw OptionsError(what + " is written as a sharded set: give a directory (OUT/), not '" + args.output.string() +
                       "'");
  if (args.jpeg_quality_given && args.max_side == 0)
    throw OptionsError("--jpeg-quality applies to the images --max-side re-encodes: give --max-side too");
}

// Encoded images (a folder's files, tar shards' members, a Parquet set's rows) as Parquet shards of their bytes,
// unchanged unless --max-side, with the report. One shard's images are held at a time.
int write_encoded_set(const ConvertArgs& args, EncodedInput input) {
  ShardWriteOptions options;
  options.parquet = args.parquet;
  options.parquet.class_names = input.classes;  // kept in the shards, as the datasets library keeps them
  if (!args.row_group_size_given) options.parquet.row_group_size = input.row_group_rows;
  options.shard_rows = args.shard_rows;
  options.shuffle_seed = args.shuffle_seed;
  if (args.shard_rows == 0) {
    options.shard_size_bytes = parse_byte_size(args.shard_size.empty() ? kDefaultShardSize : args.shard_size, "--shard-size");
  }
  EncodedRowReader* source_rows = input.rows.get();
  MaxSideRowReader* smaller = nullptr;
  if (args.max_side > 0) {
    MaxSideOptions max_side;
    max_side.max_side = args.max_side;
    max_side.quality = args.jpeg_quality;
    auto reader = std::make_unique<MaxSideRowReader>(std::move(input.rows), max_side);
    smaller = reader.get();
    input.rows = std::move(reader);
  }
  const Stopwatch total_time;
  const ShardedDataset dataset = write_encoded_sharded(*input.rows, args.output, options, shard_progress());
  const double read_seconds = source_rows->read_seconds();
  const double reencode_seconds = smaller ? smaller->stats().seconds : 0.0;
  uint64_t output_bytes = 0;
  for (const ShardInfo& shard : dataset.shards) output_bytes += shard.size_bytes;
  std::printf("| input | output | images | classes | shards | row groups | encoded | output | read s | write s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  std::printf("| %s | %s | %lld | %zu | %zu | %lld | %s | %s | %.3f | %.3f |\n",
              printable(input_name(args.input)).c_str(), printable(directory_name(args.output)).c_str(),
              static_cast<long long>(dataset.num_rows), input.rows->labeled() ? source_rows->labels_seen().size() : size_t{0},
              dataset.shards.size(), static_cast<long long>(dataset.num_row_groups()),
              format_byte_size(input.rows->encoded_bytes()).c_str(),
              format_byte_size(static_cast<int64_t>(output_bytes)).c_str(), read_seconds,
              total_time.seconds() - read_seconds - reencode_seconds);
  if (!input.classes.empty()) {
    std::printf("\nlabels: ");
    for (size_t i = 0; i < input.classes.size(); ++i)
      std::printf("%s%zu %s", i ? ", " : "", i, printable(input.classes[i]).c_str());
    std::printf("\n");
  } else if (!input.rows->labeled()) {
    std::printf("\nunlabeled: no .cls members\n");
  }
  if (!input.skipped.empty()) std::printf("skipped: %s\n", printable(input.skipped).c_str());
  // Images a loader will fail on, written as they are: a warning on stderr naming the first few,
  // and a line of the report (which Python's convert() turns into a warning).
  const auto report_bad = [](const char* line, const char* what, int64_t count, const std::vector<std::string>& first) {
    std::string names, reasons;
    for (const std::string& reason : first) {  // names from the data: shown escaped
      names += (names.empty() ? "" : "; ") + printable(reason);
      reasons += "\n  " + printable(reason);
    }
    std::fprintf(stderr,
                 "feeder convert: warning: %lld of the images %s; they are written as they are, and a loader fails "
                 "on them (or leaves them out with on_error=\"skip\", --skip-bad-images). The first:%s\n",
                 static_cast<long long>(count), what, reasons.c_str());
    std::printf("%s: %lld, written as they are; the first: %s\n", line, static_cast<long long>(count), names.c_str());
  };
  if (source_rows->unreadable() > 0)
    report_bad("not images", "do not read as images", source_rows->unreadable(), source_rows->first_unreadable());
  if (smaller) {
    const MaxSideStats& stats = smaller->stats();
    std::printf("re-encoded: %lld images larger than %lld px on a side, as JPEG of quality %d: %s -> %s, %.3f s\n",
                static_cast<long long>(stats.reencoded), static_cast<long long>(args.max_side), args.jpeg_quality,
                format_byte_size(stats.bytes_before).c_str(), format_byte_size(stats.bytes_after).c_str(), stats.seconds);
    if (stats.undecodable > 0)
      report_bad("not decoded", "larger than --max-side do not decode", stats.undecodable, stats.first_undecodable);
  }
  if (dataset.shuffled_on_write)
    std::printf("rows shuffled with seed %llu\n", static_cast<unsigned long long>(*dataset.shuffled_on_write));
  else
    std::printf("rows in %s: give --shuffle-on-write SEED for a set that streams well\n", input.order.c_str());
  return 0;
}

// An image folder (torchvision's ImageFolder layout) as Parquet shards of its files' bytes. The
// folder is listed first; each shard's files are read when it is written.
int run_image_folder_convert(const ConvertArgs& args) {
  check_encoded_convert_args(args, "an image folder");
  // Shards inside the folder would make it a folder with a class "out" of no images: unreadable.
  std::error_code error;
  const auto resolved = [&error](const fs::path& path) {
    fs::path full = fs::weakly_canonical(path, error);
    return full.has_filename() ? full : full.parent_path();  // "dir/" as "dir"
  };
  const fs::path folder = resolved(args.input);
  const fs::path output = resolved(args.output);
  if (!error && std::mismatch(folder.begin(), folder.end(), output.begin(), output.end()).first == folder.end())
    throw OptionsError("the output " + args.output.string() + " is inside the image folder " + args.input.string() +
                       ": its shards would become a class folder of the input; write them outside it");
  if (show_progress()) std::cerr << "feeder convert: listing " << args.input.string() << std::endl;
  ImageFolderListing listing = list_image_folder(args.input);
  if (show_progress())
    std::cerr << "feeder convert: " << listing.files.size() << " images in " << listing.classes.size() << " classes"
              << std::endl;
  EncodedInput input;
  input.classes = listing.classes;
  input.order = "the folder's order, sorted by class";
  if (listing.skipped_other + listing.skipped_unsupported > 0)
    input.skipped = std::to_string(listing.skipped_other) + " files that are not images, " +
                    describe_unsupported(listing.skipped_unsupported, listing.first_unsupported);
  input.rows = folder_row_reader(std::move(listing), args.input.string());
  return write_encoded_set(args, std::move(input));
}

// WebDataset-style tar shards as Parquet shards of their images' bytes, read in order; a shuffle
// on write copies the images into a spill file beside the output first (they are read in order
// only).
int run_tar_convert(const ConvertArgs& args) {
  check_encoded_convert_args(args, "a set of tar shards");
  const TarShards tars = open_tar_shards(args.input.string());
  EncodedInput input;
  input.order = "the shards' order";
  if (tars.skipped_members > 0)
    input.skipped = std::to_string(tars.skipped_members) + " members that are neither an image nor a label";
  input.rows = stream_row_reader(tars.source, tars.encoded_bytes, args.shuffle_seed.has_value(), args.output,
                                 spill_progress("blocks of tar members"));
  return write_encoded_set(args, std::move(input));
}

// A Parquet set of encoded images written again: reshuffled, resharded or with --max-side. Its
// blocks are read in order (a shuffle on write goes through a spill file, as for tar shards).
int run_encoded_parquet_convert(const ConvertArgs& args, const ShardedDataset& dataset) {
  check_encoded_convert_args(args, "a Parquet set of encoded images");
  EncodedInput input;
  input.order = "the set's order";
  if (!dataset.shards.empty()) input.classes = parquet::class_label_names(dataset.shards.front().path);
  int64_t encoded_bytes = 0;
  for (const ShardInfo& shard : dataset.shards)
    for (const int64_t bytes : shard.row_group_encoded_bytes) encoded_bytes += bytes;
  input.rows = stream_row_reader(open_parquet_source(dataset), encoded_bytes, args.shuffle_seed.has_value(),
                                 args.output, spill_progress("blocks of the set"));
  return write_encoded_set(args, std::move(input));
}

// A pixel set as Parquet shards of PNG files, one per image (--layout png): a stream holds them
// compressed, counted at their encoded size, and decodes each as its batch is assembled.
int run_png_convert(const ConvertArgs& args) {
  if (!sharded_output(args) || lowercase_extension(args.output) == ".parquet")
    throw OptionsError("--layout png writes a sharded set: give a directory (OUT/), not '" + args.output.string() + "'");
  if (args.page_rows_given) throw OptionsError("--page-rows applies to the columns and image layouts; --layout png "
                                               "writes each image's PNG bytes (row groups of about 8 KiB of them; "
                                               "--row-group-size sets them)");
  EncodedInput input;
  auto store = std::make_shared<const ImageStore>(load(args));
  throw_if_interrupted();
  input.rows = png_row_reader(std::move(store), input_name(args.input));
  input.order = "the input's order";
  // A row group is a stream's piece: about 8 KiB of PNGs (16 of FashionMNIST's), so that a window
  // mixes many pieces; small images compress to a few hundred bytes, and 100 of them (a folder's
  // row group) would make pieces, and so the windows' mix, coarser than the pixel layout's.
  constexpr double kPieceBytes = 8 << 10;
  const double mean_bytes = static_cast<double>(std::max<int64_t>(input.rows->encoded_bytes(), 1)) /
                            static_cast<double>(std::max<int64_t>(input.rows->size(), 1));
  input.row_group_rows = std::clamp<int64_t>(std::llround(kPieceBytes / mean_bytes), 1, kEncodedRowGroupRows);
  return write_encoded_set(args, std::move(input));
}

// An input of encoded images: an image folder, tar shards, or a Parquet set of them (opened once,
// here, to tell it from a set of pixels).
struct EncodedImagesInput {
  enum class Kind { kFolder, kTars, kParquet };
  Kind kind = Kind::kFolder;
  std::optional<ShardedDataset> dataset;  // kParquet
};

// What `args.input` holds when it is encoded images; nullopt for pixel sets (the paths that read
// them say what is wrong with a bad one). A Parquet input's footers say which it is.
std::optional<EncodedImagesInput> encoded_images_input(const ConvertArgs& args) {
  using Kind = EncodedImagesInput::Kind;
  // A missing input is said by load(), after the options are checked.
  const std::string spec = args.input.string();
  if (!has_glob_chars(args.input.filename().string()) && file_system_for(spec).stat(spec).kind == FileKind::kMissing)
    return std::nullopt;
  switch (dataset_kind(spec)) {
    case DatasetKind::kImageFolder: return EncodedImagesInput{Kind::kFolder, {}};
    case DatasetKind::kTarShards: return EncodedImagesInput{Kind::kTars, {}};
    case DatasetKind::kParquetFile:
    case DatasetKind::kParquet: {
      parquet::ParquetImageOptions options;
      options.shape = args.shape;  // a file of pixel columns may need it to say what it holds
      ShardedDataset dataset = open_sharded_dataset(args.input.string(), options);
      if (dataset.encoded) return EncodedImagesInput{Kind::kParquet, std::move(dataset)};
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

int run_convert(ConvertArgs& args, const std::optional<EncodedImagesInput>& images) {
  if (images) {
    switch (images->kind) {
      case EncodedImagesInput::Kind::kFolder: return run_image_folder_convert(args);
      case EncodedImagesInput::Kind::kTars: return run_tar_convert(args);
      case EncodedImagesInput::Kind::kParquet: return run_encoded_parquet_convert(args, *images->dataset);
    }
  }
  if (args.png) return run_png_convert(args);
  if (sharded_output(args)) return run_sharded_convert(args);
  args.output_kind = output_kind(args.output);
  const Stopwatch load_time;
  const ImageStore store = load(args);
  throw_if_interrupted();
  const double read_seconds = load_time.seconds();
  const Stopwatch write_time;
  if (args.output_kind == OutputKind::kCsv) write_csv(store, args.output);
  else parquet::write_parquet(store, args.output, args.parquet);
  print_report(args, store, read_seconds, write_time.seconds());
  return 0;
}

}  // namespace

Command add_convert_command(CLI::App& parent) {
  auto args = std::make_shared<ConvertArgs>();
  auto shape = std::make_shared<std::vector<int64_t>>();
  auto codec = std::make_shared<std::string>();
  auto layout = std::make_shared<std::string>();
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
  app->add_option("IN", args->input, "the input file, image folder or tar shards")->required();
  app->add_option("OUT", args->output, "the output file or directory")->required();
  app->add_option("--layout", *layout,
                  "Parquet layout of a pixel set: columns, image, or png (each image a PNG of its own, held "
                  "compressed by a stream and decoded as its batch needs it: a budget then holds more images)")
      ->check(parsed_by(
          [](const std::string& text) {
            if (text == "png") return parquet::ParquetLayout::kImage;  // not a Parquet layout of pixels
            try {
              return parquet::parse_parquet_layout(text);
            } catch (const OptionsError&) {  // its message names the Parquet layouts only
              throw OptionsError("unknown layout '" + text + "' (use columns, image or png)");
            }
          },
          "columns|image|png"));
  app->add_option("--codec", *codec, "Parquet codec: zstd, snappy, gzip, lz4, brotli or none")
      ->check(parsed_by(parquet::parse_parquet_codec, "CODEC"));
  app->add_option("--level", args->parquet.compression_level,
                  "the codec's compression level: zstd 1-22 (default 1), gzip 1-9 (6), brotli 1-11 (5), lz4 1-12 (its\n"
                  "high-compression mode: smaller pages that decompress faster, written several times slower;\n"
                  "default: its fast mode); snappy and none have none")
      ->check(at_least(1));
  app->add_option("--row-group-size", args->parquet.row_group_size, "rows per Parquet row group")
      ->check(at_least(1));
  CLI::Option* shard_rows = app->add_option("--shard-rows", args->shard_rows, "rows per shard of a sharded set")
                                ->check(at_least(1));
  app->add_option("--shard-size", args->shard_size, "target size of a shard, e.g. 256MB or 1GiB")
      ->check(parsed_by([](const std::string& text) { return parse_byte_size(text, "--shard-size"); }, "SIZE"))
      ->excludes(shard_rows);
  app->add_option("--page-rows", args->parquet.page_rows,
                  "rows per data page of every column (default for sharded sets: the stream's piece, a 4096th of the "
                  "set, 16 KiB to 1 MiB of images)")
      ->check(at_least(1));
  app->add_option("--shuffle-on-write", args->shuffle_seed,
                  "sharded sets: write the rows in an order shuffled with this seed (recorded in index.json)");
  app->add_option("--max-side", args->max_side,
                  "encoded images: re-encode those whose longer side is over N px as JPEG, resized to N "
                  "(the others are kept as they are; --shard-size counts the images before re-encoding)")
      ->check(at_least(1));
  app->add_option("--jpeg-quality", args->jpeg_quality, "the JPEG quality of images re-encoded by --max-side")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app->add_option("--shape", *shape, "image shape CxHxW, e.g. 1x28x28")
      ->delimiter('x')
      ->expected(3)
      ->check(at_least(1));
  return {app, [app, args, shape, codec, layout] {
            args->layout_given = !layout->empty();
            args->codec_given = !codec->empty();
            args->page_rows_given = app->count("--page-rows") > 0;
            args->row_group_size_given = app->count("--row-group-size") > 0;
            args->jpeg_quality_given = app->count("--jpeg-quality") > 0;
            args->png = *layout == "png";
            if (!layout->empty() && !args->png) args->parquet.layout = parquet::parse_parquet_layout(*layout);
            if (!codec->empty()) args->parquet.codec = parquet::parse_parquet_codec(*codec);
            if (!shape->empty()) args->shape = ImageShape{(*shape)[0], (*shape)[1], (*shape)[2]};
            // Encoded images are always written as a sharded set (OUT/).
            const std::optional<EncodedImagesInput> images = encoded_images_input(*args);
            if (args->shuffle_seed && !sharded_output(*args) && !images) {
              throw OptionsError("--shuffle-on-write applies to a sharded set (an output directory)");
            }
            if (!images && (args->max_side > 0 || args->jpeg_quality_given))
              throw OptionsError("--max-side and --jpeg-quality apply to encoded images (an image folder, tar shards, "
                                 "a Parquet set of images)");
            return run_convert(*args, images);
          }};
}

int convert_main(const std::vector<std::string>& args) { return run_single_command(add_convert_command, args); }

}  // namespace feeder::cli
