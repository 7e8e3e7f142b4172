#include "cli/launch.h"
#include "app/process_setup.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "feeder/error.h"
#include "feeder/system/runtime.h"
#include "feeder/train/distributed.h"

namespace feeder::cli {
namespace {

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                                  strsignal(WTERMSIG(status)) + ")";
  return "ended with wait status " + std::to_string(status);
}

// `prefix` then `error` in decimal and a newline on stderr, with write(2) only: safe in a child
// forked from a multithreaded process, where neither strerror nor stdio may be used.
void write_errno_message(const std::string& prefix, int error) noexcept {
  char digits[16];
  size_t num_digits = 0;
  unsigned value = error < 0 ? 0u : static_cast<unsigned>(error);
  do {
    digits[sizeof(digits) - 1 - num_digits++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && num_digits < sizeof(digits) - 1);
  // Nothing to do when stderr itself fails.
  if (::write(STDERR_FILENO, prefix.data(), prefix.size()) < 0) return;
  if (::write(STDERR_FILENO, digits + sizeof(digits) - num_digits, num_digits) < 0) return;
  if (::write(STDERR_FILENO, "\n", 1) < 0) return;
}

}  // namespace

bool is_launched_rank() { return std::getenv(kLaunchedRankVariable) != nullptr; }

namespace {

void check_launch_options(const LaunchOptions& options) {
  if (options.nproc_per_node < 1) throw OptionsError("--nproc-per-node must be at least 1");
  if (options.nnodes < 1) throw OptionsError("--nnodes must be at least 1");
  if (options.node_rank < 0 || options.node_rank >= options.nnodes) {
    throw OptionsError("--node-rank must be in 0.." + std::to_string(options.nnodes - 1) + ", got " +
                       std::to_string(options.node_rank));
  }
}

// This machine's ranks as programs to execute, built before any fork: the launcher may have
// threads by now, and a forked child may only call async-signal-safe functions.
struct RankPrograms {
  std::vector<std::unique_ptr<PreparedExec>> programs;
  std::vector<std::string> exec_failures;  // "feeder: rank R: cannot start, execve failed: errno "
};

RankPrograms prepare_ranks(const LaunchOptions& options) {
  const int port = options.master_port ? *options.master_port : options.nnodes == 1 ? free_loopback_port() : 29500;
  const int world_size = options.nnodes * options.nproc_per_node;
  const int threads =
      options.threads_per_rank ? *options.threads_per_rank : std::max(1, num_usable_cpus() / options.nproc_per_node);
  const std::vector<std::string> arguments = own_arguments();
  if (arguments.empty()) throw OptionsError("cannot read this program's arguments from /proc/self/cmdline");
  RankPrograms prepared;
  for (int local = 0; local < options.nproc_per_node; ++local) {
    const int rank = options.node_rank * options.nproc_per_node + local;
    const std::vector<std::pair<std::string, std::string>> variables = {
        {"RANK", std::to_string(rank)},
        {"WORLD_SIZE", std::to_string(world_size)},
        {"LOCAL_RANK", std::to_string(local)},
        {"LOCAL_WORLD_SIZE", std::to_string(options.nproc_per_node)},
        {"MASTER_ADDR", options.master_addr},
        {"MASTER_PORT", std::to_string(port)},
        {"OMP_NUM_THREADS", std::to_string(threads)},
        {kLaunchedRankVariable, std::to_string(rank)},
    };
    // Rank 0 serves the store at the port chosen here, even when the launcher itself runs under
    // torchrun, whose variable would make every rank a client of a store nobody serves.
    prepared.programs.push_back(
        std::make_unique<PreparedExec>(arguments, environment_with(variables, {"TORCHELASTIC_USE_AGENT_STORE"})));
    prepared.exec_failures.push_back("feeder: rank " + std::to_string(rank) + ": cannot start, execve failed: errno ");
  }
  return prepared;
}

// Forks and executes each rank; their process ids, by local rank.
std::vector<pid_t> start_ranks(const RankPrograms& prepared) {
  std::fflush(nullptr);
  const pid_t launcher = ::getpid();
  std::vector<pid_t> ranks(prepared.programs.size(), -1);
  for (size_t local = 0; local < prepared.programs.size(); ++local) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (const pid_t started : ranks)
        if (started > 0) ::kill(started, SIGKILL);
      throw OptionsError(std::string("cannot start a rank: fork failed: ") + std::strerror(errno));
    }
    if (pid == 0) {
      // Async-signal-safe calls only from here on (prctl, getppid, execve, write, _exit).
      // A rank outlives no launcher: killed with it (the check covers a launcher gone before prctl).
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != launcher) ::_exit(1);
      exec_self(*prepared.programs[local]);
      write_errno_message(prepared.exec_failures[local], errno);
      ::_exit(127);
    }
    ranks[local] = pid;
  }
  return ranks;
}

// Waits for every rank. The first failure stops the others: a rank that lost its peers would
// otherwise wait out its collectives' timeout. Returns the first failure ("" when none).
std::string wait_for_ranks(std::vector<pid_t> ranks, const LaunchOptions& options) {
  size_t running = ranks.size();
  std::string first_failure;
  std::optional<std::chrono::steady_clock::time_point> kill_at;
  while (running > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, kill_at ? WNOHANG : 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (pid == 0) {  // others still running after a failure
      if (std::chrono::steady_clock::now() >= *kill_at) {
        for (const pid_t rank_pid : ranks)
          if (rank_pid > 0) ::kill(rank_pid, SIGKILL);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    for (size_t local = 0; local < ranks.size(); ++local) {
      if (ranks[local] != pid) continue;
      ranks[local] = -1;
      --running;
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && first_failure.empty()) {
        const int rank = options.node_rank * options.nproc_per_node + static_cast<int>(local);
        first_failure = "rank " + std::to_string(rank) + " " + describe_status(status);
        for (const pid_t rank_pid : ranks)
          if (rank_pid > 0) ::kill(rank_pid, SIGTERM);
        kill_at = std::chrono::steady_clock::now() + options.grace;
      }
    }
  }
  return first_failure;
}

}  // namespace

int launch_local_ranks(const LaunchOptions& options) {
  check_launch_options(options);
  const RankPrograms prepared = prepare_ranks(options);
  const std::string first_failure = wait_for_ranks(start_ranks(prepared), options);
  if (!first_failure.empty()) {
    std::fprintf(stderr, "feeder: error: %s; the other ranks were stopped\n", first_failure.c_str());
    return 1;
  }
  return 0;
}

}  // namespace feeder::cli
