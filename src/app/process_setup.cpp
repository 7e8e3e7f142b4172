#include "app/process_setup.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace feeder::cli {
namespace {

// Set in the environment of the re-executed process so that a failure to take effect can never
// turn into an exec loop.
constexpr const char* kReexecMarker = "FEEDER_RUNTIME_REEXEC";

// Re-executes /proc/self/exe with this process's arguments; returns only on failure.
void reexec_self() {
  const std::vector<std::string> arguments = own_arguments();
  if (arguments.empty()) return;
  std::fflush(nullptr);
  exec_self(arguments);
}

// Sets OMP_NUM_THREADS and re-executes when it is not what was asked for.
void ensure_omp_num_threads(std::optional<int> wanted) {
  const bool reexecuted = std::getenv(kReexecMarker) != nullptr;
  ::unsetenv(kReexecMarker);
  if (reexecuted || !wanted || omp_num_threads_from_env() == wanted) return;
  ::setenv("OMP_NUM_THREADS", std::to_string(*wanted).c_str(), 1);
  ::setenv(kReexecMarker, "1", 1);
  reexec_self();
  // Re-executing failed: go on with the thread count OpenMP already has.
  std::fprintf(stderr, "feeder: warning: could not restart with OMP_NUM_THREADS=%d: %s\n", *wanted,
               std::strerror(errno));
  ::unsetenv(kReexecMarker);
}

}  // namespace

std::vector<std::string> own_arguments() {
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  std::vector<std::string> arguments;
  for (size_t begin = 0; begin < raw.size();) {
    const size_t end = raw.find('\0', begin);
    arguments.push_back(raw.substr(begin, end - begin));
    if (end == std::string::npos) break;  // the last argument is NUL-terminated
    begin = end + 1;
  }
  return arguments;
}

void exec_self(const std::vector<std::string>& arguments) {
  std::vector<char*> argv;
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  ::execv("/proc/self/exe", argv.data());
}

std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& set,
                                          const std::vector<std::string>& removed) {
  const auto named = [](const std::string& entry, const std::string& name) {
    return entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 && entry[name.size()] == '=';
  };
  std::vector<std::string> environment;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string text(*entry);
    const bool replaced = std::any_of(set.begin(), set.end(), [&](const auto& variable) { return named(text, variable.first); });
    const bool dropped = std::any_of(removed.begin(), removed.end(), [&](const std::string& name) { return named(text, name); });
    if (!replaced && !dropped) environment.push_back(text);
  }
  for (const auto& [name, value] : set) environment.push_back(name + "=" + value);
  return environment;
}

PreparedExec::PreparedExec(std::vector<std::string> arguments, std::vector<std::string> environment)
    : arguments_(std::move(arguments)), environment_(std::move(environment)) {
  for (std::string& argument : arguments_) argv_.push_back(argument.data());
  argv_.push_back(nullptr);
  for (std::string& variable : environment_) envp_.push_back(variable.data());
  envp_.push_back(nullptr);
}

void exec_self(const PreparedExec& program) noexcept { ::execve("/proc/self/exe", program.argv(), program.envp()); }

void apply_process_settings(const ProcessSettings& settings) {
  ensure_omp_num_threads(settings.omp_num_threads);
  // mallopt returns 0 when glibc rejects a value; training still works, only slower, so warn.
  const auto clamp = [](size_t bytes) { return static_cast<int>(std::min<size_t>(bytes, 1u << 30)); };
  if (::mallopt(M_MMAP_THRESHOLD, clamp(settings.malloc_mmap_threshold_bytes)) == 0 ||
      ::mallopt(M_TRIM_THRESHOLD, clamp(settings.malloc_trim_threshold_bytes)) == 0) {
    std::fprintf(stderr, "feeder: warning: mallopt rejected the malloc thresholds\n");
  }
}

}  // namespace feeder::cli
