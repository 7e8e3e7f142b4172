#include "feeder/train/train_data.h"

#include <algorithm>
#include <string>

#include "feeder/error.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/formats/sharded.h"
#include "feeder/image/image_stage.h"
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


struct Shares {
  int64_t train = 0;
  int64_t test = 0;
};

// The budget's shares: the test set a quarter and the training set the rest; a set read into memory
// (IDX, CSV, an image folder that fits, a Parquet set of pixels that fits its share) hands what it
// does not use to the other. A set read within its share needs some of it.
Shares divide_budget(const Dataset& train, const Dataset& test, int64_t memory_budget) {
  // A set still to be held (a Parquet set of pixels) has no source yet.
  const bool train_held = train.source && !train.streaming;
  const bool test_held = test.source && !test.streaming;
  // A Parquet set of encoded images streams whatever its size, within the whole of its share.
  const bool train_may_be_read = train.parquet && !train.parquet->encoded;
  const bool test_may_be_read = test.parquet && !test.parquet->encoded;
  Shares shares{memory_budget - memory_budget / 4, memory_budget / 4};
  if (test_held) {
    shares.train = std::max<int64_t>(memory_budget - test.held_bytes, 0);
  } else if (train_held) {
    shares.test = std::max<int64_t>(memory_budget - train.held_bytes, 0);
  } else if (test_may_be_read && test.held_bytes <= shares.test) {
    shares.train = memory_budget - test.held_bytes;
  } else if (train_may_be_read && train.held_bytes <= shares.train) {
    shares.test = memory_budget - train.held_bytes;
  }
  const auto check_share = [&](const Dataset& set, int64_t share, const Dataset& other, bool other_held) {
    if (!(set.parquet || set.streaming) || share > 0) return;
    if (other_held)
      throw OptionsError("memory budget " + format_byte_size(memory_budget) + " is too small: " + other.spec +
                         " is held in memory (" + format_byte_size(other.held_bytes) + ") and leaves nothing for " +
                         set.spec + ", which is read within what is left; raise --memory-budget");
    throw OptionsError("memory budget " + format_byte_size(memory_budget) + " is too small: " + set.spec +
                       "'s share of it (a quarter for the test set, the rest for training) is 0 B; raise --memory-budget");
  };
  check_share(train, shares.train, test, test_held);
  check_share(test, shares.test, train, train_held);
  return shares;
}

}  // namespace

TrainTestSets open_train_test(const std::string& train_spec, const std::string& test_spec,
                              const ImageShape& model_shape, int64_t memory_budget, bool require_labels,
                              int64_t piece_bytes) {
  // An image folder is held when it fits its default share, and streamed within that share otherwise.
  DatasetOptions train_options;
  train_options.memory_budget = memory_budget - memory_budget / 4;
  train_options.hold_within_budget = false;
  train_options.piece_bytes = piece_bytes;
  Dataset train = open_dataset(train_spec, train_options);
  // A test folder is labeled by the training set's class names (it may lack some), so that a label
  // means the same class in both, whatever folders each has.
  DatasetOptions test_options;
  test_options.memory_budget = memory_budget / 4;
  test_options.classes = train.classes;
  test_options.hold_within_budget = false;
  Dataset test = open_dataset(test_spec, test_options);
  check_classes(train_spec, train.classes, test_spec, test.classes);
  const Shares shares = divide_budget(train, test, memory_budget);
  hold_within_budget(train, shares.train);
  hold_within_budget(test, shares.test);

  // Encoded images become the model's shape in the loader (image_stage_for).
  const auto shape_of = [&](const SampleSource& source) { return source.encoded() ? model_shape : source.shape(); };
  const SampleSource& train_source = *train.source;
  check_pair(train_spec, shape_of(train_source), train_source.labeled(), test_spec, shape_of(*test.source),
             model_shape, require_labels);
  return {std::move(train), std::move(test)};
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
  const auto check = [](const Dataset& set, int64_t label, const std::string& sample) {
    if (label >= kMaxClasses)
      throw DataError(sample + ": label " + std::to_string(label) + " is over the " + std::to_string(kMaxClasses) +
                      " classes feeder train builds a model for: labels are class indices 0..N-1 (" +
                      set.source->name() + ")");
  };
  for (const Dataset* set : {&sets.train, &sets.test}) {
    if (set->source == nullptr) continue;
    classes = std::max(classes, static_cast<int64_t>(set->classes.size()));
    if (const ImageStore* store = pixel_store(*set->source)) {
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
