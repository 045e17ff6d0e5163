// The AVX-VNNI inner loop of the int8 peak micro-benchmark (this file alone gets -mavxvnni).
#include <immintrin.h>

#include <cstdint>

#include "int8_peak.hpp"

namespace lucidq_bench {

// 12 independent VEX ymm vpdpbusd chains (u8 × s8, 32 multiply-adds each) per iteration, as
// many accumulators as lucidq's AVX-VNNI register tile, in assembly so the compiler can neither
// hoist nor add register moves.
std::int64_t int8_peak_loop_avx_vnni(std::int64_t iterations, std::int32_t seed) {
  if (iterations < 1) return 0;
  const __m256i a = _mm256_set1_epi32(seed), b = _mm256_set1_epi32(seed ^ 0x01020304);
  std::int64_t n = iterations;
  asm volatile(
      "vpxor %%ymm0, %%ymm0, %%ymm0\n\t"
      "vmovdqa %%ymm0, %%ymm1\n\tvmovdqa %%ymm0, %%ymm2\n\tvmovdqa %%ymm0, %%ymm3\n\t"
      "vmovdqa %%ymm0, %%ymm4\n\tvmovdqa %%ymm0, %%ymm5\n\tvmovdqa %%ymm0, %%ymm6\n\t"
      "vmovdqa %%ymm0, %%ymm7\n\tvmovdqa %%ymm0, %%ymm8\n\tvmovdqa %%ymm0, %%ymm9\n\t"
      "vmovdqa %%ymm0, %%ymm10\n\tvmovdqa %%ymm0, %%ymm11\n\t"
      ".p2align 5\n"
      "1:\n\t"
      "%{vex%} vpdpbusd %[b], %[a], %%ymm0\n\t%{vex%} vpdpbusd %[b], %[a], %%ymm1\n\t"
      "%{vex%} vpdpbusd %[b], %[a], %%ymm2\n\t%{vex%} vpdpbusd %[b], %[a], %%ymm3\n\t"
      "%{vex%} vpdpbusd %[b], %[a], %%ymm4\n\t%{vex%} vpdpbusd %[b], %[a], %%ymm5\n\t"
      "%{vex%} vpdpbusd %[b], %[a], %%ymm6\n\t%{vex%} vpdpbusd %[b], %[a], %%ymm7\n\t"
      "%{vex%} vpdpbusd %[b], %[a], %%ymm8\n\t%{vex%} vpdpbusd %[b], %[a], %%ymm9\n\t"
      "%{vex%} vpdpbusd %[b], %[a], %%ymm10\n\t%{vex%} vpdpbusd %[b], %[a], %%ymm11\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : [n] "+r"(n)
      : [a] "x"(a), [b] "x"(b)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
        "xmm11", "cc");
  return iterations;
}

}  // namespace lucidq_bench
