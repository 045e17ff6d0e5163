// AVX-512 VNNI GEMM kernel (vpdpbusd): register tiles of up to 8 rows × 48 channels.
//
// Prefetching: each panel stream is prefetched twice per 64-byte group, prefetcht0 2 KiB ahead
// (into L1) and prefetcht1 8 KiB ahead (into L2, where the core keeps more misses in flight than
// L1's miss buffers allow). For M = 9..16 the second (L2) pass over a slice prefetches the next
// slice into L2 instead, for slices of at most 256 KiB (two must fit L2); for small M the last
// pass over a slice prefetches the first 8 KiB of the next slice's panels, which otherwise start
// cold. Tile shapes for M = 9..16: the 8-row tile runs twice over each 3-panel slice, the second
// pass from L2 (taller tiles alias in L1 and stream 16 · K activation bytes from L2 per panel).
// The measurements behind each choice: docs/performance.md, "Int8 GEMM".
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_int8.hpp"

namespace lucid::quantization::kernels {
namespace {

constexpr int max_rows = 8;    // rows per micro-tile
constexpr int max_panels = 3;  // 16-channel panels per micro-tile
// Bytes ahead of each panel stream that the loop prefetches into L1 and into L2 (a prefetch
// past the last panel does not fault; measurements at the top of the file). With L3-resident
// weights M = 8..16 ran 10-15 % faster with the L1 prefetch, M = 4 about 8 %; the L2 prefetch
// is what keeps DRAM-bound shapes streaming at small M. 6 panels at a time for M <= 4 were no
// better (with a 4 KiB L1 prefetch).
constexpr std::int64_t prefetch_l1_distance = 2048;
constexpr std::int64_t prefetch_l2_distance = 8192;

// Prefetches the group prefetch_l1_distance bytes past `w` into L1 (prefetcht0) and the one
// `far` bytes past it (prefetch_l2_distance, or the next slice of panels) into L2 (prefetcht1).
inline void prefetch(const std::int8_t* w, std::int64_t far) {
  __builtin_prefetch(w + prefetch_l1_distance, 0, 3);
  __builtin_prefetch(w + far, 0, 2);
}

// Four codes of a row starting at `p`, as one 32-bit lane value.
inline std::int32_t load4(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The micro-tile: R ≤ 8 rows × P ≤ 3 panels with one named accumulator per
// (row, panel): GCC keeps these 24 zmm values in registers, where an array of them
// would be spilled to the stack on every k-group. (Measured alternatives that were no
// faster: blocking K into L1-sized pieces; for M ≤ 4, one panel at a time with
// several accumulator sets per row.) Each panel stream prefetches `far` bytes ahead into L2,
// and `far_last` bytes ahead over its last `far` bytes of groups.
#define LUCIDQ_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
template <int R, int P, bool Flip>
void wide_tile(const igemm::GemmBlock& b, std::int64_t row, const std::int8_t* panels,
               std::int64_t panel_stride, std::int64_t far, std::int64_t far_last,
               const std::int32_t* column_sums, std::int32_t* acc) {
  const __m512i flip = _mm512_set1_epi32(static_cast<std::int32_t>(0x80808080u));
  const std::int8_t* w0 = panels;
  const std::int8_t* w1 = panels + (P > 1 ? panel_stride : 0);
  const std::int8_t* w2 = panels + (P > 2 ? 2 * panel_stride : 0);
#define LUCIDQ_DECLARE(r)                                                         \
  __m512i c##r##0 = _mm512_setzero_si512(), c##r##1 = c##r##0, c##r##2 = c##r##0; \
  const std::uint8_t* a##r = b.a + (row + (r < R ? r : 0)) * b.a_stride;
  LUCIDQ_ROWS(LUCIDQ_DECLARE)
#undef LUCIDQ_DECLARE
#define LUCIDQ_STEP(r)                                                   \
  if constexpr (r < R) {                                                 \
    __m512i av = _mm512_set1_epi32(load4(a##r));                         \
    if constexpr (Flip) av = _mm512_xor_si512(av, flip);                 \
    c##r##0 = _mm512_dpbusd_epi32(c##r##0, av, v0);                      \
    if constexpr (P > 1) c##r##1 = _mm512_dpbusd_epi32(c##r##1, av, v1); \
    if constexpr (P > 2) c##r##2 = _mm512_dpbusd_epi32(c##r##2, av, v2); \
    a##r += 4;                                                           \
  }
  // One copy of the loop body (a second would make GCC spill the accumulators): the last
  // groups (new L2 prefetch distance) and the k % 4 tail (rows pointed at zero-padded
  // copies) run as further passes through it.
  alignas(64) std::uint8_t tails[4 * max_rows] = {};
  const std::int64_t full = b.k / 4;
  const std::int64_t last_groups = far_last == far ? 0 : std::min(full, far / 64);
  std::int64_t count = full - last_groups;
  for (int pass = 0;; ++pass) {
    if (pass == 1) {
      far = far_last;
      count = last_groups;
    }
#pragma GCC unroll 2
    for (; count > 0; --count) {
      const __m512i v0 = _mm512_load_si512(w0);
      const __m512i v1 = _mm512_load_si512(w1);
      const __m512i v2 = _mm512_load_si512(w2);
      prefetch(w0, far);
      if constexpr (P > 1) prefetch(w1, far);
      if constexpr (P > 2) prefetch(w2, far);
      w0 += 64;
      w1 += 64;
      w2 += 64;
      LUCIDQ_ROWS(LUCIDQ_STEP)
    }
    if (pass == 0) continue;
    if (pass > 1 || b.k % 4 == 0) break;
      // Padding bytes meet zero weights, so their (flipped) value does not matter.
#define LUCIDQ_TAIL(r)                                                   \
  if constexpr (r < R) {                                                 \
    std::memcpy(tails + 4 * r, a##r, static_cast<std::size_t>(b.k % 4)); \
    a##r = tails + 4 * r;                                                \
  }
    LUCIDQ_ROWS(LUCIDQ_TAIL)
#undef LUCIDQ_TAIL
    count = 1;
  }
#undef LUCIDQ_STEP
  const __m512i s0 = _mm512_loadu_si512(column_sums);
  const __m512i s1 = P > 1 ? _mm512_loadu_si512(column_sums + 16) : s0;
  const __m512i s2 = P > 2 ? _mm512_loadu_si512(column_sums + 32) : s0;
#define LUCIDQ_STORE(r)                                                                    \
  if constexpr (r < R) {                                                                   \
    const __m512i z = _mm512_set1_epi32(b.zero_points[row + r]);                           \
    std::int32_t* out = acc + r * b.acc_stride;                                            \
    _mm512_storeu_si512(out, _mm512_sub_epi32(c##r##0, _mm512_mullo_epi32(z, s0)));        \
    if constexpr (P > 1)                                                                   \
      _mm512_storeu_si512(out + 16, _mm512_sub_epi32(c##r##1, _mm512_mullo_epi32(z, s1))); \
    if constexpr (P > 2)                                                                   \
      _mm512_storeu_si512(out + 32, _mm512_sub_epi32(c##r##2, _mm512_mullo_epi32(z, s2))); \
  }
  LUCIDQ_ROWS(LUCIDQ_STORE)
#undef LUCIDQ_STORE
}
#undef LUCIDQ_ROWS

// For M = 9..16 the second row pass over a slice of panels reads them from L2 while DRAM
// idles: its L2 prefetch fetches the same place in the next slice instead (the next slice's
// first pass then reads L2), when two slices fit in L2 alongside each other.
constexpr std::int64_t max_next_slice_bytes = 256 * 1024;

template <int P, bool Flip>
void rows_of(const igemm::GemmBlock& b, const std::int8_t* panels, std::int64_t panel_stride,
             const std::int32_t* sums, std::int32_t* acc) {
  using Fn = void (*)(const igemm::GemmBlock&, std::int64_t, const std::int8_t*, std::int64_t,
                      std::int64_t, std::int64_t, const std::int32_t*, std::int32_t*);
  static constexpr Fn by_rows[max_rows] = {
      wide_tile<1, P, Flip>, wide_tile<2, P, Flip>, wide_tile<3, P, Flip>, wide_tile<4, P, Flip>,
      wide_tile<5, P, Flip>, wide_tile<6, P, Flip>, wide_tile<7, P, Flip>, wide_tile<8, P, Flip>};
  for (std::int64_t row = 0; row < b.rows; row += max_rows) {
    const std::int64_t rows = std::min<std::int64_t>(max_rows, b.rows - row);
    const std::int64_t next_slice = P * panel_stride;
    const bool second_pass = row == max_rows && b.rows <= 2 * max_rows;
    const std::int64_t far =
        second_pass && next_slice <= max_next_slice_bytes ? next_slice : prefetch_l2_distance;
    // For M <= 16 the last pass over a slice ends by prefetching into L2 the start of the next
    // slice (P panels on), which the next pass would otherwise begin with cold.
    const bool last_pass = row + max_rows >= b.rows && b.rows <= 2 * max_rows;
    const std::int64_t far_last =
        last_pass && far == prefetch_l2_distance ? far + (P - 1) * panel_stride : far;
    by_rows[rows - 1](b, row, panels, panel_stride, far, far_last, sums, acc + row * b.acc_stride);
  }
}

template <bool Flip>
void run(const igemm::GemmBlock& b) {
  const std::int64_t panel_stride = igemm::panel_bytes(b.k);
  for (std::int64_t p = 0; p < b.panel_count; p += max_panels) {
    const std::int8_t* panels = b.panels + p * panel_stride;
    const std::int32_t* sums = b.column_sums + p * igemm::panel_width;
    std::int32_t* acc = b.acc + p * igemm::panel_width;
    switch (std::min<std::int64_t>(max_panels, b.panel_count - p)) {
      case 1:
        rows_of<1, Flip>(b, panels, panel_stride, sums, acc);
        break;
      case 2:
        rows_of<2, Flip>(b, panels, panel_stride, sums, acc);
        break;
      default:
        rows_of<3, Flip>(b, panels, panel_stride, sums, acc);
        break;
    }
  }
}

}  // namespace

void gemm_u8s8_i32_16c4__avx512_vnni(const igemm::GemmBlock& block) {
  if (block.flip) {
    run<true>(block);
  } else {
    run<false>(block);
  }
}

}  // namespace lucid::quantization::kernels
