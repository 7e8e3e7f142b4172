#include "feeder/train/train_data.h"

#include <algorithm>
#include <optional>
#include <string>

#include "feeder/error.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/formats/parquet/class_labels.h"
#include "feeder/formats/sharded.h"
#include "feeder/image/image_folder.h"
#include "feeder/image/image_stage.h"
#include "feeder/image/tar_shards.h"
#include "feeder/util/byte_size.h"

namespace feeder {

namespace {

// What training SimpleCNN needs of a train/test pair, for both ways of opening one.
void check_pair(const std::string& train_name, const ImageShape& train_shape, bool train_labeled,
                const std::string& test_name, const ImageShape& test_shape, const ImageShape& model_shape,
                bool require_labels) {
  if (require_labels && !train_labeled) {
    throw DataError(train_name + ": no labels; training needs a labeled set");
  }
  if (train_shape != test_shape) {
    throw DataError(test_name + ": images are " + to_string(test_shape) + ", but " + train_name + " has " +
                    to_string(train_shape));
  }
  if (train_shape != model_shape) {
    throw DataError(train_name + ": images are " + to_string(train_shape) + "; the model takes " +
                    to_string(model_shape));
  }
}

}  // namespace

TrainTestStores load_train_test(const std::filesystem::path& train_path, const std::filesystem::path& test_path,
                                const ImageShape& model_shape, bool require_labels) {
  TrainTestStores stores{train_path, test_path, std::make_shared<const ImageStore>(load_images(train_path)),
                         std::make_shared<const ImageStore>(load_images(test_path))};
  check_pair(train_path.string(), stores.train->shape(), stores.train->labeled(), test_path.string(),
             stores.test->shape(), model_shape, require_labels);
  return stores;
}

namespace {

bool has_glob_chars(const std::string& spec) { return spec.find_first_of("*?[") != std::string::npos; }

bool is_parquet_set(const std::string& spec) {
  std::error_code error;
  if (std::filesystem::is_directory(spec, error)) return true;
  if (has_glob_chars(spec)) return true;
  return spec.size() > 8 && spec.compare(spec.size() - 8, 8, ".parquet") == 0;
}

// A set that is not Parquet, or a Parquet set described but not yet read.
struct Candidate {
  OpenedSet set;
  std::optional<ShardedDataset> dataset;
};

// `classes`: an image folder's class names and order when given (list_image_folder).
Candidate describe(const std::string& spec, int64_t memory_budget, const std::vector<std::string>& classes = {}) {
  Candidate candidate;
  candidate.set.spec = spec;
  std::error_code error;
  if (!has_glob_chars(spec) && !std::filesystem::exists(spec, error)) {
    throw DataError(spec + ": no such file or directory");
  }
  if (is_tar_spec(spec)) {
    // WebDataset-style shards: always streamed (their images are read a block at a time).
    TarShards shards = open_tar_shards(spec);
    candidate.set.source = shards.source;
    candidate.set.decoded_bytes = shards.encoded_bytes;
    candidate.set.num_files = shards.num_shards;
    candidate.set.streaming = true;
    candidate.set.choice = "streaming tar shards (" + std::to_string(shards.num_shards) + " shards, " +
                           format_byte_size(shards.encoded_bytes) + " of encoded images, decoded as batches need them)";
    return candidate;
  }
  if (is_image_folder(spec)) {
    // Encoded images, held as they are (or streamed, beyond the budget) and decoded as batches need them.
    ImageFolder folder = open_image_folder(spec, 0, memory_budget, classes);
    candidate.set.source = folder.source;
    candidate.set.decoded_bytes = folder.encoded_bytes;
    candidate.set.num_files = folder.source->size();
    candidate.set.streaming = folder.streaming;
    candidate.set.classes = folder.classes;
    candidate.set.choice = std::string(folder.streaming ? "streaming (" : "in memory (") +
                           std::to_string(folder.classes.size()) + " classes, " +
                           format_byte_size(candidate.set.decoded_bytes) + " of encoded images" +
                           (folder.streaming ? ", over the " + format_byte_size(memory_budget) + " budget" : "") +
                           ", decoded as batches need them";
    if (folder.skipped_other + folder.skipped_unsupported > 0)
      candidate.set.choice += "; " + std::to_string(folder.skipped_other + folder.skipped_unsupported) +
                              " other files skipped" +
                              (folder.skipped_unsupported > 0
                                   ? ", of them " + describe_unsupported(folder.skipped_unsupported, folder.first_unsupported)
                                   : std::string());
    candidate.set.choice += ")";
    if (!folder.unreadable_note.empty()) candidate.set.choice += "; " + folder.unreadable_note;
    candidate.set.warning = folder.unreadable_note;
    return candidate;
  }
  if (!is_parquet_set(spec)) {
    auto store = std::make_shared<const ImageStore>(load_images(spec));
    candidate.set.source = std::make_shared<InMemorySource>(store, spec);
    candidate.set.decoded_bytes = candidate.set.source->decoded_bytes();
    candidate.set.choice = "in memory (" + format_byte_size(candidate.set.decoded_bytes) + " decoded)";
    return candidate;
  }
  // A footer must fit the budget once parsed: refused before it is read, not after.
  parquet::ParquetImageOptions options;
  options.max_metadata_bytes = memory_budget;
  candidate.dataset = open_sharded_dataset(spec, options);
  candidate.set.decoded_bytes = candidate.dataset->decoded_bytes();
  candidate.set.num_files = static_cast<int64_t>(candidate.dataset->shards.size());
  candidate.set.num_row_groups = candidate.dataset->num_row_groups();
  if (candidate.dataset->encoded && !candidate.dataset->shards.empty())  // every shard carries the same features
    candidate.set.classes = parquet::class_label_names(candidate.dataset->shards.front().path);
  return candidate;
}

// Reads a Parquet set into memory when it fits `share`, else leaves it streaming within it.
void open_parquet(Candidate& candidate, int64_t share) {
  OpenedSet& set = candidate.set;
  // Every loader holds an epoch order of 8 bytes a row: a row count beyond the budget (an index
  // that claims 10^12 rows for a 2 MB shard) is refused before any table of rows or pieces is made.
  // Below 8M rows those tables are small, and the loader checks its budget itself.
  constexpr int64_t kOrderCheckFloor = int64_t{64} << 20;
  const int64_t rows = candidate.dataset->num_rows;
  if (share > 0 && rows > std::max(share, kOrderCheckFloor) / static_cast<int64_t>(sizeof(int64_t))) {
    const auto largest = std::max_element(candidate.dataset->shards.begin(), candidate.dataset->shards.end(),
                                          [](const ShardInfo& a, const ShardInfo& b) { return a.num_rows < b.num_rows; });
    throw DataError(set.spec + ": " + std::to_string(rows) + " rows (" +
                    (candidate.dataset->indexed ? "as " + std::string(kShardIndexName) + " records them" : "as the footers record them") +
                    "; the most in " + largest->path.filename().string() + ", " + std::to_string(largest->num_rows) + " rows in " +
                    std::to_string(largest->size_bytes) + " bytes) need " + format_byte_size(rows * 8) +
                    " for the epoch order alone (8 bytes a row), more than the " + format_byte_size(share) +
                    " memory budget: raise the budget, or rewrite a damaged index with feeder convert");
  }
  std::shared_ptr<SampleSource> stream = open_parquet_source(*candidate.dataset);
  if (candidate.dataset->encoded) {
    // Encoded images are decoded as batches need them, so they always stream; within a budget that
    // holds them all the window is the whole set (a full shuffle), and the page cache keeps them.
    set.decoded_bytes = stream->held_bytes();
    set.source = std::move(stream);
    set.streaming = true;
    set.memory_budget = share;
    set.choice = "streaming encoded images (" + format_byte_size(set.decoded_bytes) + " with labels, " +
                 format_byte_size(share) + " budget)";
    return;
  }
  if (set.decoded_bytes <= share) {
    set.source = read_into_memory(*stream);
    set.choice = "in memory (" + format_byte_size(set.decoded_bytes) + " decoded, within the " +
                 format_byte_size(share) + " budget)";
  } else {
    set.source = std::move(stream);
    set.streaming = true;
    set.memory_budget = share;
    set.choice = "streaming (" + format_byte_size(set.decoded_bytes) + " decoded, over the " +
                 format_byte_size(share) + " budget)";
  }
}

// Two sets that name their classes must give each label the same name (a test folder is labeled by
// the training set's names already; Parquet sets store theirs).
void check_classes(const std::string& train_spec, const std::vector<std::string>& train,
                   const std::string& test_spec, const std::vector<std::string>& test) {
  if (train.empty() || test.empty()) return;
  // A test set may lack training's last classes (a folder of fewer classes, converted).
  if (test.size() <= train.size() && std::equal(test.begin(), test.end(), train.begin())) return;
  for (size_t label = 0; label < std::max(train.size(), test.size()); ++label) {
    const auto name = [&](const std::vector<std::string>& names) {
      return label < names.size() ? "'" + names[label] + "'" : std::string("no class");
    };
    if (label < train.size() && label < test.size() && train[label] == test[label]) continue;
    throw DataError(test_spec + ": its classes are not the training set's: label " + std::to_string(label) + " is " +
                    name(test) + " here and " + name(train) + " in " + train_spec + " (" +
                    std::to_string(test.size()) + " classes against " + std::to_string(train.size()) +
                    "); the model would be tested against the wrong classes. Write both sets with the same class names "
                    "in the same order");
  }
}

}  // namespace

OpenedSet open_set(const std::string& spec, int64_t memory_budget) {
  Candidate candidate = describe(spec, memory_budget);
  if (candidate.dataset) open_parquet(candidate, memory_budget);
  return std::move(candidate.set);
}

TrainTestSets open_train_test(const std::string& train_spec, const std::string& test_spec,
                              const ImageShape& model_shape, int64_t memory_budget, bool require_labels) {
  // An image folder is held when it fits its default share, and streamed within that share otherwise.
  Candidate train = describe(train_spec, memory_budget - memory_budget / 4);
  // A test folder is labeled by the training set's class names (it may lack some), so that a label
  // means the same class in both, whatever folders each has.
  Candidate test = describe(test_spec, memory_budget / 4, train.set.classes);
  check_classes(train_spec, train.set.classes, test_spec, test.set.classes);
  const bool train_held = !train.dataset && !train.set.streaming;
  const bool test_held = !test.dataset && !test.set.streaming;
  // A Parquet set of encoded images streams whatever its size, within the whole of its share.
  const bool train_may_be_read = train.dataset && !train.dataset->encoded;
  const bool test_may_be_read = test.dataset && !test.dataset->encoded;
  // Sets already in memory (IDX, CSV, image folders) take their size off the budget first.
  int64_t test_share = memory_budget / 4;
  int64_t train_share = memory_budget - test_share;
  if (test_held) {
    train_share = std::max<int64_t>(memory_budget - test.set.decoded_bytes, 0);
  } else if (train_held) {
    test_share = std::max<int64_t>(memory_budget - train.set.decoded_bytes, 0);
  } else if (test_may_be_read && test.set.decoded_bytes <= test_share) {
    train_share = memory_budget - test.set.decoded_bytes;
  } else if (train_may_be_read && train.set.decoded_bytes <= train_share) {
    test_share = memory_budget - train.set.decoded_bytes;
  }
  // A set read within its share needs some of it: a share of 0 would mean the default budget.
  const auto check_share = [&](const Candidate& set, int64_t share, const Candidate& other, bool other_held) {
    if (!(set.dataset || set.set.streaming) || share > 0) return;
    if (other_held)
      throw OptionsError("memory budget " + format_byte_size(memory_budget) + " is too small: " + other.set.spec +
                         " is held in memory (" + format_byte_size(other.set.decoded_bytes) + ") and leaves nothing for " +
                         set.set.spec + ", which is read within what is left; raise --memory-budget");
    throw OptionsError("memory budget " + format_byte_size(memory_budget) + " is too small: " + set.set.spec +
                       "'s share of it (a quarter for the test set, the rest for training) is 0 B; raise --memory-budget");
  };
  check_share(train, train_share, test, test_held);
  check_share(test, test_share, train, train_held);
  if (train.dataset) open_parquet(train, train_share);
  if (test.dataset) open_parquet(test, test_share);
  if (train.set.streaming && !train.dataset) train.set.memory_budget = train_share;
  if (test.set.streaming && !test.dataset) test.set.memory_budget = test_share;

  // Encoded images become the model's shape in the loader (image_stage_for).
  const auto shape_of = [&](const SampleSource& source) { return source.encoded() ? model_shape : source.shape(); };
  const SampleSource& train_source = *train.set.source;
  check_pair(train_spec, shape_of(train_source), train_source.labeled(), test_spec, shape_of(*test.set.source),
             model_shape, require_labels);
  return {std::move(train.set), std::move(test.set)};
}

std::shared_ptr<const SampleStage> image_stage_for(const SampleSource& source, const ImageShape& model_shape) {
  if (!source.encoded()) return nullptr;
  ImageStageOptions options;
  options.channels = static_cast<int>(model_shape.channels);
  options.height = model_shape.height;
  options.width = model_shape.width;
  options.crop = ImageCrop::kResize;
  return std::make_shared<ImageStage>(options);
}

int64_t classes_needed(const TrainTestSets& sets) {
  int64_t classes = 10;
  // A label no model can have: refused, naming where it is (`sample`: one of the samples that may hold it).
  const auto check = [](const OpenedSet& set, int64_t label, const std::string& sample) {
    if (label >= kMaxClasses)
      throw DataError(sample + ": label " + std::to_string(label) + " is over the " + std::to_string(kMaxClasses) +
                      " classes feeder train builds a model for: labels are class indices 0..N-1 (" +
                      set.source->name() + ")");
  };
  for (const OpenedSet* set : {&sets.train, &sets.test}) {
    if (set->source == nullptr) continue;
    classes = std::max(classes, static_cast<int64_t>(set->classes.size()));
    if (const ImageStore* store = set->source->in_memory()) {
      const auto& labels = store->labels();
      for (size_t i = 0; i < labels.size(); ++i) {
        check(*set, labels[i], set->source->sample_name(static_cast<int64_t>(i)));
        classes = std::max(classes, labels[i] + 1);
      }
    } else {
      const auto ranges = set->source->block_label_ranges();
      for (size_t b = 0; b < ranges.size(); ++b) {
        const int64_t first = set->source->block_starts()[b];
        const int64_t rows = set->source->block_rows(static_cast<int64_t>(b));
        check(*set, ranges[b].second,
              rows == 1 ? set->source->sample_name(first)
                        : "one of the " + std::to_string(rows) + " samples from " + set->source->sample_name(first));
        classes = std::max(classes, ranges[b].second + 1);
      }
    }
  }
  return classes;
}

}  // namespace feeder
