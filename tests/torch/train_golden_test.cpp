// SimpleCNN + Adam through feeder's Trainer against numbers computed by PyTorch: the same weights and
// batches, made from formulas, trained for a few fp32 steps. The expected values are printed by
// tests/torch/golden/simple_cnn_losses.py (Debian's python3-torch); see that script for the recipe.

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "feeder/train/simple_cnn.h"
#include "feeder/train/trainer.h"

namespace feeder {
namespace {

constexpr int64_t kBatchSize = 8;

// From simple_cnn_losses.py: the loss of steps 0..3.
const std::vector<double> kPyTorchLosses = {
    2.2871685,
    2.34202242,
    2.28621888,
    2.30534673,
};

struct ParameterSums {
  std::string name;
  double sum;
  double sum_of_squares;
};
// From simple_cnn_losses.py: every parameter after the last step.
const std::vector<ParameterSums> kPyTorchParameters = {
    {"conv1.weight", 0.491192893824, 7.91278488101},
    {"conv1.bias", -0.10525649786, 0.945249001329},
    {"conv2.weight", -1.57547941364, 15.9679954678},
    {"conv2.bias", -0.206843040418, 0.105766475219},
    {"fc1.weight", -35.9143914533, 64.6212462857},
    {"fc1.bias", -0.0219242649182, 0.0413251755882},
    {"fc2.weight", -0.29789232889, 4.98495527373},
    {"fc2.bias", 0.100371057168, 0.0399221344245},
};

// Parameter k, element i: sin(0.731 * i + k) / sqrt(fan_in), in double, stored as float.
void set_formula_parameters(SimpleCNN& model) {
  torch::NoGradGuard no_grad;
  int k = 0;
  for (auto& item : model->named_parameters()) {
    const std::string layer = item.key().substr(0, item.key().find('.'));
    const torch::Tensor weight = model->named_parameters()[layer + ".weight"];
    const double fan_in = static_cast<double>(weight[0].numel());
    torch::Tensor parameter = item.value();
    std::vector<double> values(static_cast<size_t>(parameter.numel()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(0.731 * static_cast<double>(i) + k) / std::sqrt(fan_in);
    parameter.copy_(torch::tensor(values, torch::kFloat64).reshape(parameter.sizes()));
    ++k;
  }
}

// Pixels (b * 131 + p * 17 + step * 7) mod 256 divided by 255; labels (b * 3 + step) mod 10.
std::pair<torch::Tensor, torch::Tensor> formula_batch(int64_t step) {
  const torch::Tensor b = torch::arange(kBatchSize, torch::kLong).reshape({kBatchSize, 1});
  const torch::Tensor p = torch::arange(28 * 28, torch::kLong).reshape({1, 28 * 28});
  const torch::Tensor pixels = (b * 131 + p * 17 + step * 7).remainder(256);
  const torch::Tensor images = pixels.to(torch::kFloat32).div(255.0).reshape({kBatchSize, 1, 28, 28});
  const torch::Tensor labels = (torch::arange(kBatchSize, torch::kLong) * 3 + step).remainder(10);
  return {images, labels};
}

class TrainGolden : public ::testing::TestWithParam<bool> {};

TEST_P(TrainGolden, Fp32StepsMatchPyTorch) {
  const bool channels_last = GetParam();
  const int saved_threads = at::get_num_threads();
  at::set_num_threads(1);  // the reference ran on one thread: the same summation order
  SimpleCNN model = make_simple_cnn(0);
  set_formula_parameters(model);
  TrainerConfig config;
  config.device = torch::kCPU;
  config.precision = Precision::kFp32;
  config.channels_last = channels_last;
  Trainer trainer(model, config);

  for (int64_t step = 0; step < static_cast<int64_t>(kPyTorchLosses.size()); ++step) {
    const auto [images, labels] = formula_batch(step);
    const double loss = trainer.train_step(images, labels).item<double>();
    EXPECT_NEAR(loss, kPyTorchLosses[static_cast<size_t>(step)], 1e-5 * kPyTorchLosses[static_cast<size_t>(step)])
        << "step " << step;
  }
  const auto parameters = trainer.model()->named_parameters();
  ASSERT_EQ(parameters.size(), kPyTorchParameters.size());
  for (const ParameterSums& expected : kPyTorchParameters) {
    const torch::Tensor p = parameters[expected.name].detach().to(torch::kFloat64);
    const double sum_of_squares = (p * p).sum().item<double>();
    // A sum may cancel to near zero: compare it on the scale of the parameter's norm too.
    EXPECT_NEAR(p.sum().item<double>(), expected.sum, 1e-5 * (std::abs(expected.sum) + std::sqrt(expected.sum_of_squares)))
        << expected.name;
    EXPECT_NEAR(sum_of_squares, expected.sum_of_squares, 1e-5 * expected.sum_of_squares) << expected.name;
  }
  at::set_num_threads(saved_threads);
}

INSTANTIATE_TEST_SUITE_P(Layouts, TrainGolden, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("ChannelsLast") : std::string("Nchw");
                         });

}  // namespace
}  // namespace feeder
