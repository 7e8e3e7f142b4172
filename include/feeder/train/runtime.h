#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace feeder {

// What the trainer needs to know about the CPU, from /proc/cpuinfo.
struct CpuInfo {
  std::string model;               // "model name" of the first processor, "" when unknown
  int num_logical_cpus = 0;        // "processor" entries
  std::vector<std::string> flags;  // "flags" of the first processor

  bool has_flag(std::string_view flag) const;
  // True when the CPU computes bfloat16 natively (AVX512_BF16 or AMX-BF16), which is when bf16
  // autocast pays off; elsewhere oneDNN emulates it and it is slower than fp32.
  bool has_native_bf16() const { return has_flag("avx512_bf16") || has_flag("amx_bf16"); }
};

// Parses the text of /proc/cpuinfo (x86 layout: "key\t: value" lines, one block per processor).
CpuInfo parse_cpuinfo(std::string_view text);
// Reads /proc/cpuinfo; empty fields when it cannot be read.
CpuInfo read_cpuinfo();

// CPUs this process may run on (its affinity mask), at least 1.
int num_usable_cpus();

struct RuntimeOptions {
  // Intra-op threads for LibTorch; 0 = keep OMP_NUM_THREADS when set, else the usable CPUs.
  int num_threads = 0;
  // glibc returns freed blocks above these sizes to the kernel; LibTorch frees and reallocates
  // multi-megabyte activation buffers on every step, which then page-fault back in each time.
  // Raising both keeps them in the heap (measured: 751k -> 82k page faults per epoch). glibc
  // refuses an mmap threshold above 32 MiB on 64-bit; the largest activation at batch 512 is
  // 512*16*28*28 floats = 25.7 MB, so 32 MiB covers it.
  size_t mmap_threshold_bytes = size_t{32} << 20;
  size_t trim_threshold_bytes = size_t{1} << 30;
};

// Prepares the process for training; call first thing in main(), before LibTorch runs anything.
//
// OpenMP reads OMP_NUM_THREADS once, when it starts; changing the thread count later with
// torch::set_num_threads() made bf16 steps 3.5x slower (155 ms vs 44 ms). So when the variable is
// unset or differs from options.num_threads, this sets it and re-executes the process
// (/proc/self/exe with the same arguments, read from /proc/self/cmdline); it returns only in the
// process that already runs with the right value, or when re-executing fails (then the run goes
// on with the thread count it has). Also sets the malloc thresholds. Not thread safe: call it
// while the process has one thread.
void prepare_process_runtime(const RuntimeOptions& options);

// The number of intra-op threads OMP_NUM_THREADS asks for, if it is set to a positive integer.
std::optional<int> omp_num_threads_from_env();

// Seeds LibTorch's global generators (CPU and CUDA); model initialisation and dropout draw from them.
void seed_torch(uint64_t seed);

}  // namespace feeder
