// AVX-VNNI GEMM kernel (256-bit vpdpbusd): register tiles of up to 4 rows × 24 channels.
//
// A slice of ≤ 3 panels is 6 vectors of 8 channels (panel p's channels 0-7, then 8-15); each
// 4-row group runs two register tiles over it, of 3 vectors each: 12 accumulators, 3 weight
// vectors and one broadcast activation quad fill the 16 ymm registers, and each k group costs
// 7 loads per 12 vpdpbusd. vpdpbusd sums u8 × s8 products in int32, so it is exact for every
// code. Measurements: docs/performance.md, "Int8 GEMM".
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "kernels/gemm_int8.hpp"

namespace lucid::quantization::kernels {
namespace {

constexpr int tile_rows = 4;     // rows per register tile
constexpr int tile_vectors = 3;  // 8-channel vectors per register tile
constexpr int slice_panels = 3;  // panels per slice: 6 vectors, two register tiles

// Four codes of a row starting at `p`, as one 32-bit lane value.
inline std::int32_t load4(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Adds `groups` k groups of the full 4-row × 3-vector tile to out (row r, vector v at
// out[8 (3r + v)]), in assembly: with 12 accumulators, 3 weight vectors and the broadcast
// activations all 16 ymm registers are in use, and GCC's allocator spilled accumulators to the
// stack in every k group of the intrinsic version (docs/kernels.md, "Int8 GEMM kernels"). Row r's
// codes start at a[r], vector v's weights at w[v], its groups 64 bytes apart.
#define LUCIDQ_VNNI_ROW(r, c0, c1, c2, flip_step)          \
  "vpbroadcastd (%[a" #r "],%[ka]), %%ymm15\n\t" flip_step \
  "%{vex%} vpdpbusd %%ymm12, %%ymm15, %%ymm" #c0           \
  "\n\t"                                                   \
  "%{vex%} vpdpbusd %%ymm13, %%ymm15, %%ymm" #c1           \
  "\n\t"                                                   \
  "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm" #c2 "\n\t"
#define LUCIDQ_VNNI_LOOP(flip_step) \
  "vmovdqu 0(%[out]), %%ymm0\n\tvmovdqu 32(%[out]), %%ymm1\n\t"                             \
  "vmovdqu 64(%[out]), %%ymm2\n\tvmovdqu 96(%[out]), %%ymm3\n\t"                            \
  "vmovdqu 128(%[out]), %%ymm4\n\tvmovdqu 160(%[out]), %%ymm5\n\t"                          \
  "vmovdqu 192(%[out]), %%ymm6\n\tvmovdqu 224(%[out]), %%ymm7\n\t"                          \
  "vmovdqu 256(%[out]), %%ymm8\n\tvmovdqu 288(%[out]), %%ymm9\n\t"                          \
  "vmovdqu 320(%[out]), %%ymm10\n\tvmovdqu 352(%[out]), %%ymm11\n\t"                        \
  ".p2align 5\n"                                                                             \
  "1:\n\t"                                                                                   \
  "vmovdqa (%[p0],%[kw]), %%ymm12\n\t"                                                       \
  "vmovdqa (%[p1],%[kw]), %%ymm13\n\t"                                                       \
  "vmovdqa (%[p2],%[kw]), %%ymm14\n\t" LUCIDQ_VNNI_ROW(0, 0, 1, 2, flip_step)                \
      LUCIDQ_VNNI_ROW(1, 3, 4, 5, flip_step) LUCIDQ_VNNI_ROW(2, 6, 7, 8, flip_step)           \
          LUCIDQ_VNNI_ROW(3, 9, 10, 11, flip_step)                                            \
  "add $4, %[ka]\n\t"                                                                        \
  "add $64, %[kw]\n\t"                                                                       \
  "dec %[n]\n\t"                                                                             \
  "jnz 1b\n\t"                                                                               \
  "vmovdqu %%ymm0, 0(%[out])\n\tvmovdqu %%ymm1, 32(%[out])\n\t"                             \
  "vmovdqu %%ymm2, 64(%[out])\n\tvmovdqu %%ymm3, 96(%[out])\n\t"                            \
  "vmovdqu %%ymm4, 128(%[out])\n\tvmovdqu %%ymm5, 160(%[out])\n\t"                          \
  "vmovdqu %%ymm6, 192(%[out])\n\tvmovdqu %%ymm7, 224(%[out])\n\t"                          \
  "vmovdqu %%ymm8, 256(%[out])\n\tvmovdqu %%ymm9, 288(%[out])\n\t"                          \
  "vmovdqu %%ymm10, 320(%[out])\n\tvmovdqu %%ymm11, 352(%[out])\n\t"
#define LUCIDQ_VNNI_OPERANDS                                                                 \
  : [ka] "+r"(a_offset), [kw] "+r"(w_offset), [n] "+r"(groups), "+m"(*out)                   \
  : [a0] "r"(a[0]), [a1] "r"(a[1]), [a2] "r"(a[2]), [a3] "r"(a[3]), [p0] "r"(w[0]),          \
    [p1] "r"(w[1]), [p2] "r"(w[2]), [out] "r"(out->data()), [flip] "m"(flip_codes)           \
  : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",   \
    "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory"

template <bool Flip>
void full_tile_groups(const std::uint8_t* const (&a)[tile_rows],
                      const std::array<const std::int8_t*, tile_vectors>& w, std::int64_t groups,
                      std::array<std::int32_t, 8 * tile_rows * tile_vectors>* out) {
  if (groups < 1) return;
  alignas(32) static constexpr std::uint32_t flip_codes[8] = {0x80808080u, 0x80808080u, 0x80808080u,
                                                              0x80808080u, 0x80808080u, 0x80808080u,
                                                              0x80808080u, 0x80808080u};
  std::int64_t a_offset = 0, w_offset = 0;
  if constexpr (Flip) {
    asm volatile(LUCIDQ_VNNI_LOOP("vpxor %[flip], %%ymm15, %%ymm15\n\t") LUCIDQ_VNNI_OPERANDS);
  } else {
    asm volatile(LUCIDQ_VNNI_LOOP("") LUCIDQ_VNNI_OPERANDS);
  }
}
#undef LUCIDQ_VNNI_OPERANDS
#undef LUCIDQ_VNNI_LOOP
#undef LUCIDQ_VNNI_ROW

// acc[r][8v .. 8v + 7] = Σ_k a[row + r][k] · w[channel][k] − z[row + r] · column_sums for R rows
// and C vectors; vector v's groups start at w[v] and are 64 bytes apart (its panel's stride).
template <int R, int C, bool Flip>
void register_tile(const igemm::GemmBlock& b, std::int64_t row,
                   const std::array<const std::int8_t*, tile_vectors>& w,
                   const std::int32_t* column_sums, std::int32_t* acc) {
  __m256i c[R][C];
  const std::uint8_t* a[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
    a[r] = b.a + (row + r) * b.a_stride;
  const std::int64_t full = b.k / 4;
  // The k % 4 tail comes from zero-padded copies (never read past a row), against zero weights.
  alignas(16) std::uint8_t tails[4 * tile_rows] = {};
  const auto point_rows_at_tails = [&] {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      std::memcpy(tails + 4 * r, a[r] + 4 * full, static_cast<std::size_t>(b.k % 4));
      a[r] = tails + 4 * r;
    }
  };
  if constexpr (R == tile_rows && C == tile_vectors) {
    alignas(32) std::array<std::int32_t, 8 * tile_rows * tile_vectors> sums{};
    full_tile_groups<Flip>(a, w, full, &sums);
    if (b.k % 4 != 0) {
      point_rows_at_tails();
      const std::array<const std::int8_t*, tile_vectors> w_tail = {
          w[0] + 64 * full, w[1] + 64 * full, w[2] + 64 * full};
      full_tile_groups<Flip>(a, w_tail, 1, &sums);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
      for (int v = 0; v < C; ++v)
        c[r][v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(&sums[8 * (C * r + v)]));
  } else {
    const __m256i flip = _mm256_set1_epi32(static_cast<std::int32_t>(0x80808080u));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
      for (int v = 0; v < C; ++v)
        c[r][v] = _mm256_setzero_si256();
    const auto step = [&](std::int64_t group, std::int64_t offset) {
      __m256i wv[C];
#pragma GCC unroll 3
      for (int v = 0; v < C; ++v)
        wv[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(w[v] + 64 * group));
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        __m256i av = _mm256_set1_epi32(load4(a[r] + offset));
        if constexpr (Flip) av = _mm256_xor_si256(av, flip);
#pragma GCC unroll 3
        for (int v = 0; v < C; ++v)
          c[r][v] = _mm256_dpbusd_avx_epi32(c[r][v], av, wv[v]);
      }
    };
    for (std::int64_t g = 0; g < full; ++g)
      step(g, 4 * g);
    if (b.k % 4 != 0) {
      point_rows_at_tails();
      step(full, 0);
    }
  }
#pragma GCC unroll 3
  for (int v = 0; v < C; ++v) {
    const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(column_sums + 8 * v));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256i z = _mm256_set1_epi32(b.zero_points[row + r]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * b.acc_stride + 8 * v),
                          _mm256_sub_epi32(c[r][v], _mm256_mullo_epi32(z, sums)));
    }
  }
}

using TileFn = void (*)(const igemm::GemmBlock&, std::int64_t,
                        const std::array<const std::int8_t*, tile_vectors>&, const std::int32_t*,
                        std::int32_t*);

template <bool Flip, int R, std::size_t... C>
constexpr std::array<TileFn, sizeof...(C)> tiles_of_rows(std::index_sequence<C...>) {
  return {register_tile<R, static_cast<int>(C) + 1, Flip>...};
}
template <bool Flip, std::size_t... R>
constexpr std::array<std::array<TileFn, tile_vectors>, sizeof...(R)> all_tiles(
    std::index_sequence<R...>) {
  return {
      tiles_of_rows<Flip, static_cast<int>(R) + 1>(std::make_index_sequence<tile_vectors>())...};
}
// tiles[r − 1][c − 1]: the register tile of r rows × c vectors.
template <bool Flip>
constexpr auto tiles = all_tiles<Flip>(std::make_index_sequence<tile_rows>());

template <bool Flip>
void run(const igemm::GemmBlock& b) {
  const std::int64_t panel_stride = igemm::panel_bytes(b.k);
  for (std::int64_t p0 = 0; p0 < b.panel_count; p0 += slice_panels) {
    const int vectors =
        2 * static_cast<int>(std::min<std::int64_t>(slice_panels, b.panel_count - p0));
    for (std::int64_t row = 0; row < b.rows; row += tile_rows) {
      const int r = static_cast<int>(std::min<std::int64_t>(tile_rows, b.rows - row));
      for (int v0 = 0; v0 < vectors; v0 += tile_vectors) {
        const int c = std::min(tile_vectors, vectors - v0);
        std::array<const std::int8_t*, tile_vectors> w{};
        for (int v = 0; v < c; ++v) {
          const int vector = v0 + v;  // panel vector / 2, half vector % 2
          w[v] = b.panels + (p0 + vector / 2) * panel_stride + 32 * (vector % 2);
        }
        const std::int64_t channel = igemm::panel_width * p0 + 8 * v0;
        tiles<Flip>[r - 1][c - 1](b, row, w, b.column_sums + channel,
                                  b.acc + row * b.acc_stride + channel);
      }
    }
  }
}

}  // namespace

void gemm_u8s8_i32_16c4__avx_vnni(const igemm::GemmBlock& b) {
  if (b.flip) {
    run<true>(b);
  } else {
    run<false>(b);
  }
}

}  // namespace lucid::quantization::kernels
