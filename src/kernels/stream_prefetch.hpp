// Software prefetch for kernels that read their input as one forward stream.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace lucid::quantization::kernels {

/// Called once per 64 bytes read at `at`: prefetches the line 2 KiB ahead into L1 and the one
/// 8 KiB ahead into L2, so that one core keeps enough misses in flight to stream from DRAM (the
/// distances of the AVX-512 VNNI GEMM, docs/performance.md). A hint: never faults, so reading
/// past the end of the weights is harmless.
inline void stream_prefetch(const void* at) {
  _mm_prefetch(static_cast<const char*>(at) + 2048, _MM_HINT_T0);
  _mm_prefetch(static_cast<const char*>(at) + 8192, _MM_HINT_T1);
}

/// Called once per 64 bytes read at `at` by an elementwise kernel whose arithmetic leaves too few
/// loads in flight to stream its input from DRAM (requantize, quantize at 256 MB;
/// docs/performance.md, "Elementwise"): the line 2 KiB ahead into L1
/// (stream_prefetch's L2 hint measured slower there). A no-op unless On.
template <bool On = true>
inline void elementwise_prefetch(const void* at) {
  if constexpr (On) _mm_prefetch(static_cast<const char*>(at) + 2048, _MM_HINT_T0);
}

/// Whether a light elementwise kernel (quantize) reading `input_bytes` in one call should
/// prefetch: smaller inputs are mostly in L1 or L2, where the prefetches only take load slots
/// (quantize at 32 KB: 7-12 % slower with them).
inline bool elementwise_prefetch_pays(std::int64_t input_bytes) {
  return input_bytes >= (std::int64_t{1} << 20);
}

}  // namespace lucid::quantization::kernels
