// A LibTorch program fed by feeder: one epoch of a linear model over a small set, with a range-for.
#include <feeder/torch/adapter.h>

#include <torch/torch.h>

#include <iostream>
#include <memory>

int main() {
  auto store = std::make_shared<feeder::ImageStore>(feeder::ImageShape{1, 4, 4}, 96, true);
  for (int64_t i = 0; i < store->size(); ++i) {
    store->labels()[i] = i % 3;
    for (int64_t p = 0; p < 16; ++p) store->image(i)[p] = static_cast<uint8_t>(40 * (i % 3) + p);
  }
  feeder::LoaderOptions options;
  options.batch_size = 32;
  options.num_workers = 2;
  feeder::TensorLoader loader(store, options);

  torch::manual_seed(0);
  torch::nn::Linear model(16, 3);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  int64_t num_batches = 0;
  for (feeder::TensorBatch& batch : loader.epoch(0)) {
    optimizer.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model(batch.images.flatten(1)), batch.labels);
    loss.backward();
    optimizer.step();
    ++num_batches;
  }
  std::cout << "torch consumer: " << num_batches << " batches of " << options.batch_size << "\n";
  return 0;
}
