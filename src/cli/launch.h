#pragma once

// `feeder train --nproc-per-node N`: starts N ranks of this program on this machine, as torchrun
// does, with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT) in their environment.

#include <chrono>
#include <optional>
#include <string>

namespace feeder::cli {

struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  std::optional<int> master_port;    // default: a free port when nnodes is 1, else 29500
  std::optional<int> threads_per_rank;  // default: the usable CPUs divided among the local ranks
  // After one rank fails, how long the others get to end on their own before they are killed.
  std::chrono::milliseconds grace{std::chrono::seconds(10)};
};

// Set in the environment of the ranks it starts, so that they train instead of launching again.
inline constexpr const char* kLaunchedRankVariable = "FEEDER_LAUNCHED_RANK";

// True in a process this launcher started.
bool is_launched_rank();

// Re-executes this program (/proc/self/exe, same arguments) once per local rank and waits for them.
// Each rank's environment is this process's with torchrun's variables set for it and
// TORCHELASTIC_USE_AGENT_STORE left out (its rank 0 serves the store); it is built before fork, so
// the forked child only calls async-signal-safe functions before execve.
// When a rank fails, the others are stopped (SIGTERM, then SIGKILL after `grace`), and the result
// names the first rank that failed and how. A rank whose launcher dies is killed too. Returns the
// exit status for the launcher: 0 when every rank succeeded.
int launch_local_ranks(const LaunchOptions& options);

}  // namespace feeder::cli
