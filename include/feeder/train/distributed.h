#pragma once

// Data-parallel training on LibTorch's own distributed engine, c10d: a TCPStore for the
// rendezvous and ProcessGroupGloo for the collectives, the same pieces torch.distributed uses
// (init_process_group("gloo") with torchrun's environment).
//
// Threads: a ProcessGroup and a GradientAverager are driven by the one training thread; Gloo runs
// its collectives on threads of its own.
// Ownership: a GradientAverager borrows its ProcessGroup, which must outlive it.

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace c10d {
class Store;
class ProcessGroupGloo;
class Work;
}  // namespace c10d

namespace feeder {

struct DistributedOptions {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;        // rank among the processes of this machine
  int local_world_size = 1;  // processes on this machine
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // The address this process's Gloo connections use; empty: the master's when it is a loopback
  // address, else the one the host name resolves to.
  std::string local_addr;
  // How long the rendezvous waits for every rank, and any collective for the others: a rank that
  // died or never came ends every other rank with an error after this long at most.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  // torchrun's agent already serves the store at master_addr:master_port and says so with
  // TORCHELASTIC_USE_AGENT_STORE=True (torch 1.13 for its default static rendezvous, torch 2.x by
  // default). Then every rank, rank 0 too, connects to it as a client, and every key goes under
  // "/worker/attempt_<restart_count>" (TORCHELASTIC_RESTART_COUNT), as torch.distributed's env://
  // rendezvous does: feeder's keys never meet the agent's, nor a restarted attempt those of the one
  // before.
  bool use_agent_store = false;
  int restart_count = 0;
};

// torchrun's variables: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// and TORCHELASTIC_USE_AGENT_STORE ("True": use_agent_store, as torch.distributed reads it) with
// TORCHELASTIC_RESTART_COUNT. nullopt when WORLD_SIZE is not set; OptionsError naming the variable
// when one is malformed or inconsistent (RANK outside 0..WORLD_SIZE-1, a port outside 1..65535, the
// agent's store without a restart count).
std::optional<DistributedOptions> distributed_from_environment();

// A TCP port free on 127.0.0.1 now (bound to port 0, read back, closed), as torchrun --standalone
// picks one. Another process may take it before it is used; the rendezvous then fails clearly.
int free_loopback_port();

// Checks the options (ranks, port, timeout); OptionsError naming the first problem.
void check_distributed_options(const DistributedOptions& options);

// One process's membership of the group: joins at construction (rank 0 serves the store at
// master_addr:master_port and the others connect to it; with use_agent_store, all connect to
// torchrun's), leaves at destruction. Errors (a master that
// never comes up, a rank that dies, a collective past the timeout) are DistributedError naming
// this rank and the cause.
class ProcessGroup {
 public:
  explicit ProcessGroup(const DistributedOptions& options);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }
  const DistributedOptions& options() const { return options_; }

  // In place: every rank ends with root's values.
  void broadcast(std::vector<torch::Tensor>& tensors, int root = 0);
  // In place: every rank ends with the sum over ranks (the same bits on every rank).
  void allreduce_sum(torch::Tensor& tensor);
  // Each value summed over the ranks (as doubles: counts below 2^53 stay exact). For run totals.
  std::vector<double> sum(const std::vector<double>& values);
  // Starts an in-place sum over ranks; wait() for it with wait_for().
  c10::intrusive_ptr<c10d::Work> allreduce_sum_async(torch::Tensor& tensor);
  void wait_for(const c10::intrusive_ptr<c10d::Work>& work);

  // Every rank passes the same list of (name, value) it must agree on (batch size, dataset
  // fingerprint...). Throws DistributedError on every rank, naming the setting and the ranks'
  // values, when any rank's value differs from rank 0's.
  void check_same(const std::vector<std::pair<std::string, std::string>>& settings);

  void barrier();

 private:
  [[noreturn]] void fail(const std::string& during, const std::exception& error) const;

  DistributedOptions options_;
  int check_calls_ = 0;  // check_same() calls so far
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

// Averages gradients over the ranks after backward, as DistributedDataParallel does: gradients are
// copied into flat buckets of about `bucket_bytes` (parameters taken in reverse order, the order
// backward produces their gradients), and each bucket's allreduce starts as soon as its last
// gradient is ready, while backward goes on with the layers before it. finish() waits for them and
// writes the averages back. bucket_bytes 0 gives one bucket per parameter (one allreduce each),
// `overlap` false starts every allreduce after backward.
//
// One step, one backward:
//
//   optimizer.zero_grad();
//   loss.backward();
//   averager.finish();  // every .grad: the mean over ranks of the ranks' .grad
//   optimizer.step();
//
// Gradient accumulation, with DistributedDataParallel's no_sync() semantics: k micro-batches per
// step on W ranks give the gradients of one rank with the k*W micro-batches (to rounding), when
// every micro-batch's loss is scaled the same way (e.g. divided by k here, by k*W on one rank).
// Every backward but the step's last runs under no_sync(): autograd accumulates into .grad locally
// and nothing is communicated; the last backward sends each parameter's accumulated gradient (its
// .grad plus the new part) as it is produced:
//
//   optimizer.zero_grad();
//   for (int m = 0; m < k; ++m) {
//     std::optional<GradientAverager::NoSync> local;
//     if (m + 1 < k) local.emplace(averager.no_sync());
//     (loss(m) / k).backward();
//   }
//   averager.finish();
//   optimizer.step();
//
// finish() after each micro-batch's backward (without zero_grad in between) is correct too, with
// one round of communication per micro-batch: .grad then holds the mean so far, which the next
// finish() carries over. What is refused is a second backward that reaches a parameter before
// finish() without no_sync() around the first: its allreduce may already have left with the first
// part only. finish() then throws DistributedError ("rank R: GradientAverager: a second backward
// ...") after the step's collectives have completed, so the ranks stay paired and the averager can
// be used again; the .grad it leaves must not be stepped on. Without overlap there are no hooks and
// finish() sends .grad as it is, so any number of backwards before it accumulate correctly.
class GradientAverager {
 public:
  static constexpr int64_t kDefaultBucketBytes = 256 * 1024;

  GradientAverager(ProcessGroup& group, std::vector<torch::Tensor> parameters,
                   int64_t bucket_bytes = kDefaultBucketBytes, bool overlap = true);
  ~GradientAverager();
  GradientAverager(const GradientAverager&) = delete;
  GradientAverager& operator=(const GradientAverager&) = delete;

  // While one is alive, backward only accumulates into .grad on this rank (no hook copies or
  // communicates). Returned by no_sync(); the averager must outlive it. Guards nest.
  class [[nodiscard]] NoSync {
   public:
    NoSync(NoSync&& other) noexcept : averager_(std::exchange(other.averager_, nullptr)) {}
    NoSync& operator=(NoSync&&) = delete;
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    ~NoSync() {
      if (averager_) --averager_->no_sync_depth_;
    }

   private:
    friend class GradientAverager;
    explicit NoSync(GradientAverager& averager) : averager_(&averager) { ++averager_->no_sync_depth_; }
    GradientAverager* averager_;
  };

  int64_t num_buckets() const { return static_cast<int64_t>(buckets_.size()); }

  // The backwards run while the returned guard lives are not a step's last micro-step: their
  // gradients stay in .grad, to be sent with the last one's.
  NoSync no_sync() { return NoSync(*this); }

  // Before a step's first backward: forgets the progress of a step that was not finished (after an
  // exception). finish() leaves the averager ready for the next step by itself.
  void start_step();
  // After the step's last backward: every parameter's gradient is the mean over ranks of the
  // ranks' accumulated .grad. DistributedError when a second backward reached a parameter outside
  // no_sync() (see above).
  void finish();

 private:
  struct Bucket {
    torch::Tensor flat;              // the bucket's gradients, flattened, in one fp32 tensor
    std::vector<size_t> members;     // indices into parameters_
    std::vector<int64_t> offsets;    // each member's first element in `flat`
    int64_t ready = 0;               // members whose gradient is in `flat` this step
    c10::intrusive_ptr<c10d::Work> work;
  };
  void gradient_ready(size_t parameter_idx, const torch::Tensor& grad);
  // Starts the allreduce of every complete bucket after the last one started, in bucket order.
  void launch_ready_buckets();

  ProcessGroup& group_;
  std::vector<torch::Tensor> parameters_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> slot_of_;  // per parameter: (bucket, member)
  bool overlap_ = true;
  std::vector<uint8_t> seen_;  // per parameter: its gradient is in its bucket this step
  size_t next_to_launch_ = 0;  // buckets before this one have their allreduce started
  int no_sync_depth_ = 0;      // live NoSync guards: hooks leave gradients to autograd
  // The lowest-numbered parameter a second backward reached this step outside no_sync(); finish()
  // throws naming it.
  std::optional<size_t> repeated_parameter_;
  std::vector<unsigned> hooks_;  // the gradient hooks, removed at destruction
};

}  // namespace feeder
