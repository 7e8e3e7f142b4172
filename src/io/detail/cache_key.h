#pragma once

// The key that signs a disk cache's blocks (disk_cache.h): 32 random bytes in a file only its user
// may read, made on first use. A block whose signature does not match was not written by a process
// holding the key: someone who can write the cache directory but not read the key cannot make a
// block feeder takes for the store's bytes (an XXH3 alone can be recomputed by anyone).
//
// Where: $FEEDER_CACHE_KEY if set, else $XDG_CONFIG_HOME/feeder/cache-key, else
// $HOME/.config/feeder/cache-key. Without a home, <cache_dir>/key: it then guards against damage and
// against other users (the file is 0600), not against whoever may read the directory as its owner.

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

namespace feeder::detail {

using CacheKey = std::array<uint8_t, 32>;

// The key for a cache in `cache_dir`, read or made (atomically: of processes making it at once, one
// wins and the others read its key). OptionsError naming the file when it cannot be read or made.
CacheKey load_cache_key(const std::filesystem::path& cache_dir);

// HMAC-SHA256 of `data` under a key derived from `key` and `name` (a block's file name: its object
// and index), so a block moved to another name does not verify.
std::array<uint8_t, 32> sign_block(const CacheKey& key, std::string_view name, std::span<const uint8_t> data);

}  // namespace feeder::detail
