#pragma once

// Start-up of feeder's own executables: they own their process, so they apply the settings the
// library recommends (feeder/system/runtime.h) before LibTorch runs anything. Only executables link
// feeder_app, never feeder's libraries: a library inside someone else's program must leave the
// process alone.

#include <string>
#include <utility>
#include <vector>

#include "feeder/system/runtime.h"

namespace feeder::cli {

// Applies `settings` to this process. When OMP_NUM_THREADS differs from settings.omp_num_threads it
// sets the variable and re-executes the program (/proc/self/exe with the same arguments, read from
// /proc/self/cmdline), so this returns only in the process that already runs with the right value,
// or when re-executing fails (a warning on stderr; the run goes on with the thread count it has).
// Then sets glibc's malloc thresholds (a warning on stderr when glibc refuses them).
// Call first thing in main(), while the process has one thread: it changes the environment.
void apply_process_settings(const ProcessSettings& settings);

// This process's arguments, read from /proc/self/cmdline; empty when it cannot be read.
std::vector<std::string> own_arguments();
// Replaces this process with /proc/self/exe run with `arguments` (the program name first); returns
// only when that fails, with errno set. The caller flushes its output first.
void exec_self(const std::vector<std::string>& arguments);

// This process's environment ("NAME=value" each), with the variables of `set` given those values
// (replaced or added) and those named in `removed` left out. Reads `environ`: call it while no
// other thread changes the environment.
std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& set,
                                          const std::vector<std::string>& removed = {});

// A program's arguments and environment made ready for execve before fork(): the strings and the
// null-terminated pointer arrays over them. A child forked from a multithreaded process may only
// call async-signal-safe functions until it execs (no allocation, no setenv: another thread may
// have held malloc's or the environment's lock at the fork), so everything it needs is built here,
// in the parent. Neither copied nor moved, since the arrays point into the strings.
class PreparedExec {
 public:
  PreparedExec(std::vector<std::string> arguments, std::vector<std::string> environment);
  PreparedExec(const PreparedExec&) = delete;
  PreparedExec& operator=(const PreparedExec&) = delete;

  char* const* argv() const { return argv_.data(); }
  char* const* envp() const { return envp_.data(); }

 private:
  std::vector<std::string> arguments_;    // the program name first
  std::vector<std::string> environment_;  // "NAME=value" each
  std::vector<char*> argv_;               // over arguments_, then nullptr
  std::vector<char*> envp_;               // over environment_, then nullptr
};

// Replaces this process with /proc/self/exe run with `program`'s arguments and environment. Calls
// only execve, which is async-signal-safe: a child forked from a multithreaded process may call
// it. Returns only when that fails, with errno set.
void exec_self(const PreparedExec& program) noexcept;

}  // namespace feeder::cli
