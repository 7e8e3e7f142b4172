#include "data/detail/convert.h"

// GCC 12 warns inside its own avx512fintrin.h (the deliberately undefined register of
// _mm512_undefined_*) when the intrinsics below are inlined: a false positive in the header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace feeder::detail {
namespace {

void convert_scalar(const uint8_t* src, float* dst, int64_t n, float scale, float bias) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) * scale + bias;
}

// Batches are written by a worker and read by the training thread on another core, so the stores
// bypass this core's cache (streaming stores): no read-for-ownership of the destination lines and
// no eviction of the worker's own working set. The caller issues the fence (finish_streaming).
__attribute__((target("avx512f"))) void convert_avx512(const uint8_t* src, float* dst, int64_t n, float scale,
                                                          float bias) {
  int64_t i = 0;
  // Streaming stores need 64-byte aligned destinations; go scalar up to the first aligned float.
  while (i < n && (reinterpret_cast<uintptr_t>(dst + i) & 63) != 0) {
    dst[i] = static_cast<float>(src[i]) * scale + bias;
    ++i;
  }
  const __m512 scale16 = _mm512_set1_ps(scale);
  const __m512 bias16 = _mm512_set1_ps(bias);
  for (; i + 16 <= n; i += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m512 values = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes));
    _mm512_stream_ps(dst + i, _mm512_fmadd_ps(values, scale16, bias16));
  }
  convert_scalar(src + i, dst + i, n - i, scale, bias);
}

__attribute__((target("avx2,fma"))) void convert_avx2(const uint8_t* src, float* dst, int64_t n, float scale,
                                                         float bias) {
  int64_t i = 0;
  while (i < n && (reinterpret_cast<uintptr_t>(dst + i) & 31) != 0) {
    dst[i] = static_cast<float>(src[i]) * scale + bias;
    ++i;
  }
  const __m256 scale8 = _mm256_set1_ps(scale);
  const __m256 bias8 = _mm256_set1_ps(bias);
  for (; i + 8 <= n; i += 8) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + i));
    const __m256 values = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
    _mm256_stream_ps(dst + i, _mm256_fmadd_ps(values, scale8, bias8));
  }
  convert_scalar(src + i, dst + i, n - i, scale, bias);
}

using ConvertFn = void (*)(const uint8_t*, float*, int64_t, float, float);

ConvertFn pick_convert() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return convert_avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return convert_avx2;
  return convert_scalar;
}

const ConvertFn convert_best = pick_convert();

}  // namespace

void convert_pixels(const uint8_t* src, float* dst, int64_t n, float scale, float bias) {
  convert_best(src, dst, n, scale, bias);
}

void finish_streaming() { _mm_sfence(); }

void convert_pixels_to_hwc(const uint8_t* src, float* dst, int64_t channels, int64_t pixels_per_channel,
                           float scale, float bias) {
  for (int64_t c = 0; c < channels; ++c) {
    const uint8_t* plane = src + c * pixels_per_channel;
    for (int64_t p = 0; p < pixels_per_channel; ++p)
      dst[p * channels + c] = static_cast<float>(plane[p]) * scale + bias;
  }
}

}  // namespace feeder::detail
