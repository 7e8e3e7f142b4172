#include "feeder/train/distributed.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "feeder/error.h"
#include "torch/libtorch_compat.h"
#include "train/detail/error_text.h"

namespace feeder {
namespace {

// A torchrun variable as an integer: `fallback` when unset, OptionsError when malformed.
int env_int(const char* name, std::optional<int> fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) {
    if (fallback) return *fallback;
    throw OptionsError(std::string(name) + " is not set (WORLD_SIZE is: set both, as torchrun does)");
  }
  int value = 0;
  const std::string_view view(text);
  const auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
  if (error != std::errc() || end != view.data() + view.size()) {
    throw OptionsError(std::string(name) + "='" + text + "' is not an integer");
  }
  return value;
}

std::vector<uint8_t> bytes_of(const std::string& text) { return std::vector<uint8_t>(text.begin(), text.end()); }

}  // namespace

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw OptionsError(std::string("cannot open a socket to find a free port: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  const int bind_errno = errno;
  ::close(fd);
  if (!ok) throw OptionsError(std::string("cannot find a free port on 127.0.0.1: ") + std::strerror(bind_errno));
  return ntohs(address.sin_port);
}

std::optional<DistributedOptions> distributed_from_environment() {
  if (!std::getenv("WORLD_SIZE")) return std::nullopt;
  DistributedOptions options;
  options.world_size = env_int("WORLD_SIZE", std::nullopt);
  options.rank = env_int("RANK", std::nullopt);
  options.local_rank = env_int("LOCAL_RANK", options.rank);
  options.local_world_size = env_int("LOCAL_WORLD_SIZE", options.world_size);
  if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) options.master_addr = addr;
  options.master_port = env_int("MASTER_PORT", options.master_port);
  // torch.distributed compares with str(True): any other value leaves rank 0 serving the store.
  if (const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE"); agent && std::string_view(agent) == "True") {
    if (const char* count = std::getenv("TORCHELASTIC_RESTART_COUNT"); !count || !*count) {
      throw OptionsError("TORCHELASTIC_RESTART_COUNT is not set (TORCHELASTIC_USE_AGENT_STORE=True is: torchrun sets both)");
    }
    options.use_agent_store = true;
    options.restart_count = env_int("TORCHELASTIC_RESTART_COUNT", std::nullopt);
  }
  check_distributed_options(options);
  return options;
}

void check_distributed_options(const DistributedOptions& options) {
  if (options.world_size < 1) throw OptionsError("world size must be at least 1, got " + std::to_string(options.world_size));
  if (options.rank < 0 || options.rank >= options.world_size) {
    throw OptionsError("rank must be in 0.." + std::to_string(options.world_size - 1) + " for world size " +
                       std::to_string(options.world_size) + ", got " + std::to_string(options.rank));
  }
  if (options.local_world_size < 1 || options.local_rank < 0 || options.local_rank >= options.local_world_size) {
    throw OptionsError("local rank " + std::to_string(options.local_rank) + " is not in 0.." +
                       std::to_string(options.local_world_size - 1));
  }
  if (options.master_port < 1 || options.master_port > 65535) {
    throw OptionsError("master port must be in 1..65535, got " + std::to_string(options.master_port));
  }
  if (options.master_addr.empty()) throw OptionsError("master address is empty");
  if (options.timeout.count() <= 0) throw OptionsError("the distributed timeout must be positive");
  if (options.restart_count < 0) {
    throw OptionsError("the restart count must not be negative, got " + std::to_string(options.restart_count));
  }
}

ProcessGroup::ProcessGroup(const DistributedOptions& options) : options_(options) {
  check_distributed_options(options_);
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(options_.master_port);
    // With torchrun's store every rank is a client (rank 0 would fail to bind its port).
    store_options.isServer = options_.rank == 0 && !options_.use_agent_store;
    store_options.numWorkers = static_cast<size_t>(options_.world_size);
    store_options.waitWorkers = true;  // a serving rank 0 waits for every rank to connect, within the timeout
    store_options.timeout = options_.timeout;
    torch_compat::use_classic_tcp_store(store_options);
    store_ = c10::make_intrusive<c10d::TCPStore>(options_.master_addr, store_options);
    if (options_.use_agent_store) {
      // The prefix torch.distributed's env:// rendezvous puts on the agent's store.
      store_ = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(options_.restart_count),
                                                      store_);
    }
    auto gloo = c10d::ProcessGroupGloo::Options::create();
    gloo->timeout = options_.timeout;
    // Gloo listens on local_addr; by default, on one machine (a loopback master) on the master's
    // own address, else on the address the host name resolves to (as torch.distributed does).
    const bool loopback = options_.master_addr.starts_with("127.") || options_.master_addr == "localhost";
    const std::string device_addr = !options_.local_addr.empty() ? options_.local_addr
                                    : loopback                   ? options_.master_addr
                                                                 : "";
    gloo->devices.push_back(device_addr.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                                                : c10d::ProcessGroupGloo::createDeviceForHostname(device_addr));
    group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>("gloo", store_),
                                                         options_.rank, options_.world_size, gloo);
  } catch (const std::exception& error) {
    fail("joining the group at " + options_.master_addr + ":" + std::to_string(options_.master_port), error);
  }
}

ProcessGroup::~ProcessGroup() = default;

void ProcessGroup::fail(const std::string& during, const std::exception& error) const {
  char context[96];
  std::snprintf(context, sizeof(context), " (world size %d, timeout %.3g s): ", options_.world_size,
                static_cast<double>(options_.timeout.count()) / 1000.0);
  throw DistributedError("rank " + std::to_string(options_.rank) + ": " + during + context + detail::error_text(error));
}

void ProcessGroup::broadcast(std::vector<torch::Tensor>& tensors, int root) {
  if (tensors.empty()) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> flat_parts;
  for (const torch::Tensor& tensor : tensors) flat_parts.push_back(tensor.reshape(-1));
  std::vector<torch::Tensor> flat{torch::cat(flat_parts)};
  try {
    c10d::BroadcastOptions broadcast_options;
    broadcast_options.rootRank = root;
    group_->broadcast(flat, broadcast_options)->wait(options_.timeout);
  } catch (const std::exception& error) {
    fail("broadcasting from rank " + std::to_string(root), error);
  }
  int64_t offset = 0;
  for (torch::Tensor& tensor : tensors) {
    tensor.copy_(flat[0].narrow(0, offset, tensor.numel()).view(tensor.sizes()));
    offset += tensor.numel();
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::allreduce_sum_async(torch::Tensor& tensor) {
  try {
    std::vector<torch::Tensor> tensors{tensor};
    return group_->allreduce(tensors);
  } catch (const std::exception& error) {
    fail("starting an allreduce", error);
  }
}

void ProcessGroup::wait_for(const c10::intrusive_ptr<c10d::Work>& work) {
  try {
    work->wait(options_.timeout);
  } catch (const std::exception& error) {
    fail("waiting for an allreduce (another rank stopped or is too slow)", error);
  }
}

void ProcessGroup::allreduce_sum(torch::Tensor& tensor) { wait_for(allreduce_sum_async(tensor)); }

std::vector<double> ProcessGroup::sum(const std::vector<double>& values) {
  torch::Tensor totals = torch::tensor(values, torch::kDouble);
  allreduce_sum(totals);
  return std::vector<double>(totals.data_ptr<double>(), totals.data_ptr<double>() + totals.numel());
}

void ProcessGroup::barrier() {
  try {
    group_->barrier()->wait(options_.timeout);
  } catch (const std::exception& error) {
    fail("waiting for every rank at a barrier", error);
  }
}

void ProcessGroup::check_same(const std::vector<std::pair<std::string, std::string>>& settings) {
  // Each rank publishes its values under its own key and reads everyone's, so every rank finds the
  // same differences and reports them; the store answers within the timeout or fails.
  std::string mine;
  for (const auto& [name, value] : settings) mine += name + "=" + value + "\n";
  std::vector<std::string> all(static_cast<size_t>(options_.world_size));
  // Keys of their own for each call: every rank makes the same calls in the same order.
  const std::string prefix = "feeder/settings/" + std::to_string(check_calls_++) + "/";
  try {
    store_->set(prefix + std::to_string(options_.rank), bytes_of(mine));
    for (int r = 0; r < options_.world_size; ++r) {
      const std::vector<uint8_t> bytes = store_->get(prefix + std::to_string(r));
      all[static_cast<size_t>(r)].assign(bytes.begin(), bytes.end());
    }
    // Rank 0 serves the store: it leaves only when every rank has read it.
    store_->add(prefix + "read", 1);
    if (options_.rank == 0) {
      const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
      while (store_->add(prefix + "read", 0) < options_.world_size && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  } catch (const std::exception& error) {
    fail("comparing settings with the other ranks", error);
  }
  const auto parse = [](const std::string& text) {
    std::vector<std::pair<std::string, std::string>> values;
    size_t begin = 0;
    while (begin < text.size()) {
      const size_t end = text.find('\n', begin);
      const std::string line = text.substr(begin, end - begin);
      const size_t eq = line.find('=');
      values.emplace_back(line.substr(0, eq), eq == std::string::npos ? "" : line.substr(eq + 1));
      begin = end == std::string::npos ? text.size() : end + 1;
    }
    return values;
  };
  const auto reference = parse(all[0]);
  std::string differences;
  for (int r = 1; r < options_.world_size; ++r) {
    const auto values = parse(all[static_cast<size_t>(r)]);
    for (size_t i = 0; i < std::max(values.size(), reference.size()); ++i) {
      const std::string name = i < reference.size() ? reference[i].first : values[i].first;
      const std::string expected = i < reference.size() ? reference[i].second : "(none)";
      const std::string found = i < values.size() ? values[i].second : "(none)";
      if (expected != found || (i < values.size() && values[i].first != name)) {
        differences += (differences.empty() ? "" : "; ") + name + ": rank 0 has " + expected + ", rank " +
                       std::to_string(r) + " has " + found;
      }
    }
  }
  if (!differences.empty()) {
    throw DistributedError("rank " + std::to_string(options_.rank) + ": the ranks were started with different settings: " +
                           differences);
  }
}

GradientAverager::GradientAverager(ProcessGroup& group, std::vector<torch::Tensor> parameters, int64_t bucket_bytes,
                                   bool overlap)
    : group_(group), parameters_(std::move(parameters)), overlap_(overlap) {
  if (bucket_bytes < 0) throw OptionsError("bucket size must not be negative, got " + std::to_string(bucket_bytes));
  slot_of_.resize(parameters_.size());
  seen_.assign(parameters_.size(), 0);
  // Reverse order: backward produces the last layers' gradients first, so the first bucket fills
  // first and its allreduce overlaps the rest of backward.
  int64_t bucket_elements = 0;
  for (size_t k = parameters_.size(); k-- > 0;) {
    const torch::Tensor& parameter = parameters_[k];
    if (!parameter.requires_grad()) continue;
    if (parameter.scalar_type() != torch::kFloat) {
      throw OptionsError("GradientAverager: parameters must be float32 (found " +
                         std::string(c10::toString(parameter.scalar_type())) + ")");
    }
    // A bucket closes once it holds bucket_bytes; with 0, every parameter starts one of its own.
    if (buckets_.empty() || bucket_elements * 4 >= bucket_bytes) {
      buckets_.emplace_back();
      bucket_elements = 0;
    }
    Bucket& bucket = buckets_.back();
    slot_of_[k] = {buckets_.size() - 1, bucket.members.size()};
    bucket.members.push_back(k);
    bucket.offsets.push_back(bucket_elements);
    bucket_elements += parameter.numel();
  }
  for (Bucket& bucket : buckets_) {
    int64_t elements = 0;
    for (const size_t k : bucket.members) elements += parameters_[k].numel();
    bucket.flat = torch::zeros({elements}, torch::TensorOptions().dtype(torch::kFloat));
  }
  if (overlap_) {
    for (size_t k = 0; k < parameters_.size(); ++k) {
      if (!parameters_[k].requires_grad()) continue;
      hooks_.push_back(parameters_[k].register_hook([this, k](const torch::Tensor& grad) { gradient_ready(k, grad); }));
    }
  }
}

GradientAverager::~GradientAverager() {
  if (!overlap_) return;
  size_t hook = 0;
  for (size_t k = 0; k < parameters_.size(); ++k) {
    if (parameters_[k].requires_grad()) parameters_[k].remove_hook(hooks_[hook++]);
  }
}

void GradientAverager::start_step() {
  std::fill(seen_.begin(), seen_.end(), 0);
  for (Bucket& bucket : buckets_) {
    bucket.ready = 0;
    bucket.work.reset();
  }
  next_to_launch_ = 0;
  repeated_parameter_.reset();
}

// Runs before autograd adds `grad` to the parameter's .grad, so .grad still holds what the step's
// earlier backwards (under no_sync) accumulated: the bucket gets their sum with this backward's part.
void GradientAverager::gradient_ready(size_t parameter_idx, const torch::Tensor& grad) {
  if (no_sync_depth_ > 0) return;  // autograd accumulates it into .grad; sent with the last backward
  if (seen_[parameter_idx]) {
    // Its bucket may have been sent already: this part would be lost. finish() refuses the step.
    repeated_parameter_ = std::min(parameter_idx, repeated_parameter_.value_or(parameter_idx));
    return;
  }
  seen_[parameter_idx] = 1;
  const auto [bucket_idx, member] = slot_of_[parameter_idx];
  Bucket& bucket = buckets_[bucket_idx];
  const torch::Tensor& parameter = parameters_[parameter_idx];
  torch::NoGradGuard no_grad;
  torch::Tensor slot = bucket.flat.narrow(0, bucket.offsets[member], parameter.numel()).view(parameter.sizes());
  const torch::Tensor& accumulated = parameter.grad();
  if (accumulated.defined()) {
    torch::add_out(slot, accumulated, grad);  // as autograd's accumulation will: .grad + new part
  } else {
    slot.copy_(grad);
  }
  ++bucket.ready;
  launch_ready_buckets();
}

void GradientAverager::launch_ready_buckets() {
  // In bucket order on every rank, so that the ranks' collectives pair up.
  while (next_to_launch_ < buckets_.size() &&
         buckets_[next_to_launch_].ready == static_cast<int64_t>(buckets_[next_to_launch_].members.size())) {
    Bucket& bucket = buckets_[next_to_launch_++];
    bucket.work = group_.allreduce_sum_async(bucket.flat);
  }
}

void GradientAverager::finish() {
  torch::NoGradGuard no_grad;
  // Gradients that no hook delivered (without overlap, under no_sync, or parameters the last
  // backward did not reach): taken from .grad, which holds the step's accumulated gradient; zeros
  // when there is none.
  for (size_t k = 0; k < parameters_.size(); ++k) {
    if (!parameters_[k].requires_grad() || seen_[k]) continue;
    seen_[k] = 1;
    const auto [bucket_idx, member] = slot_of_[k];
    Bucket& bucket = buckets_[bucket_idx];
    torch::Tensor slice = bucket.flat.narrow(0, bucket.offsets[member], parameters_[k].numel());
    const torch::Tensor& grad = parameters_[k].grad();
    if (grad.defined()) {
      slice.view(parameters_[k].sizes()).copy_(grad);
    } else {
      slice.zero_();
    }
    ++bucket.ready;
  }
  launch_ready_buckets();
  // Every bucket's allreduce is waited for, even when the step is refused below: the ranks'
  // collectives stay paired and no allreduce still writes into a bucket of the next step.
  const double scale = 1.0 / group_.world_size();
  for (Bucket& bucket : buckets_) {
    group_.wait_for(bucket.work);
    bucket.flat.mul_(scale);
    for (size_t m = 0; m < bucket.members.size(); ++m) {
      torch::Tensor& parameter = parameters_[bucket.members[m]];
      const torch::Tensor averaged = bucket.flat.narrow(0, bucket.offsets[m], parameter.numel()).view(parameter.sizes());
      if (parameter.grad().defined()) {
        parameter.mutable_grad().copy_(averaged);
      } else {
        parameter.mutable_grad() = averaged.clone(at::MemoryFormat::Preserve);
      }
    }
  }
  const std::optional<size_t> repeated = repeated_parameter_;
  start_step();  // ready for the next step, also after the error below
  if (repeated) {
    throw DistributedError("rank " + std::to_string(group_.rank()) + ": GradientAverager: a second backward reached parameter " +
                           std::to_string(*repeated) +
                           " before finish(); run every backward but the step's last under no_sync(), or call "
                           "finish() after each backward");
  }
}

}  // namespace feeder
