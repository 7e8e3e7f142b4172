#pragma once

// Start-up of feeder's own executables: they own their process, so they apply the settings the
// library recommends (feeder/system/runtime.h) before LibTorch runs anything. Never part of a
// library: a library inside someone else's program must leave the process alone.

#include <string>
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

}  // namespace feeder::cli
