// The AVX2 inner loop of the int8 peak micro-benchmark (no VNNI): vpmaddubsw + vpmaddwd + vpaddd.
#include <immintrin.h>

#include <cstdint>

#include "int8_peak.hpp"

namespace lucidq_bench {

// 6 independent chains per iteration, each doing 32 u8 × s8 multiply-adds as
// vpmaddubsw (pairs to int16), vpmaddwd by ones (pairs to int32) and vpaddd —
// the sequence int8 GEMM kernels use without VNNI. In assembly so the compiler
// cannot hoist the loop-invariant products.
std::int64_t int8_peak_loop_avx2(std::int64_t iterations, std::int32_t seed) {
  if (iterations < 1) return 0;
  const __m256i a = _mm256_set1_epi32(seed), b = _mm256_set1_epi32(seed ^ 0x01020304);
  const __m256i ones = _mm256_set1_epi16(1);
  std::int64_t n = iterations;
#define LUCIDQ_CHAIN(acc, tmp)                   \
  "vpmaddubsw %t[b], %t[a], %%ymm" #tmp          \
  "\n\t"                                         \
  "vpmaddwd %t[ones], %%ymm" #tmp ", %%ymm" #tmp \
  "\n\t"                                         \
  "vpaddd %%ymm" #tmp ", %%ymm" #acc ", %%ymm" #acc "\n\t"
  asm volatile(
      "vpxor %%ymm0, %%ymm0, %%ymm0\n\tvmovdqa %%ymm0, %%ymm1\n\tvmovdqa %%ymm0, %%ymm2\n\t"
      "vmovdqa %%ymm0, %%ymm3\n\tvmovdqa %%ymm0, %%ymm4\n\tvmovdqa %%ymm0, %%ymm5\n\t"
      ".p2align 5\n"
      "1:\n\t" LUCIDQ_CHAIN(0, 6) LUCIDQ_CHAIN(1, 7) LUCIDQ_CHAIN(2, 8) LUCIDQ_CHAIN(3, 9)
          LUCIDQ_CHAIN(4, 10) LUCIDQ_CHAIN(5, 11)
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : [n] "+r"(n)
      : [a] "x"(a), [b] "x"(b), [ones] "x"(ones)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
        "xmm11", "cc");
#undef LUCIDQ_CHAIN
  return iterations;
}

}  // namespace lucidq_bench
