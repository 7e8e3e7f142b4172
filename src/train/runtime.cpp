#include "feeder/train/runtime.h"

#include <malloc.h>
#include <sched.h>
#include <unistd.h>

#include <ATen/Context.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace feeder {
namespace {

// Set in the environment of the re-executed process so that a failure to take effect can never
// turn into an exec loop.
constexpr const char* kReexecMarker = "FEEDER_RUNTIME_REEXEC";

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

// Re-executes /proc/self/exe with this process's arguments; returns only on failure.
void reexec_self() {
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  if (raw.empty()) return;
  std::vector<char*> argv;
  for (size_t begin = 0; begin < raw.size();) {
    argv.push_back(raw.data() + begin);
    begin = raw.find('\0', begin);
    if (begin == std::string::npos) break;  // the last argument is NUL-terminated by std::string
    ++begin;
  }
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execv("/proc/self/exe", argv.data());
}

}  // namespace

bool CpuInfo::has_flag(std::string_view flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

CpuInfo parse_cpuinfo(std::string_view text) {
  CpuInfo info;
  bool have_flags = false;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if (key == "processor") {
      ++info.num_logical_cpus;
    } else if (key == "model name" && info.model.empty()) {
      info.model = std::string(value);
    } else if (key == "flags" && !have_flags) {
      have_flags = true;
      std::istringstream words{std::string(value)};
      for (std::string word; words >> word;) info.flags.push_back(word);
    }
  }
  return info;
}

CpuInfo read_cpuinfo() {
  std::ifstream file("/proc/cpuinfo");
  if (!file) return {};
  std::stringstream text;
  text << file.rdbuf();
  return parse_cpuinfo(text.str());
}

int num_usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

std::optional<int> omp_num_threads_from_env() {
  const char* value = std::getenv("OMP_NUM_THREADS");
  if (value == nullptr) return std::nullopt;
  const std::string_view text = trim(value);
  int num_threads = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), num_threads);
  if (error != std::errc{} || end != text.data() + text.size() || num_threads <= 0) return std::nullopt;
  return num_threads;
}

namespace {

// Sets OMP_NUM_THREADS and re-executes when it is missing or not what was asked for.
void ensure_omp_num_threads(int requested) {
  const bool reexecuted = std::getenv(kReexecMarker) != nullptr;
  ::unsetenv(kReexecMarker);
  if (reexecuted) return;

  const std::optional<int> current = omp_num_threads_from_env();
  int wanted = requested;
  if (wanted <= 0) {
    if (std::getenv("OMP_NUM_THREADS") != nullptr) return;  // the user's setting stands, as OpenMP reads it
    wanted = num_usable_cpus();
  }
  if (current == wanted) return;
  ::setenv("OMP_NUM_THREADS", std::to_string(wanted).c_str(), 1);
  ::setenv(kReexecMarker, "1", 1);
  reexec_self();
  // Re-executing failed: go on with the thread count OpenMP already has.
  std::fprintf(stderr, "feeder: warning: could not restart with OMP_NUM_THREADS=%d: %s\n", wanted,
               std::strerror(errno));
  ::unsetenv(kReexecMarker);
}

}  // namespace

void prepare_process_runtime(const RuntimeOptions& options) {
  ensure_omp_num_threads(options.num_threads);
  // mallopt returns 0 when glibc rejects a value; training still works, only slower, so warn.
  const auto clamp = [](size_t bytes) { return static_cast<int>(std::min<size_t>(bytes, 1u << 30)); };
  if (::mallopt(M_MMAP_THRESHOLD, clamp(options.mmap_threshold_bytes)) == 0 ||
      ::mallopt(M_TRIM_THRESHOLD, clamp(options.trim_threshold_bytes)) == 0) {
    std::fprintf(stderr, "feeder: warning: mallopt rejected the malloc thresholds\n");
  }
}

void seed_torch(uint64_t seed) { at::manual_seed(seed); }

}  // namespace feeder
