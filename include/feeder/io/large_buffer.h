#pragma once

// Memory for large arrays. Thread safety: may be called from any thread. Ownership: the
// unique_ptr returned owns the memory and frees it with FreeDeleter.

#include <cstddef>
#include <cstdint>
#include <memory>

namespace feeder {

struct FreeDeleter {
  void operator()(void* data) const;
};

// Uninitialised memory for large, long-lived arrays (an image store, a whole file). Allocations of
// several megabytes are 2 MiB aligned and marked for transparent huge pages, so filling them takes
// one page fault per 2 MiB instead of one per 4 KiB: on virtual machines, where a fault is costly,
// that was most of the time spent loading a dataset. Smaller ones are 64-byte aligned.
std::unique_ptr<uint8_t[], FreeDeleter> allocate_large_buffer(size_t size_bytes);

}  // namespace feeder
