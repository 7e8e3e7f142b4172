#pragma once

// The ablation's rows in one table that both processes include: the orchestrator (what to run,
// how to label it, which flags the Python reference gets) and the row runner (which data path and
// arithmetic to build). A row is added here and nowhere else. No LibTorch here.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace feeder::bench {

enum class RowId {
  kPyV1B16, kPyV1B512, kPyWorkers, kPyPersistent, kPyPinned, kPyV2,
  kCppNaiveB16, kCppNaiveB512, kCppWorkers, kCppPersistent, kCppPinned, kCppEager,
  kPyV2Malloc, kTorchDataMnist, kFeederChannelsLast, kFeederBf16, kFeederDefaults, kComputeOnly, kMemcpy,
};

enum class Group { kArticlePython, kArticleCpp, kAfterArticle };

// Which data path a row measures.
enum class Pipeline {
  kPythonV1,     // the article's Dataset v1 (pandas row per item), Python reference script
  kPythonV2,     // the article's Dataset v2 (tensors built once), Python reference script
  kNaive,         // the obvious C++ translation of Dataset v1 on torch::data
  kTorchMnist,   // LibTorch's MNIST dataset + Stack collate
  kFeeder,        // kFeeder's loader
  kComputeOnly,  // one fixed batch over and over: the model alone
  kMemcpyBound,  // no model: a memcpy of the pass's output bytes
};

// Loader workers of a row: the worker rows use one per usable CPU (the article: 4 on 32 cores).
enum class Workers { kNone, kOne, kPerCpu };

// The model's arithmetic and memory format.
enum class Arithmetic { kFp32Nchw, kFp32ChannelsLast, kBf16ChannelsLast, kTrainerDefaults };

struct RowSpec {
  RowId id;
  std::string_view key;     // in file names, JSON and on the row runner's command line
  std::string_view method;  // as the table shows it; "{workers}" stands for the worker count
  Group group;
  Pipeline pipeline;
  int64_t batch_size = 512;
  Workers workers = Workers::kNone;
  bool persistent_workers = false;   // Python: DataLoader(persistent_workers=True)
  bool recreate_each_epoch = false;  // C++ naive: new loader and worker threads every pass
  bool pin_memory = false;
  Arithmetic arithmetic = Arithmetic::kFp32Nchw;
  bool trains = false;  // false: only the loader-only number exists (memcpy)
  bool malloc_thresholds = false;  // Python with glibc's malloc thresholds set as feeder sets them
  std::string_view note = "";
};

inline constexpr std::string_view kNoPinning = "no CUDA: pinning has no effect";

// clang-format off
inline constexpr RowSpec kRows[] = {
    {.id = RowId::kPyV1B16, .key = "py-v1-b16", .method = "naive v1, batch 16", .group = Group::kArticlePython,
     .pipeline = Pipeline::kPythonV1, .batch_size = 16, .trains = true},
    {.id = RowId::kPyV1B512, .key = "py-v1-b512", .method = "naive v1, batch 512", .group = Group::kArticlePython,
     .pipeline = Pipeline::kPythonV1, .trains = true},
    {.id = RowId::kPyWorkers, .key = "py-workers", .method = "+ num_workers={workers}",
     .group = Group::kArticlePython, .pipeline = Pipeline::kPythonV1, .workers = Workers::kPerCpu, .trains = true},
    {.id = RowId::kPyPersistent, .key = "py-persistent", .method = "+ persistent_workers",
     .group = Group::kArticlePython, .pipeline = Pipeline::kPythonV1, .workers = Workers::kPerCpu,
     .persistent_workers = true, .trains = true},
    {.id = RowId::kPyPinned, .key = "py-pinned", .method = "+ pin_memory", .group = Group::kArticlePython,
     .pipeline = Pipeline::kPythonV1, .workers = Workers::kPerCpu, .persistent_workers = true, .pin_memory = true,
     .trains = true, .note = kNoPinning},
    {.id = RowId::kPyV2, .key = "py-v2", .method = "Dataset v2 (__getitem__ refactor)", .group = Group::kArticlePython,
     .pipeline = Pipeline::kPythonV2, .workers = Workers::kPerCpu, .persistent_workers = true, .pin_memory = true,
     .trains = true},
    {.id = RowId::kCppNaiveB16, .key = "cpp-naive-b16", .method = "naive row-wise dataset, batch 16",
     .group = Group::kArticleCpp, .pipeline = Pipeline::kNaive, .batch_size = 16, .trains = true},
    {.id = RowId::kCppNaiveB512, .key = "cpp-naive-b512", .method = "naive row-wise dataset, batch 512",
     .group = Group::kArticleCpp, .pipeline = Pipeline::kNaive, .trains = true},
    {.id = RowId::kCppWorkers, .key = "cpp-workers", .method = "+ {workers} worker threads, new each epoch",
     .group = Group::kArticleCpp, .pipeline = Pipeline::kNaive, .workers = Workers::kPerCpu,
     .recreate_each_epoch = true, .trains = true},
    {.id = RowId::kCppPersistent, .key = "cpp-persistent", .method = "+ persistent workers",
     .group = Group::kArticleCpp, .pipeline = Pipeline::kNaive, .workers = Workers::kPerCpu, .trains = true},
    {.id = RowId::kCppPinned, .key = "cpp-pinned", .method = "+ pinned memory", .group = Group::kArticleCpp,
     .pipeline = Pipeline::kNaive, .workers = Workers::kPerCpu, .pin_memory = true, .trains = true,
     .note = kNoPinning},
    {.id = RowId::kCppEager, .key = "cpp-eager", .method = "+ eager uint8 store (feeder, fp32 NCHW)",
     .group = Group::kArticleCpp, .pipeline = Pipeline::kFeeder, .workers = Workers::kPerCpu, .trains = true},
    {.id = RowId::kPyV2Malloc, .key = "py-v2-malloc", .method = "Python Dataset v2 + malloc thresholds",
     .group = Group::kAfterArticle, .pipeline = Pipeline::kPythonV2, .workers = Workers::kPerCpu,
     .persistent_workers = true, .pin_memory = true, .trains = true, .malloc_thresholds = true,
     .note = "MALLOC_MMAP_THRESHOLD_=32 MiB, MALLOC_TRIM_THRESHOLD_=1 GiB, as feeder sets them"},
    {.id = RowId::kTorchDataMnist, .key = "torch-data-mnist", .method = "LibTorch torch::data MNIST + Stack",
     .group = Group::kAfterArticle, .pipeline = Pipeline::kTorchMnist, .workers = Workers::kPerCpu, .trains = true},
    {.id = RowId::kFeederChannelsLast, .key = "feeder-channels-last", .method = "feeder + channels-last (fp32)",
     .group = Group::kAfterArticle, .pipeline = Pipeline::kFeeder, .workers = Workers::kPerCpu,
     .arithmetic = Arithmetic::kFp32ChannelsLast, .trains = true},
    {.id = RowId::kFeederBf16, .key = "feeder-bf16", .method = "feeder + bf16 autocast",
     .group = Group::kAfterArticle, .pipeline = Pipeline::kFeeder, .workers = Workers::kPerCpu,
     .arithmetic = Arithmetic::kBf16ChannelsLast, .trains = true},
    {.id = RowId::kFeederDefaults, .key = "feeder-defaults", .method = "feeder defaults (feeder train: 1 worker)",
     .group = Group::kAfterArticle, .pipeline = Pipeline::kFeeder, .workers = Workers::kOne,
     .arithmetic = Arithmetic::kTrainerDefaults, .trains = true},
    {.id = RowId::kComputeOnly, .key = "compute-only", .method = "bound: compute only (one fixed batch)",
     .group = Group::kAfterArticle, .pipeline = Pipeline::kComputeOnly, .workers = Workers::kOne,
     .arithmetic = Arithmetic::kTrainerDefaults, .trains = true, .note = "no data pipeline; accuracy not meaningful"},
    {.id = RowId::kMemcpy, .key = "memcpy", .method = "bound: memcpy of the epoch's bytes",
     .group = Group::kAfterArticle, .pipeline = Pipeline::kMemcpyBound, .trains = false,
     .note = "no model: loader-only number only"},
};
// clang-format on

// The table's entry for `id`.
const RowSpec& row_spec(RowId id);
// The row whose key is `key`, if any.
std::optional<RowId> find_row_id(std::string_view key);

bool is_python(Pipeline pipeline);
// The row's loader workers on a machine where the worker rows use `workers_per_cpu_row`.
int row_workers(const RowSpec& spec, int workers_per_cpu_row);
// The method text with the worker count filled in.
std::string method_text(const RowSpec& spec, int workers_per_cpu_row);
std::string_view group_title(Group group);
std::string_view group_key(Group group);
std::string_view to_string(Pipeline pipeline);

}  // namespace feeder::bench
