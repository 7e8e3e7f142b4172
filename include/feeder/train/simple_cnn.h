#pragma once

// The article's SimpleCNN as a LibTorch module.
//
// Thread safety: as any torch::nn::Module, trained by one thread at a time. Ownership: SimpleCNN is
// a ModuleHolder (a shared_ptr to the module): copies share the same parameters.

#include <torch/torch.h>

#include <cstdint>

namespace feeder {

// The article's SimpleCNN for 1x28x28 images and 10 classes (206,922 parameters):
// conv1 1->16 3x3 pad 1, maxpool 2, ReLU -> conv2 16->32 3x3 pad 1, maxpool 2, ReLU -> flatten 1568
// -> fc1 1568->128, ReLU -> fc2 128->num_classes. Returns logits. Pooling before ReLU computes the
// same function as the article's ReLU-then-pool, with less work.
struct SimpleCNNImpl : torch::nn::Module {
  explicit SimpleCNNImpl(int64_t num_classes = 10);

  // x: (B,1,28,28) float, NCHW or channels-last strides -> (B,num_classes) logits
  torch::Tensor forward(torch::Tensor x);

  torch::nn::Conv2d conv1{nullptr};
  torch::nn::Conv2d conv2{nullptr};
  torch::nn::Linear fc1{nullptr};
  torch::nn::Linear fc2{nullptr};
};
TORCH_MODULE(SimpleCNN);

// A SimpleCNN (of `num_classes` outputs) whose parameters are a pure function of `seed`: PyTorch's default initialisation
// (Kaiming-uniform weights with a = sqrt(5), biases uniform in +-1/sqrt(fan_in)), drawn in the order
// conv1, conv2, fc1, fc2 from a generator of its own, so it equals what at::manual_seed(seed)
// followed by SimpleCNN() gives. LibTorch's global generator is left as it was; do not draw from it
// on another thread while this runs.
SimpleCNN make_simple_cnn(uint64_t seed, int64_t num_classes = 10);

// Number of trainable parameter elements (206,922 for SimpleCNN).
int64_t count_parameters(const torch::nn::Module& module);

}  // namespace feeder
