#include "formats/detail/shard_index.h"

#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "feeder/error.h"
#include "feeder/io/file_system.h"

namespace feeder::detail {

namespace {

using nlohmann::json;

// Reads `key` of `object` as T; a missing key or another type is reported with the key's name.
template <class T>
T field(const json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end()) throw DataError(where + ": no \"" + key + "\"");
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw DataError(where + ": \"" + std::string(key) + "\" is " + it->dump() + ", not the expected type");
  }
}

bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

uint64_t parse_hex64(const std::string& text, const std::string& where) {
  if (text.size() != 16 || text.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw DataError(where + ": \"xxh3\" is \"" + text + "\", expected 16 lowercase hex digits");
  }
  return std::stoull(text, nullptr, 16);
}

ShardInfo parse_shard(const json& entry, const std::filesystem::path& dir, const std::string& where) {
  if (!entry.is_object()) throw DataError(where + ": not an object");
  ShardInfo shard;
  const std::string file = field<std::string>(entry, "file", where);
  if (!is_plain_file_name(file)) throw DataError(where + ": \"file\" is \"" + file + "\", not a plain file name");
  shard.path = dir / file;
  const std::string at = where + " (" + file + ")";
  shard.num_rows = field<int64_t>(entry, "rows", at);
  shard.row_group_rows = field<std::vector<int64_t>>(entry, "row_group_rows", at);
  shard.row_group_max_compressed_bytes = field<int64_t>(entry, "row_group_max_read_bytes", at);
  if (entry.contains("piece_read_bytes")) {
    shard.piece_read_bytes = field<int64_t>(entry, "piece_read_bytes", at);
    if (shard.piece_read_bytes < 0) throw DataError(at + ": \"piece_read_bytes\" is negative");
  }
  const int64_t size_bytes = field<int64_t>(entry, "size", at);
  if (size_bytes < 0) throw DataError(at + ": \"size\" is negative");
  shard.size_bytes = static_cast<uint64_t>(size_bytes);
  shard.content_hash = parse_hex64(field<std::string>(entry, "xxh3", at), at);
  int64_t rows = 0;
  for (const int64_t group_rows : shard.row_group_rows) {
    if (group_rows < 0 || __builtin_add_overflow(rows, group_rows, &rows)) {
      throw DataError(at + ": \"row_group_rows\" holds an invalid count " + std::to_string(group_rows));
    }
  }
  if (shard.num_rows < 0 || rows != shard.num_rows) {
    throw DataError(at + ": \"rows\" is " + std::to_string(shard.num_rows) + " but its row groups add up to " +
                    std::to_string(rows));
  }
  if (shard.row_group_max_compressed_bytes < 0 ||
      static_cast<uint64_t>(shard.row_group_max_compressed_bytes) > shard.size_bytes) {
    throw DataError(at + ": \"row_group_max_read_bytes\" " + std::to_string(shard.row_group_max_compressed_bytes) +
                    " does not fit in the file's " + std::to_string(shard.size_bytes) + " bytes");
  }
  return shard;
}

}  // namespace

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::string shard_index_json(const ShardedDataset& dataset) {
  json index;
  index["format"] = kShardIndexFormat;
  index["version"] = kShardIndexVersion;
  index["num_rows"] = dataset.num_rows;
  if (dataset.encoded) {
    index["encoded"] = true;
  } else {
    index["shape"] = {dataset.shape.channels, dataset.shape.height, dataset.shape.width};
  }
  index["labeled"] = dataset.labeled;
  if (dataset.label_min && dataset.label_max) {
    index["label_min"] = *dataset.label_min;
    index["label_max"] = *dataset.label_max;
  }
  if (dataset.shuffled_on_write) index["shuffled_on_write_seed"] = *dataset.shuffled_on_write;
  json shards = json::array();
  for (const ShardInfo& shard : dataset.shards) {
    shards.push_back({{"file", shard.path.filename().string()},
                      {"rows", shard.num_rows},
                      {"row_group_rows", shard.row_group_rows},
                      {"row_group_max_read_bytes", shard.row_group_max_compressed_bytes},
                      {"piece_read_bytes", shard.piece_read_bytes},
                      {"size", shard.size_bytes},
                      {"xxh3", hex64(shard.content_hash.value_or(0))}});
  }
  index["shards"] = std::move(shards);
  return index.dump(2) + "\n";
}

ShardedDataset parse_shard_index(const std::string& text, const std::filesystem::path& dir) {
  const std::string name = (dir / kShardIndexName).string();
  json index;
  try {
    index = json::parse(text);
  } catch (const json::exception& error) {
    throw DataError(name + ": not valid JSON: " + error.what());
  }
  if (!index.is_object()) throw DataError(name + ": not a JSON object");
  if (field<std::string>(index, "format", name) != kShardIndexFormat) {
    throw DataError(name + ": \"format\" is not \"" + std::string(kShardIndexFormat) + "\"");
  }
  const int version = field<int>(index, "version", name);
  if (version != kShardIndexVersion) {
    throw DataError(name + ": index version " + std::to_string(version) + ", this feeder reads version " +
                    std::to_string(kShardIndexVersion));
  }
  ShardedDataset dataset;
  dataset.root = dir;
  dataset.indexed = true;
  dataset.num_rows = field<int64_t>(index, "num_rows", name);
  dataset.encoded = index.contains("encoded") && field<bool>(index, "encoded", name);
  if (!dataset.encoded) {
    const std::vector<int64_t> shape = field<std::vector<int64_t>>(index, "shape", name);
    // Each side at most 2^20 keeps C*H*W well inside int64.
    const auto valid_side = [](int64_t side) { return side > 0 && side <= (int64_t{1} << 20); };
    if (shape.size() != 3 || !valid_side(shape[0]) || !valid_side(shape[1]) || !valid_side(shape[2])) {
      throw DataError(name + ": \"shape\" must be [C, H, W] of positive sizes");
    }
    dataset.shape = ImageShape{shape[0], shape[1], shape[2]};
  }
  dataset.labeled = field<bool>(index, "labeled", name);
  if (index.contains("label_min") || index.contains("label_max")) {
    dataset.label_min = field<int64_t>(index, "label_min", name);
    dataset.label_max = field<int64_t>(index, "label_max", name);
  }
  if (index.contains("shuffled_on_write_seed")) dataset.shuffled_on_write = field<uint64_t>(index, "shuffled_on_write_seed", name);
  const json shards = field<json>(index, "shards", name);
  if (!shards.is_array()) throw DataError(name + ": \"shards\" is not an array");
  int64_t rows = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    ShardInfo shard = parse_shard(shards[i], dir, name + ": shard " + std::to_string(i));
    if (__builtin_add_overflow(rows, shard.num_rows, &rows)) throw DataError(name + ": shard rows overflow");
    dataset.shards.push_back(std::move(shard));
  }
  if (rows != dataset.num_rows) {
    throw DataError(name + ": \"num_rows\" is " + std::to_string(dataset.num_rows) + " but the shards add up to " +
                    std::to_string(rows));
  }
  dataset.fingerprint = fingerprint_of_content_hashes(dataset.shards);
  return dataset;
}

uint64_t fingerprint_of_content_hashes(const std::vector<ShardInfo>& shards) {
  std::vector<uint64_t> hashes;
  hashes.reserve(shards.size());
  for (const ShardInfo& shard : shards) hashes.push_back(shard.content_hash.value_or(0));
  return XXH3_64bits(hashes.data(), hashes.size() * sizeof(uint64_t));
}

uint64_t hash_file(const std::filesystem::path& path) {
  const std::shared_ptr<const RandomAccessFile> file = file_system_for(path).open(path);
  const std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> state(XXH3_createState(), &XXH3_freeState);
  if (!state || XXH3_64bits_reset(state.get()) != XXH_OK) throw std::bad_alloc();
  std::vector<uint8_t> block(size_t{1} << 20);
  for (int64_t offset = 0;;) {
    const int64_t got = file->read_at(offset, block);
    XXH3_64bits_update(state.get(), block.data(), static_cast<size_t>(got));
    offset += got;
    if (got < static_cast<int64_t>(block.size())) break;
  }
  return XXH3_64bits_digest(state.get());
}

}  // namespace feeder::detail
