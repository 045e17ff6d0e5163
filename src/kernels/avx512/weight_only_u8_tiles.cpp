// AVX-512 VNNI int8-activation weight-only kernel for int8 codes and many rows: decoded tiles.
//
// Used for int8 weights above 64 rows (fewer rows, and int4 weights at any M:
// weight_only_u8_regs.cpp, which measured faster there). Each tile of 3 panels (48 channels)
// is first decoded into a scratch buffer (k_padded · 48 bytes), once for all M rows; then 8 rows at
// a time run over it with 24 int32 accumulators named one by one (GCC spills an array of them). Per
// group j the accumulators restart from 0, take Σ_{k in j} xq · w8 exactly (vpdpbusd, u8 × s8,
// wrapping int32 adds: the true sum fits for groups ≤ 65536), and are flushed into float
// accumulators kept in a small stack tile, in exactly the order of weight_only_u8_16c__reference
// (src/kernels/reference/weight_only.cpp):
//   acc = fma(s, float(dot), acc); affine: acc = fnmadd(fl(s · zw), X'[r, j], acc)
// and after the last group acc = fnmadd(z_x, C, acc), y = fma(s_x, acc, bias).
// Decode: a block is 4 k × 16 channels, transposed to 16 channels × 4 k by vpermd + vpshufb
// (int8_stage::decode_int8).
// Rows and panels past the end are computed on clamped pointers and not stored.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx512/weight_only_u8_stage.hpp"

namespace lucid::quantization::weight_only {
namespace {

constexpr int tile_rows = 8;
constexpr int tile_panels = static_cast<int>(u8_tiles_block_panels);
// Bytes ahead of the block being decoded that each step asks the prefetcher for (the packed
// weights stream from memory once per call).
constexpr std::int64_t prefetch_bytes = 2048;

inline std::int32_t load4(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Decodes panels [panel0, panel0 + 3) (clamped to `panels`) into `scratch`: per panel
// k_padded / 4 vectors of 64 bytes, vector i holding 16 channels × 4 int8 codes in the order of
// activation bytes [4i, 4i + 4) (the block transposed to channel-major).
template <bool Symmetric>
void decode_tile(const PackedView& v, std::int64_t panel0, int panels, std::uint8_t* scratch) {
  const std::int64_t panel_vectors = v.k_padded / 4;
  for (int p = 0; p < tile_panels; ++p) {
    const std::int64_t panel = panel0 + std::min(p, panels - 1);
    auto* out = reinterpret_cast<__m512i*>(scratch) + p * panel_vectors;
    for (std::int64_t j = 0; j < v.groups; ++j) {
      const std::uint8_t* rec = v.record(panel, j);
      const std::int64_t len = v.padded_length(j);
      __m512i* dst = out + j * v.group_length / 4;
      for (std::int64_t b = 0; b < len / 4; ++b) {
        _mm_prefetch(reinterpret_cast<const char*>(rec + 64 * b + prefetch_bytes), _MM_HINT_T0);
        _mm512_store_si512(dst + b,
                           int8_stage::decode_int8<Symmetric>(_mm512_loadu_si512(rec + 64 * b)));
      }
    }
  }
}

#define LUCIDQ_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

// dot[r][16p + c] = Σ_i xq_r[4i .. 4i + 4) · w_p[i] over `count` vectors, for 8 rows and 3
// panels. A function of its own with one named accumulator per (row, panel) and a single loop,
// the shape in which GCC keeps all 24 in registers (as gemm_vnni.cpp does). (Measured: doing
// the group's float flush in here as well makes GCC spill the loop, 25 % slower.)
__attribute__((noinline)) void group_dot(const std::uint8_t* const* rows, std::int64_t offset,
                                         const std::uint8_t* w0, std::int64_t panel_bytes,
                                         std::int64_t count, std::int32_t* dot) {
  const std::uint8_t* w1 = w0 + panel_bytes;
  const std::uint8_t* w2 = w1 + panel_bytes;
#define LUCIDQ_DECLARE(r)                                                         \
  __m512i c##r##0 = _mm512_setzero_si512(), c##r##1 = c##r##0, c##r##2 = c##r##0; \
  const std::uint8_t* a##r = rows[r] + offset;
  LUCIDQ_ROWS(LUCIDQ_DECLARE)
#undef LUCIDQ_DECLARE
#define LUCIDQ_STEP(r)                                 \
  {                                                    \
    const __m512i av = _mm512_set1_epi32(load4(a##r)); \
    c##r##0 = _mm512_dpbusd_epi32(c##r##0, av, v0);    \
    c##r##1 = _mm512_dpbusd_epi32(c##r##1, av, v1);    \
    c##r##2 = _mm512_dpbusd_epi32(c##r##2, av, v2);    \
    a##r += 4;                                         \
  }
#pragma GCC unroll 2
  for (; count > 0; --count) {
    const __m512i v0 = _mm512_load_si512(w0);
    const __m512i v1 = _mm512_load_si512(w1);
    const __m512i v2 = _mm512_load_si512(w2);
    w0 += 64;
    w1 += 64;
    w2 += 64;
    LUCIDQ_ROWS(LUCIDQ_STEP)
  }
#undef LUCIDQ_STEP
#define LUCIDQ_STORE(r)                           \
  _mm512_store_si512(dot + 48 * r, c##r##0);      \
  _mm512_store_si512(dot + 48 * r + 16, c##r##1); \
  _mm512_store_si512(dot + 48 * r + 32, c##r##2);
  LUCIDQ_ROWS(LUCIDQ_STORE)
#undef LUCIDQ_STORE
}

// One tile: rows [row0, row0 + rows) × the decoded panels [panel0, panel0 + panels), rows ≤ 8.
template <bool Symmetric>
void tile(const Int8Args& a, const std::uint8_t* scratch, std::int64_t panel0, int panels,
          std::int64_t row0, int rows) {
  const PackedView& v = a.w;
  const std::int64_t p1 = panel0 + std::min(1, panels - 1);
  const std::int64_t p2 = panel0 + std::min(2, panels - 1);
  const std::int64_t panel_bytes = v.k_padded / 4 * 64;
  alignas(64) float facc[tile_rows][tile_panels * 16] = {};
  alignas(64) std::int32_t dot[tile_rows][tile_panels * 16];
  const std::uint8_t* row_ptr[tile_rows];
  for (int r = 0; r < tile_rows; ++r)
    row_ptr[r] = a.xq + (row0 + std::min(r, rows - 1)) * a.xq_stride;
  for (std::int64_t j = 0; j < v.groups; ++j) {
    const std::int64_t len = v.padded_length(j);
    const std::int64_t k0 = j * v.group_length;
    group_dot(row_ptr, k0, scratch + k0 * 16, panel_bytes, len / 4, &dot[0][0]);
    // Flush: acc = fma(s, float(dot), acc); affine: acc = fnmadd(fl(s · zw), X'[r, j], acc).
    const std::uint8_t* m0 = v.record(panel0, j) + v.code_bytes(len);
    const std::uint8_t* m1 = v.record(p1, j) + v.code_bytes(len);
    const std::uint8_t* m2 = v.record(p2, j) + v.code_bytes(len);
    const __m512 s0 = load_group_scales(v, m0);
    const __m512 s1 = load_group_scales(v, m1);
    const __m512 s2 = load_group_scales(v, m2);
    const __m512 z0 = int8_stage::scaled_zero_points<8, Symmetric>(v, m0, s0);
    const __m512 z1 = int8_stage::scaled_zero_points<8, Symmetric>(v, m1, s1);
    const __m512 z2 = int8_stage::scaled_zero_points<8, Symmetric>(v, m2, s2);
#define LUCIDQ_FLUSH_ONE(r, p)                                                  \
  _mm512_store_ps(facc[r] + 16 * p, int8_stage::flush<Symmetric>(               \
                                        _mm512_load_ps(facc[r] + 16 * p), s##p, \
                                        _mm512_load_si512(dot[r] + 16 * p), z##p, group_sum));
#define LUCIDQ_FLUSH(r)                                                                   \
  {                                                                                       \
    const float group_sum =                                                               \
        Symmetric ? 0.0f : a.x_group_sums[(row0 + std::min(r, rows - 1)) * v.groups + j]; \
    LUCIDQ_FLUSH_ONE(r, 0) LUCIDQ_FLUSH_ONE(r, 1) LUCIDQ_FLUSH_ONE(r, 2)                  \
  }
    LUCIDQ_ROWS(LUCIDQ_FLUSH)
#undef LUCIDQ_FLUSH
#undef LUCIDQ_FLUSH_ONE
  }
  for (int p = 0; p < panels; ++p) {
    for (int r = 0; r < rows; ++r)
      int8_stage::finish(a, row0 + r, (panel0 + p) * panel_width, _mm512_load_ps(facc[r] + 16 * p));
  }
}
#undef LUCIDQ_ROWS

// Each tile of 3 panels is decoded once for all M rows, then walked in blocks of 8 rows.
template <bool Symmetric>
void run(const Int8Args& a, std::int64_t panel_begin, std::int64_t panel_end) {
  for (std::int64_t panel = panel_begin; panel < panel_end; panel += tile_panels) {
    const int panels = static_cast<int>(std::min<std::int64_t>(tile_panels, panel_end - panel));
    decode_tile<Symmetric>(a.w, panel, panels, a.scratch);
    for (std::int64_t row0 = 0; row0 < a.m; row0 += tile_rows) {
      const int rows = static_cast<int>(std::min<std::int64_t>(tile_rows, a.m - row0));
      tile<Symmetric>(a, a.scratch, panel, panels, row0, rows);
    }
  }
}

}  // namespace

void weight_only_u8_tiles_48c__avx512_vnni(const Int8Args& a, std::int64_t panel_begin,
                                           std::int64_t panel_end) {
  if (a.w.symmetric) {
    run<true>(a, panel_begin, panel_end);
  } else {
    run<false>(a, panel_begin, panel_end);
  }
}

}  // namespace lucid::quantization::weight_only
