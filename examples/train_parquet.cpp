// Training on Parquet written by another tool (pandas' to_parquet, DuckDB's COPY ... (FORMAT
// parquet), polars, Spark): a column `label` and one number column per pixel (pandas' layout of
// FashionMNIST: label, pixel1..pixel784), in one file, a directory of files or a glob. The set is
// streamed one row group at a time under a memory budget, so it may be larger than memory.
//   train_parquet SET [--max-batches N]
//   e.g. DuckDB: COPY (SELECT * FROM 'fashion-mnist_train.csv') TO 'train.parquet' (FORMAT parquet)
#include <feeder/formats/sharded.h>
#include <feeder/torch/adapter.h>
#include <torch/torch.h>

#include <cstdio>

#include "example_args.h"

int main(int argc, char** argv) {
  const ExampleArgs args = parse_example_args(argc, argv);
  if (args.paths.size() != 1) {
    std::fprintf(stderr, "usage: train_parquet FILE.parquet|DIR|'GLOB' [--max-batches N]\n");
    return 2;
  }
  // Columns are found in the footers: `label`, and every other number column as a pixel; the
  // shape is 1xSxS for S*S pixels (ParquetImageOptions says how to choose otherwise).
  feeder::ShardedDataset dataset = feeder::open_sharded_dataset(args.paths[0]);
  std::printf("%s", feeder::describe_sharded_dataset(dataset).c_str());
  if (!dataset.labeled) {
    std::fprintf(stderr, "train_parquet: %s has no label column\n", args.paths[0].c_str());
    return 1;
  }

  feeder::LoaderOptions options;
  options.batch_size = 128;
  options.num_workers = 2;
  options.memory_budget = 64 << 20;  // decoded row groups held at once, at most
  feeder::TensorLoader loader(feeder::open_parquet_source(dataset), options);

  // A small classifier over the flattened image, for any image shape; labels 0..max (the label
  // column's statistics, 10 classes when the writer kept none).
  const int64_t num_pixels = dataset.shape.num_pixels();
  const int64_t num_classes = dataset.label_max.value_or(9) + 1;
  torch::manual_seed(0);
  torch::nn::Sequential model(torch::nn::Flatten(), torch::nn::Linear(num_pixels, 64), torch::nn::ReLU(),
                              torch::nn::Linear(64, num_classes));
  torch::optim::Adam optimizer(model->parameters(), 1e-3);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    double loss_sum = 0;
    int64_t num_batches = 0;
    for (feeder::TensorBatch& batch : loader.epoch(epoch)) {
      optimizer.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(batch.images), batch.labels);
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<double>();
      if (++num_batches == args.max_batches) break;
    }
    std::printf("epoch %ld: %ld batches, mean loss %.4f\n", epoch + 1, num_batches, loss_sum / num_batches);
  }
}
