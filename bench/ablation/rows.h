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
  py_v1_b16, py_v1_b512, py_workers, py_persistent, py_pinned, py_v2,
  cpp_naive_b16, cpp_naive_b512, cpp_workers, cpp_persistent, cpp_pinned, cpp_eager,
  py_v2_malloc, torch_data_mnist, feeder_channels_last, feeder_bf16, feeder_defaults, compute_only, memcpy,
};

enum class Group { article_python, article_cpp, after_article };

// Which data path a row measures.
enum class Pipeline {
  python_v1,     // the article's Dataset v1 (pandas row per item), Python reference script
  python_v2,     // the article's Dataset v2 (tensors built once), Python reference script
  naive,         // the obvious C++ translation of Dataset v1 on torch::data
  torch_mnist,   // LibTorch's MNIST dataset + Stack collate
  feeder,        // feeder's loader
  compute_only,  // one fixed batch over and over: the model alone
  memcpy_bound,  // no model: a memcpy of the pass's output bytes
};

// Loader workers of a row: the worker rows use one per usable CPU (the article: 4 on 32 cores).
enum class Workers { none, one, per_cpu };

// The model's arithmetic and memory format.
enum class Arithmetic { fp32_nchw, fp32_channels_last, bf16_channels_last, trainer_defaults };

struct RowSpec {
  RowId id;
  std::string_view key;     // in file names, JSON and on the row runner's command line
  std::string_view method;  // as the table shows it; "{workers}" stands for the worker count
  Group group;
  Pipeline pipeline;
  int64_t batch_size = 512;
  Workers workers = Workers::none;
  bool persistent_workers = false;   // Python: DataLoader(persistent_workers=True)
  bool recreate_each_epoch = false;  // C++ naive: new loader and worker threads every pass
  bool pin_memory = false;
  Arithmetic arithmetic = Arithmetic::fp32_nchw;
  bool trains = false;  // false: only the loader-only number exists (memcpy)
  bool malloc_thresholds = false;  // Python with glibc's malloc thresholds set as feeder sets them
  std::string_view note = "";
};

inline constexpr std::string_view kNoPinning = "no CUDA: pinning has no effect";

// clang-format off
inline constexpr RowSpec kRows[] = {
    {.id = RowId::py_v1_b16, .key = "py-v1-b16", .method = "naive v1, batch 16", .group = Group::article_python,
     .pipeline = Pipeline::python_v1, .batch_size = 16, .trains = true},
    {.id = RowId::py_v1_b512, .key = "py-v1-b512", .method = "naive v1, batch 512", .group = Group::article_python,
     .pipeline = Pipeline::python_v1, .trains = true},
    {.id = RowId::py_workers, .key = "py-workers", .method = "+ num_workers={workers}",
     .group = Group::article_python, .pipeline = Pipeline::python_v1, .workers = Workers::per_cpu, .trains = true},
    {.id = RowId::py_persistent, .key = "py-persistent", .method = "+ persistent_workers",
     .group = Group::article_python, .pipeline = Pipeline::python_v1, .workers = Workers::per_cpu,
     .persistent_workers = true, .trains = true},
    {.id = RowId::py_pinned, .key = "py-pinned", .method = "+ pin_memory", .group = Group::article_python,
     .pipeline = Pipeline::python_v1, .workers = Workers::per_cpu, .persistent_workers = true, .pin_memory = true,
     .trains = true, .note = kNoPinning},
    {.id = RowId::py_v2, .key = "py-v2", .method = "Dataset v2 (__getitem__ refactor)", .group = Group::article_python,
     .pipeline = Pipeline::python_v2, .workers = Workers::per_cpu, .persistent_workers = true, .pin_memory = true,
     .trains = true},
    {.id = RowId::cpp_naive_b16, .key = "cpp-naive-b16", .method = "naive row-wise dataset, batch 16",
     .group = Group::article_cpp, .pipeline = Pipeline::naive, .batch_size = 16, .trains = true},
    {.id = RowId::cpp_naive_b512, .key = "cpp-naive-b512", .method = "naive row-wise dataset, batch 512",
     .group = Group::article_cpp, .pipeline = Pipeline::naive, .trains = true},
    {.id = RowId::cpp_workers, .key = "cpp-workers", .method = "+ {workers} worker threads, new each epoch",
     .group = Group::article_cpp, .pipeline = Pipeline::naive, .workers = Workers::per_cpu,
     .recreate_each_epoch = true, .trains = true},
    {.id = RowId::cpp_persistent, .key = "cpp-persistent", .method = "+ persistent workers",
     .group = Group::article_cpp, .pipeline = Pipeline::naive, .workers = Workers::per_cpu, .trains = true},
    {.id = RowId::cpp_pinned, .key = "cpp-pinned", .method = "+ pinned memory", .group = Group::article_cpp,
     .pipeline = Pipeline::naive, .workers = Workers::per_cpu, .pin_memory = true, .trains = true,
     .note = kNoPinning},
    {.id = RowId::cpp_eager, .key = "cpp-eager", .method = "+ eager uint8 store (feeder, fp32 NCHW)",
     .group = Group::article_cpp, .pipeline = Pipeline::feeder, .workers = Workers::per_cpu, .trains = true},
    {.id = RowId::py_v2_malloc, .key = "py-v2-malloc", .method = "Python Dataset v2 + malloc thresholds",
     .group = Group::after_article, .pipeline = Pipeline::python_v2, .workers = Workers::per_cpu,
     .persistent_workers = true, .pin_memory = true, .trains = true, .malloc_thresholds = true,
     .note = "MALLOC_MMAP_THRESHOLD_=32 MiB, MALLOC_TRIM_THRESHOLD_=1 GiB, as feeder sets them"},
    {.id = RowId::torch_data_mnist, .key = "torch-data-mnist", .method = "LibTorch torch::data MNIST + Stack",
     .group = Group::after_article, .pipeline = Pipeline::torch_mnist, .workers = Workers::per_cpu, .trains = true},
    {.id = RowId::feeder_channels_last, .key = "feeder-channels-last", .method = "feeder + channels-last (fp32)",
     .group = Group::after_article, .pipeline = Pipeline::feeder, .workers = Workers::per_cpu,
     .arithmetic = Arithmetic::fp32_channels_last, .trains = true},
    {.id = RowId::feeder_bf16, .key = "feeder-bf16", .method = "feeder + bf16 autocast",
     .group = Group::after_article, .pipeline = Pipeline::feeder, .workers = Workers::per_cpu,
     .arithmetic = Arithmetic::bf16_channels_last, .trains = true},
    {.id = RowId::feeder_defaults, .key = "feeder-defaults", .method = "feeder defaults (feeder train: 1 worker)",
     .group = Group::after_article, .pipeline = Pipeline::feeder, .workers = Workers::one,
     .arithmetic = Arithmetic::trainer_defaults, .trains = true},
    {.id = RowId::compute_only, .key = "compute-only", .method = "bound: compute only (one fixed batch)",
     .group = Group::after_article, .pipeline = Pipeline::compute_only, .workers = Workers::one,
     .arithmetic = Arithmetic::trainer_defaults, .trains = true, .note = "no data pipeline; accuracy not meaningful"},
    {.id = RowId::memcpy, .key = "memcpy", .method = "bound: memcpy of the epoch's bytes",
     .group = Group::after_article, .pipeline = Pipeline::memcpy_bound, .trains = false,
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
