// A custom augmentation as a feeder::BatchTransform: random horizontal flips and shifts of up to 2
// pixels, applied by the loader's workers to each batch after conversion to float. It draws only
// from the generator the loader passes in (seeded by seed, epoch and batch number), so the batches
// are the same for any number of workers; this program checks that with 0 and 2 workers.
//   augment_transform [IMAGES_FILE] [--max-batches N]   (default: Debian's FashionMNIST train set)
#include <feeder/formats/dataset_files.h>
#include <feeder/torch/adapter.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "example_args.h"

// Flips each image left-right with probability 1/2, then shifts it by -2..2 pixels in x and y,
// filling with `background` (a black pixel after normalisation). Images are NCHW (the default
// layout). Called concurrently on different batches: it keeps no state between calls.
struct FlipAndShift {
  float background = 0.0f;

  void operator()(feeder::Batch& batch, feeder::SplitMix64& rng) const {
    const feeder::ImageShape& shape = batch.shape();
    const int64_t h = shape.height, w = shape.width;
    std::vector<float> plane(static_cast<size_t>(h * w));
    for (int64_t i = 0; i < batch.size(); ++i) {
      const bool flip = rng.below(2) == 1;
      const int64_t dx = static_cast<int64_t>(rng.below(5)) - 2, dy = static_cast<int64_t>(rng.below(5)) - 2;
      for (int64_t c = 0; c < shape.channels; ++c) {
        float* image = batch.images() + (i * shape.channels + c) * h * w;
        std::copy(image, image + h * w, plane.begin());
        for (int64_t y = 0; y < h; ++y)
          for (int64_t x = 0; x < w; ++x) {
            const int64_t from_y = y - dy, from_x = (flip ? w - 1 - x : x) - dx;
            const bool inside = from_y >= 0 && from_y < h && from_x >= 0 && from_x < w;
            image[y * w + x] = inside ? plane[from_y * w + from_x] : background;
          }
      }
    }
  }
};

// The first `max_batches` batches of epoch `epoch`, copied out of the loader's buffers.
std::vector<torch::Tensor> take(feeder::TensorLoader& loader, int64_t epoch, int64_t max_batches) {
  std::vector<torch::Tensor> batches;
  for (feeder::TensorBatch& batch : loader.epoch(epoch)) {
    batches.push_back(batch.images.clone());
    if (static_cast<int64_t>(batches.size()) == max_batches) break;
  }
  return batches;
}

bool same(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](auto& x, auto& y) { return torch::equal(x, y); });
}

int main(int argc, char** argv) {
  const ExampleArgs args = parse_example_args(argc, argv);
  const std::string file = args.paths.empty() ? "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz" : args.paths[0];
  auto store = std::make_shared<const feeder::ImageStore>(feeder::load_images(file));
  const int64_t max_batches = args.max_batches > 0 ? args.max_batches : 20;

  feeder::LoaderOptions options;
  options.batch_size = 256;
  FlipAndShift augment{.background = (0.0f - options.normalization.mean) / options.normalization.std};
  std::vector<std::vector<torch::Tensor>> by_workers;
  for (int workers : {0, 2}) {
    options.num_workers = workers;
    feeder::TensorLoader loader(store, options, augment);
    by_workers.push_back(take(loader, /*epoch=*/3, max_batches));
  }
  options.num_workers = 2;
  feeder::TensorLoader plain(store, options);
  const bool equal_for_any_workers = same(by_workers[0], by_workers[1]);
  const bool augmented = !same(by_workers[0], take(plain, 3, max_batches));
  std::printf("%zu augmented batches: %s with 0 and 2 workers; %s the plain batches\n", by_workers[0].size(),
              equal_for_any_workers ? "equal" : "DIFFERENT", augmented ? "different from" : "EQUAL to");
  return equal_for_any_workers && augmented ? 0 : 1;
}
