#include "feeder/train/trainer.h"

#include <string>

#include "feeder/error.h"
#include "feeder/stopwatch.h"
#include "feeder/system/runtime.h"
#include "torch/libtorch_compat.h"

namespace feeder {
namespace {


// Autocast to bf16 for the scope's lifetime, as Python's `with torch.autocast(...)`: enter saves the
// previous state and bumps the nesting level; exit restores it and, when leaving the outermost
// scope, clears the cache of casted weights (otherwise the bf16 copies of the previous step's
// weights would be reused after the optimizer has changed them).
class AutocastScope {
 public:
  AutocastScope(bool enabled, const torch::Device& device)
      : enabled_(enabled), cuda_(device.is_cuda()) {
    if (!enabled_) return;
    previous_enabled_ = torch_compat::autocast_enabled(cuda_);
    previous_dtype_ = torch_compat::autocast_dtype(cuda_);
    torch_compat::set_autocast_enabled(cuda_, true);
    torch_compat::set_autocast_dtype(cuda_, at::kBFloat16);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!enabled_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    torch_compat::set_autocast_enabled(cuda_, previous_enabled_);
    torch_compat::set_autocast_dtype(cuda_, previous_dtype_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_;
  bool cuda_;
  bool previous_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kBFloat16;
};

}  // namespace

std::string_view to_string(Precision precision) {
  switch (precision) {
    case Precision::kAutomatic: return "auto";
    case Precision::kFp32: return "fp32";
    case Precision::kBf16: return "bf16";
  }
  return "?";
}

std::string_view to_string(DeviceChoice device) {
  switch (device) {
    case DeviceChoice::kAutomatic: return "auto";
    case DeviceChoice::kCpu: return "cpu";
    case DeviceChoice::kCuda: return "cuda";
  }
  return "?";
}

Precision parse_precision(std::string_view text) {
  if (text == "auto") return Precision::kAutomatic;
  if (text == "fp32") return Precision::kFp32;
  if (text == "bf16") return Precision::kBf16;
  throw OptionsError("unknown precision '" + std::string(text) + "': use auto, fp32 or bf16");
}

DeviceChoice parse_device(std::string_view text) {
  if (text == "auto") return DeviceChoice::kAutomatic;
  if (text == "cpu") return DeviceChoice::kCpu;
  if (text == "cuda") return DeviceChoice::kCuda;
  throw OptionsError("unknown device '" + std::string(text) + "': use auto, cpu or cuda");
}

Hardware detect_hardware() {
  Hardware hardware;
  hardware.cpu_native_bf16 = read_cpuinfo().has_native_bf16();
  hardware.cuda_available = torch::cuda::is_available();
  // Ampere and later; the hook answers false in a CPU-only LibTorch.
  hardware.cuda_bf16 =
      hardware.cuda_available && torch_compat::cuda_bf16_convolutions();
  return hardware;
}

TrainerConfig resolve_trainer_options(const TrainerOptions& options, const Hardware& hardware) {
  if (!(options.learning_rate > 0)) {
    throw OptionsError("learning rate must be positive, got " + std::to_string(options.learning_rate));
  }
  TrainerConfig config;
  config.learning_rate = options.learning_rate;
  config.channels_last = options.channels_last;
  bool use_cuda = false;
  switch (options.device) {
    case DeviceChoice::kAutomatic: use_cuda = hardware.cuda_available; break;
    case DeviceChoice::kCpu: use_cuda = false; break;
    case DeviceChoice::kCuda:
      if (!hardware.cuda_available) {
        throw OptionsError("device cuda requested but no CUDA device is available: use --device cpu or auto");
      }
      use_cuda = true;
      break;
  }
  config.device = use_cuda ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  const bool native_bf16 = use_cuda ? hardware.cuda_bf16 : hardware.cpu_native_bf16;
  switch (options.precision) {
    case Precision::kAutomatic: config.precision = native_bf16 ? Precision::kBf16 : Precision::kFp32; break;
    case Precision::kFp32: config.precision = Precision::kFp32; break;
    case Precision::kBf16: config.precision = Precision::kBf16; break;
  }
  return config;
}

Trainer::Trainer(SimpleCNN model, const TrainerConfig& config) : config_(config), model_(std::move(model)) {
  model_->to(config_.device);
  restore_layout();
  optimizer_ = std::make_unique<torch::optim::Adam>(model_->parameters(),
                                                    torch::optim::AdamOptions(config_.learning_rate));
}

void Trainer::restore_layout() {
  if (config_.channels_last) {
    // Convolution weights with channels-last strides make oneDNN/cuDNN pick their NHWC kernels; the
    // optimizer state created later inherits the strides. Copy explicitly, as Python's
    // module.to(memory_format=...) does: contiguous(ChannelsLast) keeps a one-channel weight
    // (conv1: 16x1x3x3) in its NCHW strides, since those already pass as channels-last, and conv1
    // then ran its slow NCHW kernel plus reorders.
    torch::NoGradGuard no_grad;
    for (auto& parameter : model_->parameters()) {
      if (parameter.dim() != 4) continue;
      torch::Tensor nhwc = torch::empty_like(parameter, torch::MemoryFormat::ChannelsLast);
      nhwc.copy_(parameter);
      parameter.set_data(nhwc);
    }
  }
}

torch::Tensor Trainer::prepare_images(const torch::Tensor& images) const {
  torch::Tensor on_device = images.to(config_.device, /*non_blocking=*/true);
  // A no-op when the loader already delivers the layout (always so for one channel).
  return config_.channels_last ? on_device.contiguous(torch::MemoryFormat::ChannelsLast) : on_device;
}

torch::Tensor Trainer::train_step(const torch::Tensor& images, const torch::Tensor& labels) {
  const torch::Tensor inputs = prepare_images(images);
  const torch::Tensor targets = labels.to(config_.device, /*non_blocking=*/true);
  optimizer_->zero_grad();
  torch::Tensor loss;
  {
    AutocastScope autocast(config_.precision == Precision::kBf16, config_.device);
    const torch::Tensor logits = model_->forward(inputs);  // (B,classes)
    loss = torch::cross_entropy_loss(logits, targets);
  }
  if (averager_) averager_->start_step();
  loss.backward();
  if (averager_) averager_->finish();
  optimizer_->step();
  return loss.detach().to(torch::kFloat);
}

torch::Tensor Trainer::predict(const torch::Tensor& images) {
  torch::InferenceMode inference;
  AutocastScope autocast(config_.precision == Precision::kBf16, config_.device);
  return model_->forward(prepare_images(images)).to(torch::kFloat);
}

void Trainer::set_distributed(ProcessGroup* group, GradientAverager* averager) {
  group_ = group;
  averager_ = averager;
}

namespace {

// A label outside the model's outputs would fail deep inside LibTorch's loss with a stack trace:
// say which batch and label instead. The loader's labels are on the CPU: a scan of B integers.
void check_labels(const torch::Tensor& labels, int64_t num_classes, const char* pass, int64_t epoch,
                  int64_t batch_idx) {
  if (!labels.device().is_cpu()) return;
  const torch::Tensor contiguous = labels.contiguous();
  const int64_t* values = contiguous.data_ptr<int64_t>();
  for (int64_t i = 0; i < contiguous.numel(); ++i) {
    if (values[i] < 0 || values[i] >= num_classes)
      throw DataError(std::string(pass) + " batch " + std::to_string(batch_idx) + " of epoch " + std::to_string(epoch) +
                      ": label " + std::to_string(values[i]) + " is outside the model's " +
                      std::to_string(num_classes) + " classes (0.." + std::to_string(num_classes - 1) + ")");
  }
}

}  // namespace

EpochReport Trainer::run_epoch(BatchSource& train, BatchSource& test, int64_t epoch,
                               const ProgressCallback& progress, const PassState* resume,
                               const AfterBatchCallback& after_batch) {
  if (!train.labeled()) {
    throw OptionsError("the training set has no labels: training needs a labeled set");
  }
  EpochReport report;
  report.epoch = epoch;
  train_pass(train, epoch, progress, resume, after_batch, report);
  test_pass(test, epoch, progress, report);
  return report;
}

void Trainer::train_pass(BatchSource& train, int64_t epoch, const ProgressCallback& progress,
                         const PassState* resume, const AfterBatchCallback& after_batch, EpochReport& report) {
  const torch::TensorOptions counter = torch::TensorOptions().device(config_.device);
  // Loss sums stay on the device and are read once at the end, so a GPU never waits for the host
  // in the middle of an epoch.
  const Stopwatch train_time;
  if (!resume) train.start_epoch(epoch);
  torch::Tensor loss_sum = torch::zeros({}, counter.dtype(torch::kDouble));
  if (resume) {
    loss_sum += resume->loss_sum.to(loss_sum.device());
    report.num_train_samples = resume->num_samples;
  }
  for (int64_t batch_idx = resume ? resume->batches_done + 1 : 1;; ++batch_idx) {
    const Stopwatch wait_time;
    std::optional<TensorBatch> batch = train.next();
    report.data_wait_seconds += wait_time.seconds();
    if (!batch) break;
    check_labels(batch->labels, model_->fc2->weight.size(0), "training", epoch, batch_idx);
    const int64_t batch_size = batch->labels.size(0);
    const torch::Tensor loss = train_step(batch->images, batch->labels);
    loss_sum += loss * static_cast<double>(batch_size);
    report.num_train_samples += batch_size;
    if (after_batch) after_batch(PassState{batch_idx, loss_sum, report.num_train_samples});
    if (progress) progress({Phase::kTrain, epoch, batch_idx, train.num_batches()});
  }
  // Samples trained before a resume count in the loss, not in this run's speed.
  int64_t carried_samples = resume ? resume->num_samples : 0;
  double loss_total = loss_sum.item<double>();  // also waits for the device to finish
  if (group_) {
    const std::vector<double> totals = group_->sum(
        {loss_total, static_cast<double>(report.num_train_samples), static_cast<double>(carried_samples)});
    loss_total = totals[0];
    report.num_train_samples = static_cast<int64_t>(totals[1]);
    carried_samples = static_cast<int64_t>(totals[2]);
  }
  report.train_seconds = train_time.seconds();
  report.train_loss = report.num_train_samples > 0 ? loss_total / report.num_train_samples : 0.0;
  report.samples_per_second =
      report.train_seconds > 0 ? static_cast<double>(report.num_train_samples - carried_samples) / report.train_seconds : 0.0;
}

void Trainer::test_pass(BatchSource& test, int64_t epoch, const ProgressCallback& progress, EpochReport& report) {
  const torch::TensorOptions counter = torch::TensorOptions().device(config_.device);
  const bool labeled = test.labeled();
  const Stopwatch test_time;
  test.start_epoch(epoch);
  torch::Tensor num_correct = torch::zeros({}, counter.dtype(torch::kLong));
  for (int64_t batch_idx = 1;; ++batch_idx) {
    const Stopwatch wait_time;
    std::optional<TensorBatch> batch = test.next();
    report.test_data_wait_seconds += wait_time.seconds();
    if (!batch) break;
    // The padding (repeats of the first samples, so that every rank has a share) is not scored.
    const int64_t real = batch->labels.size(0) - batch->num_padding;
    const torch::Tensor logits = predict(batch->images.narrow(0, 0, real));  // (real,classes)
    if (labeled) {
      check_labels(batch->labels.narrow(0, 0, real), model_->fc2->weight.size(0), "test", epoch, batch_idx);
      const torch::Tensor targets = batch->labels.narrow(0, 0, real).to(config_.device, /*non_blocking=*/true);
      num_correct += logits.argmax(1).eq(targets).sum();
    }
    report.num_test_samples += real;
    if (progress) progress({Phase::kTest, epoch, batch_idx, test.num_batches()});
  }
  int64_t correct = num_correct.item<int64_t>();
  if (group_) {
    const std::vector<double> totals =
        group_->sum({static_cast<double>(correct), static_cast<double>(report.num_test_samples)});
    correct = static_cast<int64_t>(totals[0]);
    report.num_test_samples = static_cast<int64_t>(totals[1]);
  }
  report.test_seconds = test_time.seconds();
  if (labeled && report.num_test_samples > 0) {
    report.accuracy = static_cast<double>(correct) / static_cast<double>(report.num_test_samples);
  }
}

RunReport describe_training_run(const std::string& train_file, const std::string& test_file,
                                const TrainerOptions& requested, const TrainerConfig& config) {
  RunReport report;
  report.train_file = train_file;
  report.test_file = test_file;
  report.num_threads = at::get_num_threads();
  report.learning_rate = config.learning_rate;
  report.requested_precision = to_string(requested.precision);
  report.precision = to_string(config.precision);
  report.requested_device = to_string(requested.device);
  report.device = config.device.str();
  report.channels_last = config.channels_last;
  report.cpu_model = read_cpuinfo().model;
  report.num_cpus = num_usable_cpus();
  report.torch_version = TORCH_VERSION;
  return report;
}

}  // namespace feeder
