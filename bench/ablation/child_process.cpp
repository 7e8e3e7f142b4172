#include "ablation/child_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "feeder/io/file.h"

extern char** environ;

namespace feeder::bench {
namespace {

// This process's environment with `set` ("NAME=value") replacing variables of the same name.
std::vector<std::string> environment_with(const std::vector<std::string>& set) {
  std::vector<std::string> env = set;
  const auto is_set = [&](std::string_view entry) {
    const std::string_view name = entry.substr(0, entry.find('=') + 1);
    return std::any_of(set.begin(), set.end(), [&](const std::string& value) { return value.starts_with(name); });
  };
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!is_set(*entry)) env.emplace_back(*entry);
  }
  return env;
}

// Pointers into `strings`, null-terminated, as exec wants them; valid while `strings` lives.
std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const std::string& text : strings) pointers.push_back(const_cast<char*>(text.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace

Child start_child(const std::vector<std::string>& argv, const std::filesystem::path& log, int num_threads,
                  const std::vector<std::string>& extra_env) {
  std::vector<std::string> set;
  for (const char* name : {"OMP_NUM_THREADS=", "MKL_NUM_THREADS=", "OPENBLAS_NUM_THREADS="}) {
    set.push_back(name + std::to_string(num_threads));
  }
  set.insert(set.end(), extra_env.begin(), extra_env.end());
  const std::vector<std::string> env = environment_with(set);
  std::vector<char*> argv_ptrs = c_strings(argv);
  std::vector<char*> env_ptrs = c_strings(env);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  Child child;
  const int error = posix_spawn(&child.pid, argv[0].c_str(), &actions, nullptr, argv_ptrs.data(), env_ptrs.data());
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    child.pid = -1;
    write_file_atomically(log, "cannot start " + argv[0] + ": " + std::strerror(error) + "\n");
  }
  return child;
}

ChildResult wait_child(const Child& child) {
  ChildResult result;
  if (child.pid < 0) return result;
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0) {
    if (errno != EINTR) return result;
  }
  result.seconds = child.running.seconds();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  return result;
}

ChildResult run_child(const std::vector<std::string>& argv, const std::filesystem::path& log, int num_threads) {
  return wait_child(start_child(argv, log, num_threads));
}

std::string last_line(const std::filesystem::path& log) {
  std::ifstream in(log, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  std::string text = contents.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const size_t start = text.find_last_of('\n');
  std::string line = start == std::string::npos ? text : text.substr(start + 1);
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  return line;
}

std::optional<std::filesystem::path> find_program(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    const size_t colon = dirs.find(':');
    const std::filesystem::path candidate = std::filesystem::path(dirs.substr(0, colon)) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

}  // namespace feeder::bench
