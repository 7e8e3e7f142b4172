// feeder convert IN OUT: converts image sets between CSV, IDX and Parquet, chosen by extension, and
// prints a size report like the article's CSV-vs-Parquet table.

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "feeder/error.h"
#include "feeder/formats/csv.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/formats/parquet/writer.h"

namespace feeder::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: feeder convert IN OUT [--layout columns|image] [--codec zstd|snappy|gzip|lz4|brotli|none]\n"
    "                             [--level N] [--row-group-size N] [--shape CxHxW]\n"
    "  IN:  .csv, .parquet or IDX (*-images-idx3-ubyte[.gz], labels read from the file beside it)\n"
    "  OUT: .parquet or .csv (the article's layout label,pixel1..pixelK)\n";

// A bad command line: main's caller prints the usage and exits 2.
struct UsageError {
  std::string message;
};

enum class FileKind { kCsv, kParquet, kIdx };

struct ConvertArgs {
  fs::path input;
  fs::path output;
  FileKind output_kind = FileKind::kParquet;
  parquet::ParquetWriteOptions parquet;
  std::optional<ImageShape> shape;
};

std::string lowercase_extension(const fs::path& path) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(), [](unsigned char c) { return std::tolower(c); });
  return extension;
}

FileKind input_kind(const fs::path& path) {
  const std::string extension = lowercase_extension(path);
  if (extension == ".csv" || path.filename().string().ends_with(".csv.gz")) return FileKind::kCsv;
  if (extension == ".parquet") return FileKind::kParquet;
  return FileKind::kIdx;  // load_images says what it accepts when this is not IDX either
}

int64_t parse_positive(const std::string& flag, const std::string& text) {
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || value <= 0) throw UsageError{flag + " needs a positive integer, got '" + text + "'"};
  return value;
}

ImageShape parse_shape(const std::string& text) {
  ImageShape shape;
  int64_t* dims[] = {&shape.channels, &shape.height, &shape.width};
  size_t start = 0;
  for (int dim_idx = 0; dim_idx < 3; ++dim_idx) {
    const size_t end = dim_idx < 2 ? text.find('x', start) : text.size();
    if (end == std::string::npos) throw UsageError{"--shape needs CxHxW (e.g. 1x28x28), got '" + text + "'"};
    try {
      *dims[dim_idx] = parse_positive("--shape", text.substr(start, end - start));
    } catch (const UsageError&) {
      throw UsageError{"--shape needs CxHxW (e.g. 1x28x28), got '" + text + "'"};
    }
    start = end + 1;
  }
  return shape;
}

ConvertArgs parse_args(const std::vector<std::string>& args) {
  ConvertArgs parsed;
  std::vector<std::string> positional;
  for (size_t idx = 0; idx < args.size(); ++idx) {
    const std::string& arg = args[idx];
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0) {
      positional.push_back(arg);
      continue;
    }
    if (idx + 1 >= args.size()) throw UsageError{arg + " needs a value"};
    const std::string& value = args[++idx];
    try {
      if (arg == "--layout") parsed.parquet.layout = parquet::parse_parquet_layout(value);
      else if (arg == "--codec") parsed.parquet.codec = parquet::parse_parquet_codec(value);
      else if (arg == "--level") parsed.parquet.compression_level = static_cast<int>(std::stoi(value));
      else if (arg == "--row-group-size") parsed.parquet.row_group_size = parse_positive(arg, value);
      else if (arg == "--shape") parsed.shape = parse_shape(value);
      else throw UsageError{"unknown option " + arg};
    } catch (const OptionsError& error) {
      throw UsageError{error.what()};
    } catch (const std::logic_error&) {  // std::stoi
      throw UsageError{arg + " needs an integer, got '" + value + "'"};
    }
  }
  if (positional.size() != 2) throw UsageError{"expected IN and OUT, got " + std::to_string(positional.size()) + " file names"};
  parsed.input = positional[0];
  parsed.output = positional[1];
  const std::string extension = lowercase_extension(parsed.output);
  if (extension == ".parquet") parsed.output_kind = FileKind::kParquet;
  else if (extension == ".csv") parsed.output_kind = FileKind::kCsv;
  else throw UsageError{"cannot tell the output format of '" + parsed.output.string() + "' (use .parquet or .csv)"};
  return parsed;
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
  std::error_code error;
  if (!fs::is_regular_file(args.input, error)) throw DataError(args.input.string() + ": no such file");
  const FileKind kind = input_kind(args.input);
  if (!args.shape && kind != FileKind::kParquet) return load_images(args.input);
  switch (kind) {
    case FileKind::kCsv: {
      CsvReadOptions options;
      options.shape = args.shape;
      return read_csv(args.input, options);
    }
    case FileKind::kParquet: {
      parquet::ParquetImageOptions options;
      options.shape = args.shape;  // unset: the shape the file records, else 1xSxS
      return parquet::read_parquet_images(args.input, options);
    }
    case FileKind::kIdx:
      return reshaped(load_images(args.input), *args.shape, args.input);
  }
  return {};
}

double megabytes(uint64_t bytes) { return static_cast<double>(bytes) / 1e6; }

void print_report(const ConvertArgs& args, const ImageStore& store, double read_seconds, double write_seconds) {
  const uint64_t input_bytes = fs::file_size(args.input);
  const uint64_t output_bytes = fs::file_size(args.output);
  const double ratio = output_bytes == 0 ? 0.0 : static_cast<double>(input_bytes) / static_cast<double>(output_bytes);
  std::string format = args.output_kind == FileKind::kCsv ? "csv" : "parquet " + to_string(args.parquet.layout) + " " +
                                                                        parquet::to_string(args.parquet.codec);
  std::printf("| input | output | format | rows | shape | input MB | output MB | ratio | read s | write s | total s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::printf("| %s | %s | %s | %lld | %s | %.1f | %.1f | %.2fx | %.3f | %.3f | %.3f |\n",
              args.input.filename().string().c_str(), args.output.filename().string().c_str(), format.c_str(),
              static_cast<long long>(store.size()), to_string(store.shape()).c_str(), megabytes(input_bytes),
              megabytes(output_bytes), ratio, read_seconds, write_seconds, read_seconds + write_seconds);
}

}  // namespace

int convert_main(const std::vector<std::string>& args) {
  ConvertArgs parsed;
  try {
    parsed = parse_args(args);
  } catch (const UsageError& error) {
    std::cerr << "feeder convert: " << error.message << "\n" << kUsage;
    return 2;
  }
  try {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = Clock::now();
    const ImageStore store = load(parsed);
    const Clock::time_point loaded = Clock::now();
    if (parsed.output_kind == FileKind::kCsv) write_csv(store, parsed.output);
    else parquet::write_parquet(store, parsed.output, parsed.parquet);
    const Clock::time_point written = Clock::now();
    print_report(parsed, store, std::chrono::duration<double>(loaded - start).count(),
                 std::chrono::duration<double>(written - loaded).count());
    return 0;
  } catch (const std::exception& error) {
    // Library messages already name the file and the place in it.
    std::cerr << "feeder convert: " << error.what() << "\n";
    return 1;
  }
}

}  // namespace feeder::cli
