#pragma once

// The peak resident memory of the calling process so far: what each benchmark process reports as
// its own peak RSS (each configuration runs in a process of its own).

#include <sys/resource.h>

#include <cstdint>

namespace feeder::bench {

inline int64_t peak_rss_kib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;  // KiB on Linux
}

}  // namespace feeder::bench
