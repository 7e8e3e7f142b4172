#include "feeder/io/large_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>

namespace feeder {
namespace {

constexpr size_t kCacheLineBytes = 64;
constexpr size_t kHugePageBytes = size_t{2} << 20;
// Below this, huge-page alignment would waste more memory than the faults it saves cost.
constexpr size_t kHugePageThresholdBytes = size_t{8} << 20;

}  // namespace

void FreeDeleter::operator()(void* data) const { std::free(data); }

std::unique_ptr<uint8_t[], FreeDeleter> allocate_large_buffer(size_t size_bytes) {
  if (size_bytes < kHugePageThresholdBytes) {
    const size_t rounded = (std::max<size_t>(size_bytes, 1) + kCacheLineBytes - 1) / kCacheLineBytes * kCacheLineBytes;
    void* data = std::aligned_alloc(kCacheLineBytes, rounded);
    if (!data) throw std::bad_alloc();
    return std::unique_ptr<uint8_t[], FreeDeleter>(static_cast<uint8_t*>(data));
  }
  const size_t rounded = (size_bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* data = std::aligned_alloc(kHugePageBytes, rounded);
  if (!data) throw std::bad_alloc();
  // Advice only: where transparent huge pages are off, this fails harmlessly.
  ::madvise(data, rounded, MADV_HUGEPAGE);
  return std::unique_ptr<uint8_t[], FreeDeleter>(static_cast<uint8_t*>(data));
}

}  // namespace feeder
