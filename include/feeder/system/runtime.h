#pragma once

// What feeder knows about the machine and what it recommends for a training process. The library
// only reads and recommends: it never changes the process (environment, allocator, re-execution),
// because it may run inside someone else's program or a Python interpreter. The `feeder`
// executable applies the recommendations at start-up (src/cli/process_setup.h). No LibTorch here.
//
// Thread safety: all functions may be called from any thread; omp_num_threads_from_env reads the
// environment, which must not be changed concurrently (as for any getenv).

#include <cstddef>
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

// The number of intra-op threads OMP_NUM_THREADS asks for, if it is set to a positive integer.
std::optional<int> omp_num_threads_from_env();

// Process settings feeder recommends for training with LibTorch on the CPU, and why. A program
// that owns its process may apply them before LibTorch starts; feeder's library never does.
struct ProcessSettings {
  // OMP_NUM_THREADS for LibTorch's intra-op threads. OpenMP reads it once, when it starts; changing
  // the count later with torch::set_num_threads() made bf16 steps 3.5x slower here (155 ms vs
  // 44 ms), so the variable has to be set before the process starts (a re-execution, for a program
  // that is already running). nullopt: leave the variable as the user set it.
  std::optional<int> omp_num_threads;
  // glibc returns freed blocks above these sizes to the kernel; LibTorch frees and reallocates
  // multi-megabyte activation buffers on every step, which then page-fault back in each time.
  // Raising both keeps them in the heap (measured: 751k -> 82k page faults per epoch). glibc
  // refuses an mmap threshold above 32 MiB on 64-bit; the largest activation at batch 512 is
  // 512*16*28*28 floats = 25.7 MB, so 32 MiB covers it.
  size_t malloc_mmap_threshold_bytes = size_t{32} << 20;
  size_t malloc_trim_threshold_bytes = size_t{1} << 30;
};

// Bytes of memory available to new allocations without swapping: MemAvailable of /proc/meminfo,
// or nullopt when it cannot be read.
std::optional<int64_t> available_memory_bytes();
// The memory budget a loader's stream gets when none is given: half of the available memory (the
// other half stays for the model, the batches and the rest of the machine), or 1 GiB when the
// available memory is unknown. Also what `feeder train` compares a dataset's decoded size with to
// choose between loading it into memory and streaming it.
int64_t default_memory_budget();

// The settings for `requested_threads` intra-op threads: a positive count as is; 0 keeps a set
// OMP_NUM_THREADS (omp_num_threads = nullopt) and otherwise asks for one thread per usable CPU.
ProcessSettings recommended_process_settings(int requested_threads);

}  // namespace feeder
