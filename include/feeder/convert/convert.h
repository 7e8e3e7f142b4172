#pragma once

// Converting an image set from one form to another: what `feeder convert IN OUT` and Python's
// feeder.convert do, as a library call that returns its report as a value (convert_report.h).
//
//   - a pixel set (CSV, IDX, a Parquet file of pixels) to one .parquet or .csv file;
//   - a pixel set to a sharded Parquet set (OUT/, an existing directory, or a shard bound given),
//     written to stream well unless told otherwise: the image layout, lz4, pages of one piece;
//   - a pixel set to Parquet shards of one PNG per image (ConvertLayout::kPng);
//   - encoded images (an image folder, WebDataset-style tar shards, a Parquet set of encoded
//     images) to Parquet shards of their bytes, unchanged unless max_side, one shard's images held
//     at a time.
//
// The output kind follows from the options and the input as the command line has always read
// them; the messages of OptionsError name the command's options ("--shard-size"), which Python's
// keywords mirror.
//
// Thread safety: convert_dataset may run on any thread, several at once on different outputs. It
// stops at its next safe point once request_interrupt() (feeder/util/interrupt.h) is called,
// throwing Interrupted after removing what it wrote. It prints nothing: progress goes to the
// callback, the report and its warnings are returned.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "feeder/convert/convert_report.h"
#include "feeder/formats/parquet/metadata.h"
#include "feeder/store/image_store.h"

namespace feeder {

// The Parquet layout of a pixel set: one INT32 column per pixel, one BYTE_ARRAY image column, or
// each image a PNG of its own (a stream holds them compressed and decodes them as batches need).
enum class ConvertLayout { kColumns, kImage, kPng };

// "columns", "image" or "png"; throws OptionsError listing them.
ConvertLayout parse_convert_layout(std::string_view name);

// Every option of `feeder convert`; unset means "not given", which for some options picks a default
// that depends on the output (a sharded set streams well with the image layout and lz4).
struct ConvertOptions {
  std::filesystem::path input;   // a file, an image folder, tar shards (a .tar, a directory or a glob), a Parquet set
  std::filesystem::path output;  // a .parquet or .csv file, or a directory (ending in '/' or existing)

  std::optional<ConvertLayout> layout;  // pixel sets: kColumns for a file, kImage for a sharded set
  std::optional<parquet::Codec> codec;  // kZstd for a file, kLz4Raw for a sharded set
  std::optional<int> level;             // the codec's level, >= 1 (the writer checks the codec's range)
  std::optional<int64_t> row_group_size;  // rows per row group, >= 1
  std::optional<int64_t> page_rows;       // rows per data page, >= 1 (pixel layouts only)
  std::optional<ImageShape> shape;        // CxHxW of a pixel set, each >= 1

  // A sharded set's bound: rows per shard (>= 1), or a size as parse_byte_size reads it ("256MB");
  // not both. Either one makes the output a directory. Neither: shards of 256MB.
  std::optional<int64_t> shard_rows;
  std::optional<std::string> shard_size;
  // Sharded sets: the rows written in the order epoch_order(N, true, seed, 0), the seed recorded.
  std::optional<uint64_t> shuffle_seed;

  // Encoded images: those whose longer side is over max_side (>= 1) px re-encoded as JPEG of
  // jpeg_quality (1..100, 90 when not given), resized to it.
  std::optional<int64_t> max_side;
  std::optional<int> jpeg_quality;
};

inline constexpr int kDefaultJpegQuality = 90;

// The checks of the options on their own, before the input is looked at: ranges, the shard size's
// text, options that exclude each other. Throws OptionsError saying what to change. convert_dataset
// calls it first; the checks that need to know what the input holds (an option that applies to pixel
// sets only, say) come after, still before anything is written.
void check_convert_options(const ConvertOptions& options);

// A progress line for a person watching ("shard 3/10 written", "listing DIR"); the caller decides
// whether and where to show it. Called on the thread that runs convert_dataset.
using ConvertProgress = std::function<void(const std::string& line)>;

// Converts options.input into options.output and returns what it did. Throws OptionsError for
// options that do not fit (before anything is written), DataError for an input that cannot be read,
// Interrupted when asked to stop; on any error what was written is removed and an existing output
// file is left as it was.
ConvertReport convert_dataset(const ConvertOptions& options, const ConvertProgress& progress = nullptr);

}  // namespace feeder
