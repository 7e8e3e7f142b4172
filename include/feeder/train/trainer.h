#pragma once

// The training loop: next batch -> forward -> loss -> backward -> step, with its timings.
//
// Thread safety: one thread drives a Trainer. Ownership: the trainer owns its model and optimizer;
// the batch sources and a process group are borrowed and must outlive the calls that use them.

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "feeder/data/loader.h"
#include "feeder/torch/adapter.h"
#include "feeder/train/distributed.h"
#include "feeder/train/report.h"
#include "feeder/train/simple_cnn.h"
#include "feeder/train/train_data.h"

namespace feeder {

// Arithmetic of forward and loss. bf16 is autocast to bfloat16 (parameters, gradients and the
// optimizer stay fp32); `automatic` resolves to bf16 only where the hardware computes it natively.
enum class Precision { kAutomatic, kFp32, kBf16 };
enum class DeviceChoice { kAutomatic, kCpu, kCuda };

std::string_view to_string(Precision precision);
std::string_view to_string(DeviceChoice device);
// Parse "auto"/"fp32"/"bf16" and "auto"/"cpu"/"cuda"; throw OptionsError naming the choices.
Precision parse_precision(std::string_view text);
DeviceChoice parse_device(std::string_view text);

struct TrainerOptions {
  double learning_rate = 1e-3;
  DeviceChoice device = DeviceChoice::kAutomatic;
  Precision precision = Precision::kAutomatic;
  // Channels-last parameters and inputs. Measured here (2 cores, AVX512_BF16, batch 512, idle
  // machine): a bf16 step takes ~20 ms channels-last vs ~38 ms NCHW, so it is the default.
  bool channels_last = true;
};

// What the machine offers, detected once; a separate value so resolution can be tested.
struct Hardware {
  bool cpu_native_bf16 = false;  // AVX512_BF16 or AMX-BF16
  bool cuda_available = false;
  bool cuda_bf16 = false;  // the CUDA device computes bf16 natively (compute capability >= 8)
};
Hardware detect_hardware();

// TrainerOptions resolved against the hardware: no `automatic` left.
struct TrainerConfig {
  torch::Device device = torch::kCPU;
  Precision precision = Precision::kFp32;  // fp32 or bf16
  bool channels_last = true;
  double learning_rate = 1e-3;

  // The image layout to ask the loader for, so batches arrive in the layout the model runs in.
  ImageLayout image_layout() const { return channels_last ? ImageLayout::kNhwc : ImageLayout::kNchw; }
};
// Throws OptionsError when the options ask for what the hardware lacks (cuda without a GPU).
TrainerConfig resolve_trainer_options(const TrainerOptions& options, const Hardware& hardware);

enum class Phase { kTrain, kTest };

// Passed to the progress callback after every batch, on the training thread.
struct BatchProgress {
  Phase phase = Phase::kTrain;
  int64_t epoch = 0;
  int64_t batch_idx = 0;  // batches done so far in this phase, 1-based
  int64_t num_batches = 0;
};
using ProgressCallback = std::function<void(const BatchProgress&)>;

// Where a training pass stands after a batch: what a checkpoint needs to continue it exactly.
struct PassState {
  int64_t batches_done = 0;  // batches of this pass trained on, before a resume included
  torch::Tensor loss_sum;    // this process's sum of batch loss x batch size (0-dim double, on the device)
  int64_t num_samples = 0;   // this process's samples trained on
};
// Called after every training batch, on the training thread; may save a checkpoint.
using AfterBatchCallback = std::function<void(const PassState&)>;

// Trains a SimpleCNN with cross-entropy and Adam, the article's recipe. Owns the model and the
// optimizer; not thread safe (one thread drives it). Draws no random numbers: the model comes
// initialised (make_simple_cnn(seed)) and the batch order comes from the loader's seed.
class Trainer {
 public:
  Trainer(SimpleCNN model, const TrainerConfig& config);

  const TrainerConfig& config() const { return config_; }
  SimpleCNN& model() { return model_; }

  // One optimisation step on a batch: images (B,C,H,W) float, labels (B) int64, on any device.
  // Returns the batch's mean loss as a 0-dim fp32 tensor (not synchronised, so a GPU keeps running).
  torch::Tensor train_step(const torch::Tensor& images, const torch::Tensor& labels);
  // Logits (B,classes) fp32 for images (B,C,H,W), without recording gradients.
  torch::Tensor predict(const torch::Tensor& images);

  // Data-parallel training: gradients are averaged over `group` by `averager` after each backward,
  // and run_epoch's loss, sample counts and accuracy are sums over the ranks (each rank's loaders
  // must then read its own share: LoaderOptions::rank and world_size). Both must outlive the
  // trainer's use of them; nullptr for both returns to one process.
  void set_distributed(ProcessGroup* group, GradientAverager* averager);

  // A training pass over `train` then a test pass over `test`, for epoch `epoch` (it seeds the
  // shuffle). Throws OptionsError when the training set is unlabeled, DataError at a batch with a
  // label outside the model's outputs. The test pass leaves out the
  // samples that only pad the epoch for the ranks (TensorBatch::num_padding).
  //
  // `resume` continues a pass a checkpoint interrupted: the caller has restored `train` to the
  // batch after resume->batches_done (Loader::restore), so start_epoch is not called, and the
  // loss and sample counts start from resume's.
  EpochReport run_epoch(BatchSource& train, BatchSource& test, int64_t epoch,
                        const ProgressCallback& progress = nullptr, const PassState* resume = nullptr,
                        const AfterBatchCallback& after_batch = nullptr);

  torch::optim::Adam& optimizer() { return *optimizer_; }
  // After parameters were loaded into model() (a checkpoint, torch::load), which may have given
  // them other strides: puts them back into the layout the trainer runs in (channels-last), so
  // that the same kernels, and so the same arithmetic, run as before.
  void restore_layout();

 private:
  torch::Tensor prepare_images(const torch::Tensor& images) const;
  // run_epoch's two passes, each filling its fields of `report` (summed over the ranks when
  // distributed): the training pass its loss, samples, speed and waits; the test pass its
  // samples, accuracy and waits.
  void train_pass(BatchSource& train, int64_t epoch, const ProgressCallback& progress, const PassState* resume,
                  const AfterBatchCallback& after_batch, EpochReport& report);
  void test_pass(BatchSource& test, int64_t epoch, const ProgressCallback& progress, EpochReport& report);

  TrainerConfig config_;
  SimpleCNN model_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  ProcessGroup* group_ = nullptr;          // not owned; set_distributed()
  GradientAverager* averager_ = nullptr;   // not owned
};

// What every training run's report says about its data, arithmetic and machine: the files, the
// requested and resolved precision and device, channels-last, LibTorch's thread count, the CPU and
// LibTorch's version. The caller adds its loader's options and, as they finish, the epochs.
RunReport describe_training_run(const std::string& train_file, const std::string& test_file,
                                const TrainerOptions& requested, const TrainerConfig& config);

}  // namespace feeder
