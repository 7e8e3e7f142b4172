#include "feeder/system/runtime.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace feeder {
namespace {

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
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

ProcessSettings recommended_process_settings(int requested_threads) {
  ProcessSettings settings;
  if (requested_threads > 0) {
    settings.omp_num_threads = requested_threads;
  } else if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    settings.omp_num_threads = num_usable_cpus();
  }  // else: the user's setting stands, as OpenMP reads it
  return settings;
}

std::optional<int64_t> available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

int64_t default_memory_budget() {
  const std::optional<int64_t> available = available_memory_bytes();
  return available ? *available / 2 : int64_t{1} << 30;
}

}  // namespace feeder
