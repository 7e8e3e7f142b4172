#pragma once

// A node's local copy of remote objects' bytes (StorageOptions::cache_dir), so that epochs after
// the first read the disk instead of the store. An object is kept in blocks of kBlockBytes, each a
// file of its own under the directory, named by the object (its address, its ETag and size: a
// replaced object is another object) and the block's index: a read takes the blocks it covers
// from the disk, and the missing ones from the store, neighbours in one request, keeping them.
//
// Shared by every process of the node that names the same directory (the ranks of one machine),
// as Mosaic Streaming's cache is: a block appears by rename, whole or not at all; each block
// carries an XXH3 of every 64 KiB of it, checked when read, so a block cut short by a crash or
// damaged on the disk is read from the store again, never handed on; and a signature under the
// user's cache key (cache_key.h), so a block forged by someone who cannot read the key is too. The
// directory's lock file holds the bytes kept, updated under its flock by each process that writes a
// block; the writer that passes the limit counts the directory again and removes the least recently
// used blocks (a block's modification time, renewed when read) down to seven eighths of it. A block
// removed while another process reads it stays readable to that process.
//
// Thread safety: a DiskCache serves any number of threads; two threads of one process missing the
// same block make one request (the second waits for the first's bytes). Failing to write (a full
// disk) is said once on stderr; from then on the process reads only what is asked from the store
// (no whole blocks it could not keep), and the blocks already kept from the disk.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "feeder/io/file_system.h"

namespace feeder::detail {

class DiskCache {
 public:
  static constexpr int64_t kBlockBytes = int64_t{1} << 20;

  // The cache in `directory` (made if missing; OptionsError naming it when it cannot be) holding at
  // most `limit_bytes` of blocks (0: no limit but the disk's).
  DiskCache(std::filesystem::path directory, int64_t limit_bytes);
  ~DiskCache();
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  // `file` read through the cache. `identity` names the object's bytes: its address, version and
  // size (objects of equal identity are taken to hold equal bytes).
  std::shared_ptr<const RandomAccessFile> wrap(std::shared_ptr<const RandomAccessFile> file,
                                               const std::string& identity) const;

  // Bytes of blocks in the directory, as the lock file counts them (the directory counted when it
  // has never been).
  int64_t bytes_estimate() const;
  // Counts the directory and evicts down to the limit now (otherwise done as blocks are written).
  void enforce_limit() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// The process's cache for `directory` (one per directory, made on first use).
std::shared_ptr<const DiskCache> disk_cache_for(const std::filesystem::path& directory, int64_t limit_bytes);

}  // namespace feeder::detail
