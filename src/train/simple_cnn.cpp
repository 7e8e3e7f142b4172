#include "feeder/train/simple_cnn.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

namespace feeder {

SimpleCNNImpl::SimpleCNNImpl(int64_t num_classes)
    : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 16, 3).padding(1)))),
      conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3).padding(1)))),
      fc1(register_module("fc1", torch::nn::Linear(32 * 7 * 7, 128))),
      fc2(register_module("fc2", torch::nn::Linear(128, num_classes))) {}

torch::Tensor SimpleCNNImpl::forward(torch::Tensor x) {
  // ReLU after pooling, not before as the article writes it: ReLU is monotonic, so max(relu(a), relu(b))
  // equals relu(max(a, b)) and the outputs and gradients are the same, but the ReLU and its backward
  // pass touch a quarter of the elements (a bf16 training step: 20.0 -> 17.1 ms here).
  x = torch::relu(torch::max_pool2d(conv1->forward(x), 2, 2));  // (B,16,14,14)
  x = torch::relu(torch::max_pool2d(conv2->forward(x), 2, 2));  // (B,32,7,7)
  // reshape, not view: a channels-last activation is not viewable as (B,1568) in NCHW order, and
  // PyTorch's flatten copies it the same way, so the fc1 weights mean the same thing in both layouts.
  x = x.reshape({x.size(0), 32 * 7 * 7});
  x = torch::relu(fc1->forward(x));
  return fc2->forward(x);
}

namespace {

// Restores LibTorch's global CPU generator when it goes out of scope: module constructors draw their
// default initialisation from it, and the library must not change it behind the caller's back.
class GlobalGeneratorRestorer {
 public:
  GlobalGeneratorRestorer() : generator_(at::detail::getDefaultCPUGenerator()), state_(generator_.get_state()) {}
  ~GlobalGeneratorRestorer() { generator_.set_state(state_); }
  GlobalGeneratorRestorer(const GlobalGeneratorRestorer&) = delete;
  GlobalGeneratorRestorer& operator=(const GlobalGeneratorRestorer&) = delete;

 private:
  at::Generator generator_;
  at::Tensor state_;
};

// torch::nn's reset_parameters() for a Conv2d or Linear weight and bias, drawing from `generator`:
// Kaiming-uniform with a = sqrt(5) gives a bound of sqrt(6 / ((1 + 5) * fan_in)) = 1/sqrt(fan_in)
// for the weight, and the bias uses the same bound.
void init_like_pytorch(torch::Tensor& weight, torch::Tensor& bias, at::Generator& generator) {
  const int64_t fan_in = weight.numel() / weight.size(0);
  const double gain = std::sqrt(2.0 / (1.0 + 5.0));
  const double weight_bound = std::sqrt(3.0) * gain / std::sqrt(static_cast<double>(fan_in));
  weight.uniform_(-weight_bound, weight_bound, generator);
  const double bias_bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  bias.uniform_(-bias_bound, bias_bound, generator);
}

}  // namespace

SimpleCNN make_simple_cnn(uint64_t seed, int64_t num_classes) {
  SimpleCNN model{nullptr};
  {
    GlobalGeneratorRestorer restorer;  // the constructors' own draws are overwritten below
    model = SimpleCNN(num_classes);
  }
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  torch::NoGradGuard no_grad;
  init_like_pytorch(model->conv1->weight, model->conv1->bias, generator);
  init_like_pytorch(model->conv2->weight, model->conv2->bias, generator);
  init_like_pytorch(model->fc1->weight, model->fc1->bias, generator);
  init_like_pytorch(model->fc2->weight, model->fc2->bias, generator);
  return model;
}

int64_t count_parameters(const torch::nn::Module& module) {
  int64_t num_elements = 0;
  for (const auto& parameter : module.parameters()) {
    if (parameter.requires_grad()) num_elements += parameter.numel();
  }
  return num_elements;
}

}  // namespace feeder
