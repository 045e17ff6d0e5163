// The AVX-512 VNNI inner loop of the int8 peak micro-benchmark (this file alone gets -mavx512vnni).
#include <immintrin.h>

#include <cstdint>

#include "int8_peak.hpp"

namespace lucidq_bench {

// 16 independent vpdpbusd chains (u8 × s8, 64 multiply-adds each) per iteration,
// in assembly so the compiler can neither hoist nor add register moves: enough
// accumulators to cover the instruction's latency × throughput.
std::int64_t int8_peak_loop_vnni(std::int64_t iterations, std::int32_t seed) {
  if (iterations < 1) return 0;
  const __m512i a = _mm512_set1_epi32(seed), b = _mm512_set1_epi32(seed ^ 0x01020304);
  std::int64_t n = iterations;
  asm volatile(
      "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
      "vmovdqa64 %%zmm0, %%zmm1\n\tvmovdqa64 %%zmm0, %%zmm2\n\tvmovdqa64 %%zmm0, %%zmm3\n\t"
      "vmovdqa64 %%zmm0, %%zmm4\n\tvmovdqa64 %%zmm0, %%zmm5\n\tvmovdqa64 %%zmm0, %%zmm6\n\t"
      "vmovdqa64 %%zmm0, %%zmm7\n\tvmovdqa64 %%zmm0, %%zmm8\n\tvmovdqa64 %%zmm0, %%zmm9\n\t"
      "vmovdqa64 %%zmm0, %%zmm10\n\tvmovdqa64 %%zmm0, %%zmm11\n\tvmovdqa64 %%zmm0, %%zmm12\n\t"
      "vmovdqa64 %%zmm0, %%zmm13\n\tvmovdqa64 %%zmm0, %%zmm14\n\tvmovdqa64 %%zmm0, %%zmm15\n\t"
      ".p2align 5\n"
      "1:\n\t"
      "vpdpbusd %[b], %[a], %%zmm0\n\tvpdpbusd %[b], %[a], %%zmm1\n\t"
      "vpdpbusd %[b], %[a], %%zmm2\n\tvpdpbusd %[b], %[a], %%zmm3\n\t"
      "vpdpbusd %[b], %[a], %%zmm4\n\tvpdpbusd %[b], %[a], %%zmm5\n\t"
      "vpdpbusd %[b], %[a], %%zmm6\n\tvpdpbusd %[b], %[a], %%zmm7\n\t"
      "vpdpbusd %[b], %[a], %%zmm8\n\tvpdpbusd %[b], %[a], %%zmm9\n\t"
      "vpdpbusd %[b], %[a], %%zmm10\n\tvpdpbusd %[b], %[a], %%zmm11\n\t"
      "vpdpbusd %[b], %[a], %%zmm12\n\tvpdpbusd %[b], %[a], %%zmm13\n\t"
      "vpdpbusd %[b], %[a], %%zmm14\n\tvpdpbusd %[b], %[a], %%zmm15\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : [n] "+r"(n)
      : [a] "v"(a), [b] "v"(b)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc");
  return iterations;
}

}  // namespace lucidq_bench
