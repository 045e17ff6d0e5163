// Software prefetch for kernels that read their input as one forward stream.
#pragma once

#include <immintrin.h>

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
/// loads in flight to stream from DRAM: prefetches the line 2 KiB ahead into L1 (requantize,
/// quantize at 256 MB; docs/performance.md, "Prefetching elementwise kernels"). The L2 hint of
/// stream_prefetch measured slower there.
inline void elementwise_prefetch(const void* at) {
  _mm_prefetch(static_cast<const char*>(at) + 2048, _MM_HINT_T0);
}

}  // namespace lucid::quantization::kernels
