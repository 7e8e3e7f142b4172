// convert_dataset: image sets between CSV, IDX and Parquet, chosen by extension, sharded Parquet sets
// (feeder/formats/sharded.h), and encoded images (folders, tar shards, Parquet sets of images) as
// Parquet shards of their bytes; the report is a value (convert_report.h).

#include "feeder/convert/convert.h"
#include "feeder/io/object_storage.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "feeder/error.h"
#include "feeder/formats/csv.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/formats/dataset_kind.h"
#include "feeder/formats/parquet/class_labels.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/formats/parquet/writer.h"
#include "feeder/formats/sharded.h"
#include "feeder/image/encoded_rows.h"
#include "feeder/image/image_folder.h"
#include "feeder/image/max_side.h"
#include "feeder/image/tar_shards.h"
#include "feeder/io/file_system.h"
#include "feeder/stopwatch.h"
#include "feeder/util/byte_size.h"
#include "feeder/util/interrupt.h"

namespace feeder {

ConvertLayout parse_convert_layout(std::string_view name) {
  if (name == "columns") return ConvertLayout::kColumns;
  if (name == "image") return ConvertLayout::kImage;
  if (name == "png") return ConvertLayout::kPng;
  throw OptionsError("unknown layout '" + std::string(name) + "' (use columns, image or png)");
}

namespace {

namespace fs = std::filesystem;

template <typename Int>
void check_at_least_one(std::string_view option, const std::optional<Int>& value) {
  if (value && *value < 1)
    throw OptionsError(std::string(option) + ": needs an integer >= 1, got " + std::to_string(*value));
}

}  // namespace

void check_convert_options(const ConvertOptions& options) {
  check_at_least_one("--level", options.level);
  check_at_least_one("--row-group-size", options.row_group_size);
  check_at_least_one("--shard-rows", options.shard_rows);
  check_at_least_one("--page-rows", options.page_rows);
  check_at_least_one("--max-side", options.max_side);
  if (options.jpeg_quality && (*options.jpeg_quality < 1 || *options.jpeg_quality > 100))
    throw OptionsError("--jpeg-quality: needs an integer from 1 to 100, got " + std::to_string(*options.jpeg_quality));
  if (options.shape) {
    for (const int64_t side : {options.shape->channels, options.shape->height, options.shape->width})
      check_at_least_one("--shape", std::optional<int64_t>(side));
  }
  if (options.shard_rows && options.shard_size) throw OptionsError("--shard-rows excludes --shard-size");
  if (options.shard_size) parse_byte_size(*options.shard_size, "--shard-size");
}

namespace {

enum class OutputKind { kCsv, kParquet };

// The shard size when the output is a directory and neither shard_rows nor shard_size is given.
constexpr std::string_view kDefaultShardSize = "256MB";

// One conversion: the options, the Parquet options they give, and what it has to say besides the
// report's numbers.
struct Job {
  const ConvertOptions& options;
  const ConvertProgress& progress;
  parquet::ParquetWriteOptions parquet;  // the options given; the defaults of the output kind are set where it is known
  std::vector<std::string> warnings;
  // What the input holds, decided once (classify_input); nullopt when it does not exist, which
  // load() says after the options are checked.
  std::optional<DatasetKind> input_kind;
  std::optional<ShardedDataset> parquet_input;  // a Parquet input, as its footers or index describe it

  void say(const std::string& line) const {
    if (progress) progress(line);
  }
};

parquet::ParquetWriteOptions parquet_options(const ConvertOptions& options) {
  parquet::ParquetWriteOptions parquet;
  if (options.layout == ConvertLayout::kImage) parquet.layout = parquet::ParquetLayout::kImage;
  if (options.codec) parquet.codec = *options.codec;
  if (options.level) parquet.compression_level = *options.level;
  if (options.row_group_size) parquet.row_group_size = *options.row_group_size;
  if (options.page_rows) parquet.page_rows = *options.page_rows;
  return parquet;
}

// A directory output: OUT ends in '/' or is a directory already, or a shard bound was given.
bool sharded_output(const ConvertOptions& options) {
  return options.shard_rows || options.shard_size || options.output.string().ends_with('/') ||
         file_system_for(options.output).stat(options.output).directory();
}

int64_t shard_size_bytes(const ConvertOptions& options) {
  return parse_byte_size(options.shard_size ? std::string_view(*options.shard_size) : kDefaultShardSize, "--shard-size");
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

ImageStore load(Job& job) {
  const ConvertOptions& options = job.options;
  // Image folders, tar shards and sets of encoded images are written by write_encoded_set; what is
  // left of the sets that are not one file is said here.
  const DatasetKind kind = job.input_kind ? *job.input_kind : dataset_kind(options.input.string());  // throws: missing
  switch (kind) {
    case DatasetKind::kParquet: {
      const ShardedDataset& dataset = *job.parquet_input;
      throw DataError(options.input.string() + ": a sharded set of " + to_string(dataset.shape) +
                      " images: convert reads one of its files, or a set of encoded images (" +
                      (dataset.shards.empty() ? std::string("it has no shards") : dataset.shards.front().path.string()) +
                      ")");
    }
    case DatasetKind::kIdxDirectory:
      throw DataError(options.input.string() + ": a directory of IDX files: convert one of them (its " +
                      "*-images-idx3-ubyte[.gz] files)");
    case DatasetKind::kCsvFile: {
      CsvReadOptions csv;
      csv.shape = options.shape;
      return read_csv(options.input, csv);
    }
    case DatasetKind::kParquetFile: {
      parquet::ParquetImageOptions parquet;
      parquet.shape = options.shape;  // unset: the shape the file records, else 1xSxS
      return parquet::read_parquet_images(options.input, parquet);
    }
    case DatasetKind::kIdxFile:
      // Labels come from the file beside it when there is one: say so when there is none.
      if (find_idx_labels(options.input).empty())
        job.warnings.push_back(options.input.string() + ": no labels file beside it (" +
                               idx_labels_name(options.input).string() + "[.gz]): the images are written unlabeled");
      return options.shape ? reshaped(load_images(options.input), *options.shape, options.input)
                           : load_images(options.input);
    case DatasetKind::kTarShards:
    case DatasetKind::kImageFolder:
    case DatasetKind::kArrays: break;
  }
  throw std::logic_error(options.input.string() + ": encoded images are written by write_encoded_set");
}

// The output directory's name as the report shows it: "shards/".
std::string directory_name(const fs::path& dir) {
  const fs::path normal = dir.lexically_normal();
  const std::string name = normal.has_filename() ? normal.filename().string() : normal.parent_path().filename().string();
  return name + "/";
}

// An input as the report shows it: a directory's name with '/', else the file's or glob's name.
std::string input_name(const fs::path& input) {
  return file_system_for(input).stat(input).directory() ? directory_name(input) : input.filename().string();
}

std::string parquet_format(const parquet::ParquetWriteOptions& parquet) {
  return "parquet " + to_string(parquet.layout) + " " + parquet::to_string(parquet.codec);
}

std::vector<ConvertedShard> shards_of(const ShardedDataset& dataset) {
  std::vector<ConvertedShard> shards;
  shards.reserve(dataset.shards.size());
  for (const ShardInfo& shard : dataset.shards)
    shards.push_back({shard.path.filename().string(), shard.num_rows, static_cast<int64_t>(shard.row_group_rows.size()),
                      static_cast<int64_t>(shard.size_bytes)});
  return shards;
}

// Progress for each shard written, and every 64 blocks of a shuffle's copy into the spill file.
std::function<void(int64_t, int64_t)> shard_progress(const Job& job) {
  if (!job.progress) return nullptr;
  return [&job](int64_t done, int64_t total) {
    job.say("shard " + std::to_string(done) + "/" + std::to_string(total) + " written");
  };
}

std::function<void(int64_t, int64_t)> spill_progress(const Job& job, std::string blocks) {
  if (!job.progress) return nullptr;
  return [&job, blocks = std::move(blocks)](int64_t done, int64_t total) {
    if (done % 64 == 0 || done == total)
      job.say("copied " + std::to_string(done) + "/" + std::to_string(total) + " " + blocks + " for the shuffle");
  };
}

// A pixel set as one .parquet or .csv file.
ConvertReport convert_file(Job& job) {
  const ConvertOptions& options = job.options;
  const OutputKind kind = output_kind(options.output);
  const Stopwatch load_time;
  const ImageStore store = load(job);
  throw_if_interrupted();
  const double read_seconds = load_time.seconds();
  const Stopwatch write_time;
  if (kind == OutputKind::kCsv) write_csv(store, options.output);
  else parquet::write_parquet(store, options.output, job.parquet);
  ConvertReport report;
  report.set = ConvertedSet::kFile;
  report.input_name = options.input.filename().string();
  report.output_name = options.output.filename().string();
  report.format = kind == OutputKind::kCsv ? "csv" : parquet_format(job.parquet);
  report.num_rows = store.size();
  report.shape = store.shape();
  report.input_bytes = file_system_for(options.input).stat(options.input).size;
  report.output_bytes = file_system_for(options.output).stat(options.output).size;
  report.read_seconds = read_seconds;
  report.write_seconds = write_time.seconds();
  return report;
}

// A pixel set as a sharded Parquet set with its index.
ConvertReport convert_sharded_pixels(Job& job) {
  const ConvertOptions& options = job.options;
  if (lowercase_extension(options.output) == ".csv") {
    throw OptionsError("a sharded set is Parquet; '" + options.output.string() + "' names a CSV file (give a directory)");
  }
  ShardWriteOptions write;
  write.parquet = job.parquet;
  // A set that will be streamed: one image column, lz4 (decompresses about 3x faster than zstd,
  // and a streamed epoch decompresses the whole set), and pages of one piece each (set below).
  if (!options.layout) write.parquet.layout = parquet::ParquetLayout::kImage;
  if (!options.codec) write.parquet.codec = parquet::Codec::kLz4Raw;
  write.shard_rows = options.shard_rows.value_or(0);
  write.shuffle_seed = options.shuffle_seed;
  if (!options.shard_rows) write.shard_size_bytes = shard_size_bytes(options);
  const Stopwatch load_time;
  const ImageStore store = load(job);
  throw_if_interrupted();
  const double read_seconds = load_time.seconds();
  if (!options.page_rows) write.parquet.page_rows = stream_piece_rows(store.shape(), store.size());
  const Stopwatch write_time;
  const ShardedDataset dataset = write_sharded(store, options.output, write, shard_progress(job));
  ConvertReport report;
  report.write_seconds = write_time.seconds();
  report.read_seconds = read_seconds;
  report.set = ConvertedSet::kShardedPixels;
  report.input_name = options.input.filename().string();
  report.output_name = directory_name(options.output);
  report.format = parquet_format(write.parquet);
  report.num_rows = dataset.num_rows;
  report.shape = dataset.shape;
  report.shards = shards_of(dataset);
  report.input_bytes = file_system_for(options.input).stat(options.input).size;
  report.output_bytes = file_system_for(options.output).stat(options.output / kShardIndexName).size;
  for (const ShardInfo& shard : dataset.shards) report.output_bytes += static_cast<int64_t>(shard.size_bytes);
  report.shuffle_seed = dataset.shuffled_on_write;
  if (!dataset.shuffled_on_write && store.labeled()) {
    // Rows in long runs of one label (a set sorted by label, as class-ordered exports are) stream
    // with few labels per batch unless the window is large: said here, where it is cheap to fix.
    int64_t runs = store.size() > 0 ? 1 : 0;
    for (size_t i = 1; i < store.labels().size(); ++i) runs += store.labels()[i] != store.labels()[i - 1];
    constexpr int64_t kLongRun = 16;  // a shuffled set of 2 or more classes averages under 2 rows a run
    if (runs > 0 && store.size() / runs >= kLongRun) report.label_runs = LabelRuns{runs, store.size() / runs};
  }
  return report;
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
  int64_t row_group_rows = kEncodedRowGroupRows;  // unless row_group_size
};

// Options that apply to pixel sets only are refused for encoded images, whatever `what` they are.
void check_encoded_options(const ConvertOptions& options, const std::string& what) {
  if (options.shape) throw OptionsError("--shape applies to pixel sets; encoded images keep their own sizes");
  if (options.layout || options.page_rows)
    throw OptionsError("--layout and --page-rows apply to pixel sets; " + what + " is written as its images' bytes");
  if (lowercase_extension(options.output) == ".parquet" || lowercase_extension(options.output) == ".csv")
    throw OptionsError(what + " is written as a sharded set: give a directory (OUT/), not '" + options.output.string() +
                       "'");
  if (options.jpeg_quality && !options.max_side)
    throw OptionsError("--jpeg-quality applies to the images --max-side re-encodes: give --max-side too");
}

// Encoded images (a folder's files, tar shards' members, a Parquet set's rows) as Parquet shards of
// their bytes, unchanged unless max_side. One shard's images are held at a time.
ConvertReport write_encoded_set(Job& job, EncodedInput input) {
  const ConvertOptions& options = job.options;
  ShardWriteOptions write;
  write.parquet = job.parquet;
  write.parquet.class_names = input.classes;  // kept in the shards, as the datasets library keeps them
  if (!options.row_group_size) write.parquet.row_group_size = input.row_group_rows;
  write.shard_rows = options.shard_rows.value_or(0);
  write.shuffle_seed = options.shuffle_seed;
  if (!options.shard_rows) write.shard_size_bytes = shard_size_bytes(options);
  EncodedRowReader* source_rows = input.rows.get();
  MaxSideRowReader* smaller = nullptr;
  if (options.max_side) {
    MaxSideOptions max_side;
    max_side.max_side = *options.max_side;
    max_side.quality = options.jpeg_quality.value_or(kDefaultJpegQuality);
    auto reader = std::make_unique<MaxSideRowReader>(std::move(input.rows), max_side);
    smaller = reader.get();
    input.rows = std::move(reader);
  }
  const Stopwatch total_time;
  const ShardedDataset dataset = write_encoded_sharded(*input.rows, options.output, write, shard_progress(job));
  ConvertReport report;
  report.set = ConvertedSet::kEncodedImages;
  report.read_seconds = source_rows->read_seconds();
  const double reencode_seconds = smaller ? smaller->stats().seconds : 0.0;
  report.write_seconds = total_time.seconds() - report.read_seconds - reencode_seconds;
  report.input_name = input_name(options.input);
  report.output_name = directory_name(options.output);
  report.num_rows = dataset.num_rows;
  report.shards = shards_of(dataset);
  report.input_bytes = input.rows->encoded_bytes();
  for (const ShardInfo& shard : dataset.shards) report.output_bytes += static_cast<int64_t>(shard.size_bytes);
  report.labeled = input.rows->labeled();
  report.num_classes = report.labeled ? static_cast<int64_t>(source_rows->labels_seen().size()) : 0;
  report.class_names = std::move(input.classes);
  report.skipped = std::move(input.skipped);
  report.order = std::move(input.order);
  report.not_images = BadImages{source_rows->unreadable(), source_rows->first_unreadable()};
  if (smaller) {
    const MaxSideStats& stats = smaller->stats();
    report.reencoded = ReencodedImages{*options.max_side, options.jpeg_quality.value_or(kDefaultJpegQuality),
                                       stats.reencoded, stats.bytes_before, stats.bytes_after, stats.seconds};
    report.not_decoded = BadImages{stats.undecodable, stats.first_undecodable};
  }
  report.shuffle_seed = dataset.shuffled_on_write;
  return report;
}

// An image folder (torchvision's ImageFolder layout) as Parquet shards of its files' bytes. The
// folder is listed first; each shard's files are read when it is written.
ConvertReport convert_image_folder(Job& job) {
  const ConvertOptions& options = job.options;
  check_encoded_options(options, "an image folder");
  // Shards inside the folder would make it a folder with a class "out" of no images: unreadable.
  std::error_code error;
  const auto resolved = [&error](const fs::path& path) {
    fs::path full = fs::weakly_canonical(path, error);
    return full.has_filename() ? full : full.parent_path();  // "dir/" as "dir"
  };
  const fs::path folder = resolved(options.input);
  const fs::path output = resolved(options.output);
  if (!error && std::mismatch(folder.begin(), folder.end(), output.begin(), output.end()).first == folder.end())
    throw OptionsError("the output " + options.output.string() + " is inside the image folder " +
                       options.input.string() + ": its shards would become a class folder of the input; write them "
                       "outside it");
  job.say("listing " + options.input.string());
  ImageFolderListing listing = list_image_folder(options.input);
  job.say(std::to_string(listing.files.size()) + " images in " + std::to_string(listing.classes.size()) + " classes");
  EncodedInput input;
  input.classes = listing.classes;
  input.order = "the folder's order, sorted by class";
  if (listing.skipped_other + listing.skipped_unsupported > 0)
    input.skipped = std::to_string(listing.skipped_other) + " files that are not images, " +
                    describe_unsupported(listing.skipped_unsupported, listing.first_unsupported);
  input.rows = folder_row_reader(std::move(listing), options.input.string());
  return write_encoded_set(job, std::move(input));
}

// WebDataset-style tar shards as Parquet shards of their images' bytes, read in order; a shuffle
// on write copies the images into a spill file beside the output first (they are read in order
// only).
ConvertReport convert_tar_shards(Job& job) {
  const ConvertOptions& options = job.options;
  check_encoded_options(options, "a set of tar shards");
  const TarShards tars = open_tar_shards(options.input.string());
  EncodedInput input;
  input.order = "the shards' order";
  if (tars.skipped_members > 0)
    input.skipped = std::to_string(tars.skipped_members) + " members that are neither an image nor a label";
  input.rows = stream_row_reader(tars.source, tars.encoded_bytes, options.shuffle_seed.has_value(), options.output,
                                 spill_progress(job, "blocks of tar members"));
  return write_encoded_set(job, std::move(input));
}

// A Parquet set of encoded images written again: reshuffled, resharded or with max_side. Its
// blocks are read in order (a shuffle on write goes through a spill file, as for tar shards).
ConvertReport convert_encoded_parquet(Job& job, const ShardedDataset& dataset) {
  const ConvertOptions& options = job.options;
  check_encoded_options(options, "a Parquet set of encoded images");
  EncodedInput input;
  input.order = "the set's order";
  if (!dataset.shards.empty()) input.classes = parquet::class_label_names(dataset.shards.front().path);
  int64_t encoded_bytes = 0;
  for (const ShardInfo& shard : dataset.shards)
    for (const int64_t bytes : shard.row_group_encoded_bytes) encoded_bytes += bytes;
  input.rows = stream_row_reader(open_parquet_source(dataset), encoded_bytes, options.shuffle_seed.has_value(),
                                 options.output, spill_progress(job, "blocks of the set"));
  return write_encoded_set(job, std::move(input));
}

// A pixel set as Parquet shards of PNG files, one per image (ConvertLayout::kPng): a stream holds
// them compressed, counted at their encoded size, and decodes each as its batch is assembled.
ConvertReport convert_pngs(Job& job) {
  const ConvertOptions& options = job.options;
  if (!sharded_output(options) || lowercase_extension(options.output) == ".parquet")
    throw OptionsError("--layout png writes a sharded set: give a directory (OUT/), not '" + options.output.string() +
                       "'");
  if (options.page_rows) throw OptionsError("--page-rows applies to the columns and image layouts; --layout png "
                                            "writes each image's PNG bytes (row groups of about 8 KiB of them; "
                                            "--row-group-size sets them)");
  EncodedInput input;
  auto store = std::make_shared<const ImageStore>(load(job));
  throw_if_interrupted();
  input.rows = png_row_reader(std::move(store), input_name(options.input));
  input.order = "the input's order";
  // A row group is a stream's piece: about 8 KiB of PNGs (16 of FashionMNIST's), so that a window
  // mixes many pieces; small images compress to a few hundred bytes, and 100 of them (a folder's
  // row group) would make pieces, and so the windows' mix, coarser than the pixel layout's.
  constexpr double kPieceBytes = 8 << 10;
  const double mean_bytes = static_cast<double>(std::max<int64_t>(input.rows->encoded_bytes(), 1)) /
                            static_cast<double>(std::max<int64_t>(input.rows->size(), 1));
  input.row_group_rows = std::clamp<int64_t>(std::llround(kPieceBytes / mean_bytes), 1, kEncodedRowGroupRows);
  return write_encoded_set(job, std::move(input));
}

// An input of encoded images: an image folder, tar shards, or a Parquet set of them (the set as
// classify_input opened it, Job::parquet_input).
struct EncodedImagesInput {
  enum class Kind { kFolder, kTars, kParquet };
  Kind kind = Kind::kFolder;
};

// Decides once what the input holds; a Parquet input's footers are read here, and say whether it
// holds encoded images or pixels.
void classify_input(Job& job) {
  const ConvertOptions& options = job.options;
  const std::string spec = options.input.string();
  if (!has_glob_chars(options.input.filename().string()) && file_system_for(spec).stat(spec).kind == FileKind::kMissing)
    return;
  job.input_kind = dataset_kind(spec);
  if (job.input_kind != DatasetKind::kParquetFile && job.input_kind != DatasetKind::kParquet) return;
  parquet::ParquetImageOptions parquet;
  parquet.shape = options.shape;  // a file of pixel columns may need it to say what it holds
  job.parquet_input = open_sharded_dataset(spec, parquet);
}

// What the input holds when it is encoded images; nullopt for pixel sets (the paths that read them
// say what is wrong with a bad one) and a missing input.
std::optional<EncodedImagesInput> encoded_images_input(const Job& job) {
  using Kind = EncodedImagesInput::Kind;
  if (!job.input_kind) return std::nullopt;
  switch (*job.input_kind) {
    case DatasetKind::kImageFolder: return EncodedImagesInput{Kind::kFolder};
    case DatasetKind::kTarShards: return EncodedImagesInput{Kind::kTars};
    case DatasetKind::kParquetFile:
    case DatasetKind::kParquet:
      if (job.parquet_input->encoded) return EncodedImagesInput{Kind::kParquet};
      return std::nullopt;
    default: return std::nullopt;
  }
}

ConvertReport run(Job& job) {
  const ConvertOptions& options = job.options;
  classify_input(job);
  // Encoded images are always written as a sharded set (OUT/).
  const std::optional<EncodedImagesInput> images = encoded_images_input(job);
  if (options.shuffle_seed && !sharded_output(options) && !images)
    throw OptionsError("--shuffle-on-write applies to a sharded set (an output directory)");
  if (!images && (options.max_side || options.jpeg_quality))
    throw OptionsError("--max-side and --jpeg-quality apply to encoded images (an image folder, tar shards, a Parquet "
                       "set of images)");
  if (images) {
    switch (images->kind) {
      case EncodedImagesInput::Kind::kFolder: return convert_image_folder(job);
      case EncodedImagesInput::Kind::kTars: return convert_tar_shards(job);
      case EncodedImagesInput::Kind::kParquet: return convert_encoded_parquet(job, *job.parquet_input);
    }
  }
  if (options.layout == ConvertLayout::kPng) return convert_pngs(job);
  if (sharded_output(options)) return convert_sharded_pixels(job);
  return convert_file(job);
}

}  // namespace

ConvertReport convert_dataset(const ConvertOptions& given, const ConvertProgress& progress) {
  // Every name the conversion prints or writes is of the URLs without their secrets.
  ConvertOptions options = given;
  options.input = without_url_secrets(given.input.string());
  options.output = without_url_secrets(given.output.string());
  check_convert_options(options);
  Job job{options, progress, parquet_options(options), {}, std::nullopt, std::nullopt};
  ConvertReport report = run(job);
  report.warnings = std::move(job.warnings);
  return report;
}

}  // namespace feeder
