#pragma once

// Internal: index.json of a sharded Parquet set (feeder/formats/sharded.h), to and from JSON.
//
//   {"format": "feeder sharded parquet", "version": 1, "num_rows": 1000, "shape": [1, 28, 28],
//    "labeled": true, "label_min": 0, "label_max": 9,
//    "shards": [{"file": "part-00000.parquet", "rows": 500, "row_group_rows": [256, 244],
//                "row_group_max_read_bytes": 90412, "size": 187321, "xxh3": "9f2c4e0b71a3d855"}, ...]}
//
// label_min / label_max are present for a labeled set with rows. "file" is a plain name inside the
// set's directory. "xxh3" is XXH3-64 of the whole file, 16 hex digits. A set of encoded images has
// "encoded": true and no "shape" (its images have sizes of their own): its index lists the shards,
// and their footers describe the rest.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "feeder/formats/sharded.h"

namespace feeder::detail {

inline constexpr int kShardIndexVersion = 1;
inline constexpr std::string_view kShardIndexFormat = "feeder sharded parquet";

// The index of `dataset` (its shards must carry content hashes), indented for reading.
std::string shard_index_json(const ShardedDataset& dataset);

// Reads the index in `dir`: shards (paths dir/<file>), shape, labels, rows, content hashes and the
// fingerprint; indexed is set, `columns` is left empty. Throws DataError naming the index file for
// anything malformed or inconsistent (rows that do not add up, a file name that is not plain).
ShardedDataset parse_shard_index(const std::string& text, const std::filesystem::path& dir);

// XXH3-64 over the shards' content hashes, in order: the fingerprint of an indexed set.
uint64_t fingerprint_of_content_hashes(const std::vector<ShardInfo>& shards);

// XXH3-64 of a whole file, read in blocks. Throws DataError naming the file.
uint64_t hash_file(const std::filesystem::path& path);

// "%016llx".
std::string hex64(uint64_t value);

}  // namespace feeder::detail
