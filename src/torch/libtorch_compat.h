#pragma once

// Every place where the LibTorch versions feeder builds against differ (1.13, Debian 12's; 2.x,
// Debian 13's and pip's), behind one small set of functions, so that the rest of the code reads the
// same on both and a build on 2.x uses no API that 2.x deprecates.

#include <ATen/autocast_mode.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/Allocator.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>
#include <torch/version.h>

// LibTorch 2.4 replaced autocast's per-device functions (is_enabled, is_cpu_enabled, ...) with
// functions taking the device type, and deprecated the old ones (each call prints a warning).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define FEEDER_AUTOCAST_BY_DEVICE_TYPE 1
#else
#define FEEDER_AUTOCAST_BY_DEVICE_TYPE 0
#endif

namespace feeder::torch_compat {

// Autocast's state for CPU or CUDA (`cuda`), as Python's torch.is_autocast_enabled(device_type).
inline bool autocast_enabled(bool cuda) {
#if FEEDER_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::is_autocast_enabled(cuda ? c10::DeviceType::CUDA : c10::DeviceType::CPU);
#else
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

inline void set_autocast_enabled(bool cuda, bool enabled) {
#if FEEDER_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_enabled(cuda ? c10::DeviceType::CUDA : c10::DeviceType::CPU, enabled);
#else
  if (cuda) {
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

inline c10::ScalarType autocast_dtype(bool cuda) {
#if FEEDER_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::get_autocast_dtype(cuda ? c10::DeviceType::CUDA : c10::DeviceType::CPU);
#else
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
}

inline void set_autocast_dtype(bool cuda, c10::ScalarType dtype) {
#if FEEDER_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_dtype(cuda ? c10::DeviceType::CUDA : c10::DeviceType::CPU, dtype);
#else
  if (cuda) {
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif
}

// LibTorch 2.4 made c10d's TCPStore use libuv by default, and refuses to start where LibTorch was
// built without it (Debian's is); the classic backend is in every build and serves a few ranks as
// well. LibTorch 1.13's options have no such field.
template <typename TCPStoreOptions>
void use_classic_tcp_store(TCPStoreOptions& options) {
  if constexpr (requires { options.useLibUV; }) options.useLibUV = false;
}

// LibTorch's CUDA host allocator (page-locked, cached). Throws in a LibTorch without CUDA.
inline c10::Allocator* pinned_memory_allocator() { return at::detail::getCUDAHooks().getPinnedMemoryAllocator(); }

// Whether cuDNN convolves in bf16 (Ampere and later); false in a LibTorch without CUDA.
inline bool cuda_bf16_convolutions() { return at::detail::getCUDAHooks().supportsBFloat16ConvolutionWithCuDNNv8(); }

}  // namespace feeder::torch_compat
