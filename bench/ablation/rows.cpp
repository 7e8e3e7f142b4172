#include "ablation/rows.h"

#include <algorithm>

namespace feeder::bench {

// Row ids index the table: a row out of place is a compile-time error in rows.h's order, checked here.
static_assert([] {
  for (size_t i = 0; i < std::size(kRows); ++i) {
    if (static_cast<size_t>(kRows[i].id) != i) return false;
  }
  return true;
}(), "kRows must list the rows in RowId order");

const RowSpec& row_spec(RowId id) { return kRows[static_cast<size_t>(id)]; }

std::optional<RowId> find_row_id(std::string_view key) {
  const auto* row = std::find_if(std::begin(kRows), std::end(kRows), [&](const RowSpec& spec) { return spec.key == key; });
  if (row == std::end(kRows)) return std::nullopt;
  return row->id;
}

bool is_python(Pipeline pipeline) { return pipeline == Pipeline::kPythonV1 || pipeline == Pipeline::kPythonV2; }

int row_workers(const RowSpec& spec, int workers_per_cpu_row) {
  switch (spec.workers) {
    case Workers::kNone: return 0;
    case Workers::kOne: return 1;
    case Workers::kPerCpu: return workers_per_cpu_row;
  }
  return 0;
}

std::string method_text(const RowSpec& spec, int workers_per_cpu_row) {
  std::string text(spec.method);
  constexpr std::string_view kPlaceholder = "{workers}";
  if (const size_t at = text.find(kPlaceholder); at != std::string::npos) {
    text.replace(at, kPlaceholder.size(), std::to_string(workers_per_cpu_row));
  }
  return text;
}

std::string_view group_title(Group group) {
  switch (group) {
    case Group::kArticlePython: return "The article in Python (bench/reference/article_pipeline.py)";
    case Group::kArticleCpp: return "The article's steps in C++";
    case Group::kAfterArticle: return "After the article";
  }
  return "?";
}

std::string_view group_key(Group group) {
  switch (group) {
    case Group::kArticlePython: return "article_python";
    case Group::kArticleCpp: return "article_cpp";
    case Group::kAfterArticle: return "after_article";
  }
  return "?";
}

std::string_view to_string(Pipeline pipeline) {
  switch (pipeline) {
    case Pipeline::kPythonV1: return "python-v1";
    case Pipeline::kPythonV2: return "python-v2";
    case Pipeline::kNaive: return "naive";
    case Pipeline::kTorchMnist: return "torch-data-mnist";
    case Pipeline::kFeeder: return "feeder";
    case Pipeline::kComputeOnly: return "compute-only";
    case Pipeline::kMemcpyBound: return "memcpy";
  }
  return "?";
}

}  // namespace feeder::bench
