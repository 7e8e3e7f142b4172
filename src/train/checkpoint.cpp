#include "feeder/train/checkpoint.h"


#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "feeder/error.h"
#include "train/detail/error_text.h"
#include "feeder/io/file.h"

namespace feeder {
namespace {

constexpr const char* kFormat = "feeder.checkpoint.v1";
constexpr const char* kPrefix = "checkpoint-";
constexpr const char* kSuffix = ".pt";

std::string meta_json(const TrainingCheckpoint& checkpoint) {
  nlohmann::json json = {
      {"format", kFormat},
      {"epoch", checkpoint.epoch},
      {"batches_done", checkpoint.batches_done},
      {"global_step", checkpoint.global_step},
      {"loss_sum", checkpoint.loss_sum},
      {"num_samples", checkpoint.num_samples},
      {"world_size", checkpoint.world_size},
      {"loader_state", checkpoint.loader_state},
      {"finished_epochs", checkpoint.finished_epochs},
  };
  return json.dump();
}

TrainingCheckpoint parse_meta(const std::string& text) {
  const nlohmann::json json = nlohmann::json::parse(text);
  if (json.at("format").get<std::string>() != kFormat) {
    throw DataError("not a " + std::string(kFormat) + " checkpoint (format " + json.at("format").dump() + ")");
  }
  TrainingCheckpoint checkpoint;
  checkpoint.epoch = json.at("epoch").get<int64_t>();
  checkpoint.batches_done = json.at("batches_done").get<int64_t>();
  checkpoint.global_step = json.at("global_step").get<int64_t>();
  checkpoint.loss_sum = json.at("loss_sum").get<double>();
  checkpoint.num_samples = json.at("num_samples").get<int64_t>();
  checkpoint.world_size = json.at("world_size").get<int>();
  checkpoint.loader_state = json.at("loader_state").get<std::string>();
  checkpoint.finished_epochs = json.at("finished_epochs").get<std::vector<EpochReport>>();
  return checkpoint;
}


}  // namespace

CheckpointStore::CheckpointStore(std::filesystem::path dir, int keep) : dir_(std::move(dir)), keep_(keep) {
  if (keep_ < 1) throw OptionsError("checkpoints to keep must be at least 1, got " + std::to_string(keep_));
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error) throw DataError(dir_.string() + ": cannot create the checkpoint directory: " + error.message());
}

std::vector<std::filesystem::path> CheckpointStore::files() const {
  std::vector<std::filesystem::path> found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, error)) {
    const std::string name = entry.path().filename().string();
    // checkpoint-NNNNNNNNNN.pt: the zero-padded step sorts as text. Temporary files do not match.
    if (name.size() == std::string(kPrefix).size() + 10 + std::string(kSuffix).size() && name.starts_with(kPrefix) &&
        name.ends_with(kSuffix)) {
      found.push_back(entry.path());
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.filename() > b.filename(); });
  return found;
}

std::filesystem::path CheckpointStore::save(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                                            const TrainingCheckpoint& checkpoint) {
  torch::serialize::OutputArchive archive;
  archive.write("meta", c10::IValue(meta_json(checkpoint)));
  torch::serialize::OutputArchive model_archive;
  model.save(model_archive);
  archive.write("model", model_archive);
  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  char name[64];
  std::snprintf(name, sizeof(name), "%s%010lld%s", kPrefix, static_cast<long long>(checkpoint.global_step), kSuffix);
  const std::filesystem::path target = dir_ / name;
  write_file_atomically(target, bytes.str());
  const std::vector<std::filesystem::path> all = files();
  for (size_t i = static_cast<size_t>(keep_); i < all.size(); ++i) {
    std::error_code ignored;  // a file already gone is what we wanted
    std::filesystem::remove(all[i], ignored);
  }
  // A process killed while writing leaves its temporary file (checkpoint-N.pt.tmp-PID) behind.
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, error)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(kPrefix) && name.find(std::string(kSuffix) + ".tmp-") != std::string::npos) {
      std::error_code ignored;
      std::filesystem::remove(entry.path(), ignored);
    }
  }
  return target;
}

std::optional<std::pair<TrainingCheckpoint, std::filesystem::path>> CheckpointStore::load_newest(
    torch::nn::Module& model, torch::optim::Optimizer& optimizer,
    const std::function<void(const std::string&)>& warn) const {
  for (const std::filesystem::path& file : files()) {
    try {
      torch::serialize::InputArchive archive;
      archive.load_from(file.string());
      c10::IValue meta;
      archive.read("meta", meta);
      TrainingCheckpoint checkpoint = parse_meta(meta.toStringRef());
      torch::serialize::InputArchive model_archive;
      archive.read("model", model_archive);
      torch::serialize::InputArchive optimizer_archive;
      archive.read("optimizer", optimizer_archive);
      // Everything read: now change the model and the optimizer.
      model.load(model_archive);
      optimizer.load(optimizer_archive);
      return std::make_pair(std::move(checkpoint), file);
    } catch (const std::exception& error) {
      if (warn) warn(file.string() + ": skipped, it does not load (" + detail::error_text(error) + ")");
    }
  }
  return std::nullopt;
}

}  // namespace feeder
