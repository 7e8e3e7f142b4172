#include "feeder/train/train_data.h"

#include <string>

#include "feeder/error.h"
#include "feeder/formats/dataset_files.h"

namespace feeder {

TrainTestStores load_train_test(const std::filesystem::path& train_path, const std::filesystem::path& test_path,
                                const ImageShape& model_shape, bool require_labels) {
  TrainTestStores stores{train_path, test_path, std::make_shared<const ImageStore>(load_images(train_path)),
                         std::make_shared<const ImageStore>(load_images(test_path))};
  if (require_labels && !stores.train->labeled()) {
    throw DataError(train_path.string() + ": no labels; training needs a labeled set");
  }
  if (stores.train->shape() != stores.test->shape()) {
    throw DataError(test_path.string() + ": images are " + to_string(stores.test->shape()) + ", but " +
                    train_path.string() + " has " + to_string(stores.train->shape()));
  }
  if (stores.train->shape() != model_shape) {
    throw DataError(train_path.string() + ": images are " + to_string(stores.train->shape()) +
                    "; the model takes " + to_string(model_shape));
  }
  return stores;
}

}  // namespace feeder
