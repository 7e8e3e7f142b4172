// Training your own LibTorch model with feeder: LibTorch's MNIST example (pytorch/examples,
// cpp/mnist) with its torch::data pipeline replaced by feeder's loader. The model, optimizer, loss
// and loop are the example's; the comments marked "was:" show the torch::data lines replaced.
//   train_own_model [DATA_DIR] [--max-batches N]   (default: Debian's FashionMNIST)
#include <feeder/formats/dataset_files.h>
#include <feeder/torch/adapter.h>
#include <torch/torch.h>

#include <cstdio>
#include <memory>

#include "example_args.h"
#include "mnist_net.h"

std::shared_ptr<const feeder::ImageStore> load(const std::string& dir, feeder::Split split) {
  return std::make_shared<const feeder::ImageStore>(feeder::load_images(feeder::find_split_file(dir, split)));
}

int main(int argc, char** argv) {
  const ExampleArgs args = parse_example_args(argc, argv);
  const std::string dir = args.paths.empty() ? "/usr/share/datasets/fashion-mnist" : args.paths[0];
  // was: torch::data::datasets::MNIST(dir).map(Normalize<>(0.1307, 0.3081)).map(Stack<>())
  //      make_data_loader<SequentialSampler>(std::move(dataset), 64)
  feeder::LoaderOptions options;
  options.batch_size = 64;
  options.normalization = {0.1307f, 0.3081f};
  options.num_workers = 2;
  feeder::TensorLoader train_loader(load(dir, feeder::Split::kTrain), options);
  options.batch_size = 1000;
  options.shuffle = false;
  feeder::TensorLoader test_loader(load(dir, feeder::Split::kTest), options);

  torch::manual_seed(1);
  Net model;
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
  for (int64_t epoch = 1; epoch <= 2; ++epoch) {
    model.train();
    int64_t batch_idx = 0;
    for (feeder::TensorBatch& batch : train_loader.epoch(epoch)) {  // was: for (auto& batch : *data_loader)
      optimizer.zero_grad();
      torch::Tensor loss = torch::nll_loss(model.forward(batch.images), batch.labels);
      loss.backward();
      optimizer.step();
      if (++batch_idx % 100 == 0 || batch_idx == args.max_batches)
        std::printf("Train Epoch: %ld [%ld batches] Loss: %.4f\n", epoch, batch_idx, loss.item<float>());
      if (batch_idx == args.max_batches) break;
    }
    torch::NoGradGuard no_grad;
    model.eval();
    int64_t correct = 0, tested = 0;
    for (feeder::TensorBatch& batch : test_loader.epoch(0)) {
      correct += model.forward(batch.images).argmax(1).eq(batch.labels).sum().item<int64_t>();
      tested += batch.labels.size(0);
      if (tested / options.batch_size == args.max_batches) break;
    }
    std::printf("Test set: Accuracy: %.3f (%ld images)\n", static_cast<double>(correct) / tested, tested);
  }
}
