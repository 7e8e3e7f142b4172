#pragma once

// Internal to the loader: what a streamed set's page layout costs its shuffle windows, judged from
// the pages found when the set was opened (no sample is read).

#include <string>

#include "feeder/data/loader.h"
#include "feeder/data/source.h"

namespace feeder::detail {

// Empty unless the source's blocks are parts of pages far larger than themselves, so that the
// windows of an epoch read and decompress those pages again and again (SampleSource::largest_page_rows); then
// one paragraph with the cost and what to do.
std::string page_advice(const SampleSource& source, const LoaderOptions& options);

}  // namespace feeder::detail
