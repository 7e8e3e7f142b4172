#pragma once

// Internal: page compression codecs, shared by the reader (decompress) and the writer (compress).
// Each wraps the Debian-packaged library: snappy, zlib, zstd, lz4, brotli.

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "feeder/formats/parquet/metadata.h"

namespace feeder::parquet {

// True for the codecs feeder can decompress and compress (everything except LZO).
bool codec_supported(Codec codec);

// Decompresses `input` into exactly output.size() bytes (the page's declared uncompressed size).
// Output that would be longer or shorter than declared, or corrupt input, throws
// DataError("<context>: <CODEC>: ..."); `context` names the file, column and page.
// GZIP accepts concatenated members; LZ4 accepts Hadoop framing and falls back to a raw block.
void decompress(Codec codec, std::span<const uint8_t> input, std::span<uint8_t> output, const std::string& context);

// Compresses `input`. `level` < 0 picks the codec's default (zstd 3, gzip 6, brotli 5, lz4 its fast
// mode; 1-12 its high-compression mode at that level).
// LZ4 (codec 5) is written with Hadoop framing, which every reader accepts; prefer LZ4_RAW.
std::vector<uint8_t> compress(Codec codec, std::span<const uint8_t> input, int level = -1);

// The levels `compress` takes for a codec, {lowest, highest}; {1, 0} for a codec without levels.
std::pair<int, int> compression_levels(Codec codec);

}  // namespace feeder::parquet
