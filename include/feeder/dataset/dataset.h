#pragma once

// The one place a dataset is opened: open_dataset says what a path, glob or directory holds
// (formats/dataset_kind.h) and returns the dataset: its schema, its source and a sentence saying how
// it was opened. Python's DataLoader, `feeder train`, `feeder convert` and `feeder inspect` call it;
// so does a list of files with their labels (what a torchvision dataset holds).
//
// Thread safety: no state between calls. Ownership: the Dataset shares its source (and, for a
// Parquet set, the set's description) with every loader that reads it.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "feeder/data/schema.h"
#include "feeder/data/source.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/formats/dataset_kind.h"

namespace feeder {

struct ShardedDataset;

struct DatasetOptions {
  int64_t memory_budget = 0;  // bytes; 0: default_memory_budget()
  Split split = Split::kTrain;  // the file a directory of IDX files is read from
  // An image folder's class names and their order (label i is classes[i]) instead of its own:
  // another set's, so that a label means the same class in both. Empty: the folder's own.
  std::vector<std::string> classes;
  // A Parquet set of pixels is read into memory when it fits the budget, and streamed within it
  // otherwise. False: it is left streaming, for hold_within_budget() to decide with a share known
  // later (a train/test pair divides one budget by what each set takes).
  bool hold_within_budget = true;
  // Columns of a Parquet set read as named values of each sample besides its image and label (a
  // per-sample weight, a target: FLOAT, DOUBLE, INT32 or INT64): the source's value_fields(), which
  // every batch carries (Batch::value). Other kinds of set have no such columns: naming a field for
  // one throws OptionsError.
  std::vector<std::string> fields;
  // A Parquet set of pixels: the decoded bytes of a piece, the unit its order is shuffled in and its
  // stream reads (rounded down to whole samples, at least one). 0: stream_piece_rows (a 4096th of
  // the set, 16 KiB to 1 MiB). Larger pieces mean fewer, larger reads (over a network, fewer
  // requests) and a coarser mix; the same piece size gives the same order from any location, in
  // memory or streamed. Other kinds of set throw OptionsError.
  int64_t piece_bytes = 0;
};

struct Dataset {
  std::string spec;  // the path, directory or glob given; a name for a list of files
  DatasetKind kind = DatasetKind::kParquet;
  Schema schema;
  std::shared_ptr<const SampleSource> source;
  // How it was opened, for a person: "in memory (47.0 MiB decoded)",
  // "streaming: 47.0 MiB decoded > 12.0 MiB budget", ...
  std::string description;
  // What a user should be warned of ("" if nothing): files listed that could not be read.
  std::string warning;
  // Label i is classes[i]: an image folder's class folders, or the names of a Hugging Face ClassLabel
  // stored with a Parquet set (its first shard's footer). Empty when the set names none.
  std::vector<std::string> classes;
  bool streaming = false;
  int64_t memory_budget = 0;  // the share of the budget the set's loader streams within, when streaming
  int64_t held_bytes = 0;     // decoded pixels, or encoded images as held, with their labels
  int64_t num_files = 1;
  int64_t num_row_groups = 0;  // Parquet sets
  // Image folders and lists of image files: other files left out, and of them those in formats
  // feeder does not decode (the first few named). Tar shards: members neither image nor label.
  int64_t skipped_files = 0;
  int64_t skipped_unsupported = 0;
  std::vector<std::string> first_unsupported;
  // A Parquet set as its footers or index describe it.
  std::shared_ptr<const ShardedDataset> parquet;
  int64_t piece_rows = 0;  // a Parquet set of pixels: rows of a piece (0: stream_piece_rows)

  // Held as image files' bytes (image folders, lists of image files): names are paths.
  bool image_files() const { return kind == DatasetKind::kImageFolder && source && source->encoded(); }
};

// Opens `spec`: an IDX file (or a directory of them, options.split picking one), a CSV file, a
// Parquet file, directory or glob of shards, tar shards, or an image folder. IDX and CSV files are
// read into memory; a Parquet set of pixels in memory when it fits the budget (see
// DatasetOptions::hold_within_budget), streamed within it otherwise; encoded images are held as they
// are within the budget (streamed beyond it) and decoded as batches need them. Throws DataError
// naming the path and what is wrong with it.
Dataset open_dataset(const std::string& spec, const DatasetOptions& options = {});

// Image files with their labels, in this order (a torchvision ImageFolder's `samples`): read into
// memory when they fit the budget, else streamed in an order mixed across classes when
// `mix_streamed`, in the given order otherwise. `name` names the set in messages (its root).
struct ImageFiles {
  std::string name;
  std::vector<std::filesystem::path> paths;
  std::vector<int64_t> labels;
  std::vector<std::string> classes;
  bool mix_streamed = true;
};
Dataset open_dataset(ImageFiles files, const DatasetOptions& options = {});

// A Parquet set of pixels left streaming (DatasetOptions::hold_within_budget false): read into
// memory when it fits `share` bytes, streamed within them otherwise. Refuses (DataError) a set
// whose epoch order alone would not fit. Other sets: only their share is recorded when streaming.
void hold_within_budget(Dataset& dataset, int64_t share);

}  // namespace feeder
