#pragma once

// What `feeder inspect` shows of a set of encoded images (a folder, tar shards, Parquet): the mix
// of formats, the images' sizes and the classes, from their headers (nothing is decoded).
//
// Thread safety: a function; it reads the source on the calling thread.

#include <cstdint>
#include <string>
#include <vector>

#include "feeder/data/source.h"

namespace feeder {

// A few lines of text. Reads the images of at most `max_blocks` of the source's blocks, spread
// evenly over the set (all of them for a set held in memory), and says how many it looked at.
// `classes` names the labels when known. A header that cannot be read is counted, not fatal.
std::string describe_encoded_images(const SampleSource& source, const std::vector<std::string>& classes = {},
                                    int64_t max_blocks = 64);

}  // namespace feeder
