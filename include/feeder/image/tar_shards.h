#pragma once

// WebDataset-style tar shards of encoded images: each sample is a group of members sharing a key
// (the member's path up to the first '.' of its file name): an image `key.jpg` / `.jpeg` / `.png` /
// `.webp` and, for a labeled set, `key.cls` holding its integer label as text. A set is a .tar
// file, a directory of them (every *.tar, sorted by name) or a glob ("shards/train-*.tar").
// Members of other kinds (`key.json`, `key.txt`, ...) are skipped and counted.
//
// Opening scans every shard's member headers once (libarchive; the image data is skipped, not
// read) and reads the small `.cls` members. The source then streams: its blocks are runs of
// kTarBlockSamples samples of one shard, each read by a pass over its members from the first
// one's header (uncompressed tar only: a compressed tar cannot be read from the middle, and images
// are compressed already). Sample names are "<shard>: <member>".
//
// Thread safety: the source is immutable once opened; each read opens the shard and an archive
// reader of its own.

#include <cstdint>
#include <memory>
#include <string>

#include "feeder/data/source.h"

namespace feeder {

inline constexpr int64_t kTarBlockSamples = 64;

struct TarShards {
  std::shared_ptr<const SampleSource> source;
  int64_t num_shards = 0;
  int64_t encoded_bytes = 0;   // the images, together
  int64_t skipped_members = 0;  // members that are neither an image nor a label
};

// Opens the shards. Throws DataError naming the shard (and member) for: no shards, a file that is
// not an uncompressed tar, a truncated tar, a key with two images or a label and no image, a label
// that is not an integer, or labels on some samples and not on others.
TarShards open_tar_shards(const std::string& spec);

}  // namespace feeder
