// AVX-512 VNNI int8-activation weight-only kernel for a few rows: codes decoded in registers.
//
// The decoding-time product (M = 1 … 8): every 64-byte code block is loaded once, turned into
// int8 operands in registers (int4: and / shift / and, plus one vpshufb per half for the
// signed grid; int8: vpermd + vpshufb) and multiplied with vpdpbusd into one int32
// accumulator per (row, panel) for the group; no scratch, so the weights stream from memory
// exactly once per call for M ≤ 4 (for M = 5 … 8 the second block of rows finds its 4 panels
// in L2). Blocks of up to 4 rows × 4 panels (64 channels): four independent weight streams
// per pass, each prefetched `prefetch_bytes` ahead into L1. The group flush and the end of the
// product are int8_stage's, the same float operations in the same order as
// int8_panels_reference, so results are bit-identical to the M ≥ 16 tile kernel and the
// reference.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx512/weight_only_int8_stage.hpp"

namespace lucid::quantization::weight_only {
namespace {

constexpr int max_rows = 4;
// Bytes ahead of the block being decoded that each panel stream asks the prefetcher for.
constexpr std::int64_t prefetch_bytes = 2048;

inline __m512i broadcast4(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Rows [row0, row0 + R) × panels [panel0, panel0 + panels), panels ≤ gemv_panels; the missing
// panels are computed on the last one's codes and not stored.
template <int Bits, bool Symmetric, int R>
void rows_block(const Int8Args& a, std::int64_t panel0, int panels, std::int64_t row0) {
  constexpr int P = static_cast<int>(gemv_panels);
  const PackedView& v = a.w;
  const std::uint8_t* base[P];
  for (int p = 0; p < P; ++p)
    base[p] = v.record(panel0 + std::min(p, panels - 1), 0);
  const std::uint8_t* xq[R];
  for (int r = 0; r < R; ++r)
    xq[r] = a.xq + (row0 + r) * a.xq_stride;
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p)
      acc[r][p] = _mm512_setzero_ps();

  for (std::int64_t j = 0; j < v.groups; ++j) {
    const std::int64_t len = v.padded_length(j);
    const std::int64_t k0 = j * v.group_length;
    const std::int64_t offset = j * v.record_bytes;
    __m512i dot[R][P];
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p)
        dot[r][p] = _mm512_setzero_si512();
    if constexpr (Bits == 4) {
      for (std::int64_t b = 0; b < len / 8; ++b) {
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) {
          const std::uint8_t* w = base[p] + offset + 64 * b;
          _mm_prefetch(reinterpret_cast<const char*>(w + prefetch_bytes), _MM_HINT_T0);
          __m512i low, high;
          int8_stage::decode_int4<Symmetric>(_mm512_load_si512(w), low, high);
#pragma GCC unroll 4
          for (int r = 0; r < R; ++r) {
            const std::uint8_t* x = xq[r] + k0 + 8 * b;
            dot[r][p] = _mm512_dpbusd_epi32(dot[r][p], broadcast4(x), low);
            dot[r][p] = _mm512_dpbusd_epi32(dot[r][p], broadcast4(x + 4), high);
          }
        }
      }
    } else {
      for (std::int64_t b = 0; b < len / 4; ++b) {
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) {
          const std::uint8_t* w = base[p] + offset + 64 * b;
          _mm_prefetch(reinterpret_cast<const char*>(w + prefetch_bytes), _MM_HINT_T0);
          const __m512i codes = int8_stage::decode_int8<Symmetric>(_mm512_load_si512(w));
#pragma GCC unroll 4
          for (int r = 0; r < R; ++r)
            dot[r][p] = _mm512_dpbusd_epi32(dot[r][p], broadcast4(xq[r] + k0 + 4 * b), codes);
        }
      }
    }
    const std::int64_t meta_offset = offset + v.code_bytes(len);
    for (int p = 0; p < P; ++p) {
      const std::uint8_t* meta = base[p] + meta_offset;
      const __m512 scales = int8_stage::load_scales(v, meta);
      const __m512 scaled_zw = int8_stage::scaled_zero_points<Bits, Symmetric>(v, meta, scales);
      for (int r = 0; r < R; ++r) {
        const float group_sum = Symmetric ? 0.0f : a.x_group_sums[(row0 + r) * v.groups + j];
        acc[r][p] =
            int8_stage::flush<Symmetric>(acc[r][p], scales, dot[r][p], scaled_zw, group_sum);
      }
    }
  }
  for (int p = 0; p < panels; ++p)
    for (int r = 0; r < R; ++r)
      int8_stage::finish(a, row0 + r, (panel0 + p) * panel_width, acc[r][p]);
}

template <int Bits, bool Symmetric>
void run(const Int8Args& a, std::int64_t panel_begin, std::int64_t panel_end) {
  for (std::int64_t panel = panel_begin; panel < panel_end; panel += gemv_panels) {
    const int panels = static_cast<int>(std::min(gemv_panels, panel_end - panel));
    for (std::int64_t row0 = 0; row0 < a.m; row0 += max_rows) {
      switch (std::min<std::int64_t>(max_rows, a.m - row0)) {
        case 1:
          rows_block<Bits, Symmetric, 1>(a, panel, panels, row0);
          break;
        case 2:
          rows_block<Bits, Symmetric, 2>(a, panel, panels, row0);
          break;
        case 3:
          rows_block<Bits, Symmetric, 3>(a, panel, panels, row0);
          break;
        default:
          rows_block<Bits, Symmetric, 4>(a, panel, panels, row0);
          break;
      }
    }
  }
}

}  // namespace

void int8_gemv_avx512_vnni(const Int8Args& a, std::int64_t panel_begin, std::int64_t panel_end) {
  if (a.w.bits == 4) {
    if (a.w.symmetric) {
      run<4, true>(a, panel_begin, panel_end);
    } else {
      run<4, false>(a, panel_begin, panel_end);
    }
  } else if (a.w.symmetric) {
    run<8, true>(a, panel_begin, panel_end);
  } else {
    run<8, false>(a, panel_begin, panel_end);
  }
}

}  // namespace lucid::quantization::weight_only
