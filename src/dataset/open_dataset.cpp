#include "feeder/dataset/dataset.h"
#include "feeder/io/object_storage.h"

#include <algorithm>
#include <string>
#include <utility>

#include "feeder/error.h"
#include "feeder/formats/parquet/class_labels.h"
#include "feeder/formats/sharded.h"
#include "feeder/image/image_folder.h"
#include "feeder/image/tar_shards.h"
#include "feeder/system/runtime.h"
#include "feeder/util/byte_size.h"

namespace feeder {
namespace {

void set_source(Dataset& dataset, std::shared_ptr<const SampleSource> source) {
  dataset.schema = source->schema();
  dataset.source = std::move(source);
}

// WebDataset-style shards: always streamed (their images are read a block at a time).
void open_tars(Dataset& dataset) {
  TarShards shards = open_tar_shards(dataset.spec);
  set_source(dataset, shards.source);
  dataset.held_bytes = shards.encoded_bytes;
  dataset.num_files = shards.num_shards;
  dataset.streaming = true;
  dataset.skipped_files = shards.skipped_members;
  dataset.description = "streaming tar shards (" + std::to_string(shards.num_shards) + " shards, " +
                        format_byte_size(shards.encoded_bytes) + " of encoded images, decoded as batches need them)";
}

// Encoded images, held as they are (or streamed, beyond the budget) and decoded as batches need
// them. The caller says how the set was opened (description).
void take_folder(Dataset& dataset, ImageFolder folder) {
  set_source(dataset, folder.source);
  dataset.kind = DatasetKind::kImageFolder;
  dataset.held_bytes = folder.encoded_bytes;
  dataset.num_files = folder.source->size();
  dataset.streaming = folder.streaming;
  dataset.classes = std::move(folder.classes);
  dataset.skipped_files = folder.skipped_other + folder.skipped_unsupported;
  dataset.skipped_unsupported = folder.skipped_unsupported;
  dataset.first_unsupported = std::move(folder.first_unsupported);
  dataset.warning = std::move(folder.unreadable_note);
}

// "in memory (10 classes, 75 MiB of encoded images, decoded as batches need them; ...)".
std::string folder_description(const Dataset& dataset, int64_t memory_budget) {
  std::string text = std::string(dataset.streaming ? "streaming (" : "in memory (") +
                     std::to_string(dataset.classes.size()) + " classes, " + format_byte_size(dataset.held_bytes) +
                     " of encoded images" +
                     (dataset.streaming ? ", over the " + format_byte_size(memory_budget) + " budget" : "") +
                     ", decoded as batches need them";
  if (dataset.skipped_files > 0)
    text += "; " + std::to_string(dataset.skipped_files) + " other files skipped" +
            (dataset.skipped_unsupported > 0
                 ? ", of them " + describe_unsupported(dataset.skipped_unsupported, dataset.first_unsupported)
                 : std::string());
  text += ")";
  if (!dataset.warning.empty()) text += "; " + dataset.warning;
  return text;
}

// Fields are columns of a Parquet table; other sets have images and labels only.
[[noreturn]] void throw_no_fields(const std::string& spec, DatasetKind kind, const std::vector<std::string>& fields) {
  throw OptionsError(spec + ": fields (" + fields.front() + (fields.size() > 1 ? ", ..." : "") +
                     ") are read from the columns of a Parquet set, and this is a " + std::string(to_string(kind)) +
                     " (images and labels only)");
}

// The rows of a Parquet pixel set's pieces for DatasetOptions::piece_bytes (0: the default); a set
// of another kind (`parquet` null) or of encoded images given a piece size throws OptionsError.
int64_t piece_rows_for(const std::string& spec, DatasetKind kind, const ShardedDataset* parquet, int64_t piece_bytes) {
  if (piece_bytes < 0) throw OptionsError("piece_size must be a positive number of bytes, got " + std::to_string(piece_bytes));
  if (piece_bytes == 0) return 0;
  if (!parquet || parquet->encoded)
    throw OptionsError(spec + ": piece_size applies to Parquet sets of pixels, streamed in pieces of row groups, not to this set (" +
                       (parquet ? std::string("encoded images, streamed in pieces of whole image pages")
                                : std::string(to_string(kind))) + ")");
  return piece_rows_of_bytes(parquet->shape, piece_bytes);
}

// IDX and CSV files: read into memory whole.
void open_file_in_memory(Dataset& dataset, const std::filesystem::path& file) {
  auto store = std::make_shared<const ImageStore>(load_images(file));
  set_source(dataset, std::make_shared<InMemorySource>(store, file.string()));
  dataset.held_bytes = dataset.source->decoded_bytes();
  dataset.description = "in memory (" + format_byte_size(dataset.held_bytes) + " decoded)";
}

// A Parquet set described from its footers or index; hold_within_budget reads or streams it.
void describe_parquet(Dataset& dataset, int64_t memory_budget, const std::vector<std::string>& fields) {
  // A footer must fit the budget once parsed: refused before it is read, not after.
  parquet::ParquetImageOptions options;
  options.max_metadata_bytes = memory_budget;
  options.value_columns = fields;
  auto set = std::make_shared<ShardedDataset>(open_sharded_dataset(dataset.spec, options));
  dataset.schema = sample_schema(set->shape, set->encoded, set->labeled, set->values);
  dataset.held_bytes = set->decoded_bytes();
  dataset.num_files = static_cast<int64_t>(set->shards.size());
  dataset.num_row_groups = set->num_row_groups();
  if (set->encoded && !set->shards.empty())  // every shard carries the same features
    dataset.classes = parquet::class_label_names(set->shards.front().path);
  dataset.parquet = std::move(set);
}

// Every loader holds an epoch order of 8 bytes a row: a row count beyond the budget (an index that
// claims 10^12 rows for a 2 MB shard) is refused before any table of rows or pieces is made. Below
// 8M rows those tables are small, and the loader checks its budget itself.
void check_rows(const Dataset& dataset, int64_t share) {
  constexpr int64_t kOrderCheckFloor = int64_t{64} << 20;
  const ShardedDataset& set = *dataset.parquet;
  const int64_t rows = set.num_rows;
  if (share <= 0 || rows <= std::max(share, kOrderCheckFloor) / static_cast<int64_t>(sizeof(int64_t))) return;
  const auto largest = std::max_element(set.shards.begin(), set.shards.end(),
                                        [](const ShardInfo& a, const ShardInfo& b) { return a.num_rows < b.num_rows; });
  throw DataError(dataset.spec + ": " + std::to_string(rows) + " rows (" +
                  (set.indexed ? "as " + std::string(kShardIndexName) + " records them" : "as the footers record them") +
                  "; the most in " + largest->path.filename().string() + ", " + std::to_string(largest->num_rows) +
                  " rows in " + std::to_string(largest->size_bytes) + " bytes) need " + format_byte_size(rows * 8) +
                  " for the epoch order alone (8 bytes a row), more than the " + format_byte_size(share) +
                  " memory budget: raise the budget, or rewrite a damaged index with feeder convert");
}

// What a set's sequence fields take held in memory: each row group's values once (the pieces of a
// row group each count all of its values: SampleSource::variable_bytes) and an end a row.
int64_t sequences_held_bytes(const SampleSource& source) {
  int64_t bytes = 0;
  const std::span<const Field> fields = source.value_fields();
  for (size_t f = 0; f < fields.size(); ++f) {
    if (!is_sequence(fields[f])) continue;
    bytes += source.size() * static_cast<int64_t>(sizeof(int64_t));
    const std::vector<int64_t> groups = read_group_starts(source);
    for (size_t g = 0; g + 1 < groups.size(); ++g) bytes += source.value_capacity(groups[g], f);
  }
  return bytes;
}

void hold_parquet(Dataset& dataset, int64_t share) {
  check_rows(dataset, share);
  std::shared_ptr<SampleSource> stream = open_parquet_source(*dataset.parquet, {}, dataset.piece_rows);
  dataset.held_bytes += sequences_held_bytes(*stream);
  if (dataset.parquet->encoded) {
    // Encoded images are decoded as batches need them, so they always stream; within a budget that
    // holds them all the window is the whole set (a full shuffle), and the page cache keeps them.
    dataset.held_bytes = stream->held_bytes();
    set_source(dataset, std::move(stream));
    dataset.streaming = true;
    dataset.memory_budget = share;
    dataset.description = "streaming encoded images (" + format_byte_size(dataset.held_bytes) + " with labels, " +
                          format_byte_size(share) + " budget)";
    return;
  }
  if (dataset.held_bytes <= share) {
    set_source(dataset, read_into_memory(*stream));
    dataset.streaming = false;
    dataset.description = "in memory (" + format_byte_size(dataset.held_bytes) + " decoded, within the " +
                          format_byte_size(share) + " budget)";
  } else {
    set_source(dataset, std::move(stream));
    dataset.streaming = true;
    dataset.memory_budget = share;
    dataset.description = "streaming (" + format_byte_size(dataset.held_bytes) + " decoded, over the " +
                          format_byte_size(share) + " budget)";
  }
}

}  // namespace

Dataset open_dataset(const std::string& given, const DatasetOptions& options) {
  const std::string spec = without_url_secrets(given);  // the set's name everywhere, never its secrets
  const int64_t budget = options.memory_budget > 0 ? options.memory_budget : default_memory_budget();
  Dataset dataset;
  dataset.spec = spec;
  dataset.kind = dataset_kind(spec);
  const bool parquet = dataset.kind == DatasetKind::kParquetFile || dataset.kind == DatasetKind::kParquet;
  if (!options.fields.empty() && !parquet) throw_no_fields(spec, dataset.kind, options.fields);
  if (!parquet) piece_rows_for(spec, dataset.kind, nullptr, options.piece_bytes);  // refused before anything is read
  switch (dataset.kind) {
    case DatasetKind::kTarShards: open_tars(dataset); break;
    case DatasetKind::kImageFolder:
      take_folder(dataset, open_image_folder(spec, 0, budget, options.classes));
      dataset.description = folder_description(dataset, budget);
      break;
    case DatasetKind::kIdxDirectory: open_file_in_memory(dataset, find_split_file(spec, options.split)); break;
    case DatasetKind::kIdxFile:
    case DatasetKind::kCsvFile: open_file_in_memory(dataset, spec); break;
    case DatasetKind::kParquetFile:
    case DatasetKind::kParquet:
      describe_parquet(dataset, budget, options.fields);
      dataset.piece_rows = piece_rows_for(spec, dataset.kind, dataset.parquet.get(), options.piece_bytes);
      if (options.hold_within_budget) hold_parquet(dataset, budget);
      break;
    case DatasetKind::kArrays: throw std::logic_error(spec + ": arrays are not opened by path");
  }
  return dataset;
}

Dataset open_dataset(ImageFiles files, const DatasetOptions& options) {
  if (!options.fields.empty()) throw_no_fields(files.name, DatasetKind::kImageFolder, options.fields);
  piece_rows_for(files.name, DatasetKind::kImageFolder, nullptr, options.piece_bytes);  // refuses a piece size
  const int64_t budget = options.memory_budget > 0 ? options.memory_budget : default_memory_budget();
  Dataset dataset;
  dataset.spec = files.name;
  ImageFolderListing listing = list_image_files(std::move(files.paths), std::move(files.labels), std::move(files.classes));
  take_folder(dataset, open_image_listing(listing, files.name, 0, budget, files.mix_streamed));
  dataset.description = std::string(dataset.streaming ? "streaming (" : "in memory (") +
                        std::to_string(dataset.source->size()) + " images, " + format_byte_size(dataset.held_bytes) +
                        " encoded" + (dataset.streaming ? ", over the budget)" : ")");
  return dataset;
}

void hold_within_budget(Dataset& dataset, int64_t share) {
  if (dataset.parquet && !dataset.source) return hold_parquet(dataset, share);
  if (dataset.streaming) dataset.memory_budget = share;
}

}  // namespace feeder
