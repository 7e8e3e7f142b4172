#pragma once

// Starting and waiting for the ablation's row processes (posix_spawn), and reading their logs.

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "feeder/stopwatch.h"

namespace feeder::bench {

struct Child {
  pid_t pid = -1;  // -1: it did not start (the reason is in its log)
  Stopwatch running;
};

struct ChildResult {
  int exit_code = -1;  // 128 + signal when killed
  double seconds = 0;
};

// Starts argv[0] with `argv`, stdout and stderr into `log`, stdin from /dev/null, and
// OMP_NUM_THREADS (and the BLAS equivalents) set to `num_threads`: LibTorch must start with its
// thread count, not change it later. `extra_env` ("NAME=value") entries replace variables of the
// same name.
Child start_child(const std::vector<std::string>& argv, const std::filesystem::path& log, int num_threads,
                  const std::vector<std::string>& extra_env = {});
ChildResult wait_child(const Child& child);
ChildResult run_child(const std::vector<std::string>& argv, const std::filesystem::path& log, int num_threads);

// The last non-empty line of a log (at most 200 characters), to say why a row failed.
std::string last_line(const std::filesystem::path& log);

// The executable `name` on PATH, if any.
std::optional<std::filesystem::path> find_program(std::string_view name);

}  // namespace feeder::bench
