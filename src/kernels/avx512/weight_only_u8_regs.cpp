// AVX-512 VNNI int8-activation weight-only kernel with the codes decoded in registers.
//
// Every 64-byte code block is loaded once per block of rows, turned into vpdpbusd operands in
// registers and multiplied into one int32 accumulator per (row, panel) for the group; no
// scratch. Rows go in blocks of 8 rows × 2 panels while 8 remain (a decode serves 8 rows),
// the rest in blocks of up to 4 rows × 4 panels (64 channels, four weight streams), so for
// M ≤ 4 the weights stream from memory exactly once per call and further row blocks find their
// panels in L2. The driver uses it for int4 weights at every M and for int8 weights up to 64
// rows (measured: src/weight_only/gemm.cpp, int8_gemv_max_rows).
// int4: the signed grid's nibbles n are taken as unsigned u = n ^ 8 (one vpternlogd per half,
// no table lookup) and each group's dot starts at −8 · Σ xq, which leaves exactly Σ xq · q; the
// unsigned grid's nibbles are used as they are. int8: vpermd + vpshufb transpose
// (int8_stage::decode_int8). On 4 KiB pages each weight stream is prefetched 2 KiB ahead into
// L1 and 6 KiB ahead into L2 (for one block of rows on huge pages the hardware prefetchers do
// better alone, see run()). The group flush and the end of the product are int8_stage's, the
// same float operations in the same order as weight_only_u8_16c__reference, so results are
// bit-identical to it and to the tile kernel.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx512/weight_only_u8_stage.hpp"

namespace lucid::quantization::weight_only {
namespace {

constexpr int max_rows = 4;
// Bytes ahead of the block being decoded that each panel stream asks the prefetcher for.
constexpr std::int64_t prefetch_bytes = 2048;
// ... and into L2 (faster than the L1 prefetch alone on cold weights: docs/performance.md,
// "Weight-only GEMM").
constexpr std::int64_t prefetch_far_bytes = 6144;

// An int4 block as unsigned operands: the signed grid's nibble n becomes u = n ^ 8 = q + 8
// (one vpternlogd: (block ^ 0x08) & 0x0f per byte), the unsigned grid's stays n. The caller
// takes 8 · Σ xq off the group's dot for the signed grid, which leaves exactly Σ xq · q.
template <bool Symmetric>
inline void decode_int4_unsigned(__m512i block, __m512i& low, __m512i& high) {
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  if constexpr (Symmetric) {
    const __m512i eight = _mm512_set1_epi8(0x08);
    constexpr int xor_and = 0x28;  // (a ^ b) & c
    low = _mm512_ternarylogic_epi32(block, eight, nibble, xor_and);
    high = _mm512_ternarylogic_epi32(_mm512_srli_epi16(block, 4), eight, nibble, xor_and);
  } else {
    low = _mm512_and_si512(block, nibble);
    high = _mm512_and_si512(_mm512_srli_epi16(block, 4), nibble);
  }
}

// Prefetches `distance` bytes past position `pos` of a panel stream, into L1 (T0) or L2 (T1);
// past the panel's end, the same place in the panel this stream reads next (`next` bytes on),
// so a new block of panels does not start cold.
template <int Hint>
inline void prefetch_ahead(const std::uint8_t* panel, std::int64_t pos, std::int64_t distance,
                           std::int64_t panel_bytes, std::int64_t next) {
  const std::int64_t target = pos + distance;
  const std::uint8_t* at =
      target < panel_bytes ? panel + target : panel + next + (target - panel_bytes);
  _mm_prefetch(reinterpret_cast<const char*>(at), static_cast<_mm_hint>(Hint));
}

// The code block at `pos` of a panel stream, after the stream's prefetches (when Prefetch).
template <bool Prefetch>
inline const std::uint8_t* block_at(const std::uint8_t* panel, std::int64_t pos,
                                    std::int64_t panel_bytes, std::int64_t next) {
  if constexpr (Prefetch) {
    prefetch_ahead<_MM_HINT_T0>(panel, pos, prefetch_bytes, panel_bytes, next);
    prefetch_ahead<_MM_HINT_T1>(panel, pos, prefetch_far_bytes, panel_bytes, next);
  }
  return panel + pos;
}

inline __m512i broadcast4(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Rows [row0, row0 + R) × panels [panel0, panel0 + panels), panels ≤ P; the missing panels
// are computed on the last one's codes and not stored. Each step decodes the P panels' blocks
// first and then walks the rows with one broadcast register at a time, so R · P accumulators,
// the decoded blocks and a broadcast fit in the 32 registers (R · P = 16, P ≤ 4).
template <int Bits, bool Symmetric, bool Blocks, bool Prefetch, int R, int P>
void rows_block(const Int8Args& a, std::int64_t panel0, int panels, std::int64_t row0) {
  const PackedView& v = a.w;
  const std::uint8_t* base[P];
  for (int p = 0; p < P; ++p)
    base[p] = v.data + (panel0 + std::min(p, panels - 1)) * v.panel_bytes;
  const std::uint8_t* xq[R];
  for (int r = 0; r < R; ++r)
    xq[r] = a.xq + (row0 + r) * a.xq_stride;
  const std::int64_t next = P * v.panel_bytes;  // to the panel each stream reads next
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p)
      acc[r][p] = _mm512_setzero_ps();

  for (std::int64_t j = 0; j < v.groups; ++j) {
    const std::int64_t len = v.padded_length(j);
    const std::int64_t k0 = j * v.group_length;
    const std::int64_t offset = v.record_offset(j);
    // The signed int4 grid's dots start at −8 · Σ xq, so that adding Σ xq · (q + 8) leaves
    // Σ xq · q (wrapping alike in int32); with block-wise activations the signed grids' codes are
    // the unsigned operand u = q + code_offset (8 or 128), and the dot starts at
    // −code_offset · Σ xq.
    __m512i dot[R][P];
    for (int r = 0; r < R; ++r) {
      constexpr std::int32_t code_offset =
          Blocks ? (Symmetric ? (Bits == 4 ? 8 : 128) : 0) : (Bits == 4 && Symmetric ? 8 : 0);
      const __m512i start =
          code_offset != 0
              ? _mm512_set1_epi32(-code_offset * a.xq_group_sums[(row0 + r) * v.groups + j])
              : _mm512_setzero_si512();
      for (int p = 0; p < P; ++p)
        dot[r][p] = start;
    }
    if constexpr (Bits == 4) {
      for (std::int64_t b = 0; b < len / 8; ++b) {
        __m512i low[P], high[P];
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) {
          const std::uint8_t* w = block_at<Prefetch>(base[p], offset + 64 * b, v.panel_bytes, next);
          decode_int4_unsigned<Symmetric>(_mm512_loadu_si512(w), low[p], high[p]);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m512i x = broadcast4(xq[r] + k0 + 8 * b);
#pragma GCC unroll 4
          for (int p = 0; p < P; ++p)
            dot[r][p] = Blocks ? _mm512_dpbusd_epi32(dot[r][p], low[p], x)
                               : _mm512_dpbusd_epi32(dot[r][p], x, low[p]);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m512i x = broadcast4(xq[r] + k0 + 8 * b + 4);
#pragma GCC unroll 4
          for (int p = 0; p < P; ++p)
            dot[r][p] = Blocks ? _mm512_dpbusd_epi32(dot[r][p], high[p], x)
                               : _mm512_dpbusd_epi32(dot[r][p], x, high[p]);
        }
      }
    } else {
      for (std::int64_t b = 0; b < len / 4; ++b) {
        __m512i codes[P];
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) {
          const std::uint8_t* w = block_at<Prefetch>(base[p], offset + 64 * b, v.panel_bytes, next);
          // Block-wise activations take the codes unsigned: q + 128, or the affine lanes as stored.
          codes[p] = int8_stage::decode_int8<Symmetric != Blocks>(_mm512_loadu_si512(w));
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m512i x = broadcast4(xq[r] + k0 + 4 * b);
#pragma GCC unroll 4
          for (int p = 0; p < P; ++p)
            dot[r][p] = Blocks ? _mm512_dpbusd_epi32(dot[r][p], codes[p], x)
                               : _mm512_dpbusd_epi32(dot[r][p], x, codes[p]);
        }
      }
    }
    const std::int64_t meta_offset = offset + v.code_bytes(len);
    if constexpr (Blocks) {
      __m512 x_scales[R];
      for (int r = 0; r < R; ++r)
        x_scales[r] = _mm512_set1_ps(a.x_block_scales[(row0 + r) * v.groups + j]);
      for (int p = 0; p < P; ++p) {
        const std::uint8_t* meta = base[p] + meta_offset;
        if constexpr (Bits == 4 && !Symmetric) {
          if (v.superblock()) {
            const GroupAffine16 g = load_group_affine(v, base[p], j, meta);
            for (int r = 0; r < R; ++r) {
              acc[r][p] = int8_stage::flush_super_block(acc[r][p], g, x_scales[r], dot[r][p],
                                                        a.xq_group_sums[(row0 + r) * v.groups + j]);
            }
            continue;
          }
        }
        const __m512 scales = load_group_scales(v, meta);
        const __m512i zero_points = int8_stage::stored_zero_points<Symmetric>(v, meta);
        for (int r = 0; r < R; ++r) {
          acc[r][p] = int8_stage::flush_block<Symmetric>(
              acc[r][p], scales, x_scales[r], dot[r][p], zero_points,
              a.xq_group_sums[(row0 + r) * v.groups + j]);
        }
      }
      continue;
    }
    for (int p = 0; p < P; ++p) {
      const std::uint8_t* meta = base[p] + meta_offset;
      const GroupAffine16 g = load_group_affine(v, base[p], j, meta, Bits == 8 ? 128 : 0);
      for (int r = 0; r < R; ++r) {
        const float group_sum = Symmetric ? 0.0f : a.x_group_sums[(row0 + r) * v.groups + j];
        acc[r][p] =
            int8_stage::flush<Symmetric>(acc[r][p], g.scale, dot[r][p], g.offset, group_sum);
      }
    }
  }
  for (int p = 0; p < panels; ++p) {
    for (int r = 0; r < R; ++r) {
      if constexpr (Blocks) {
        int8_stage::finish_blocks(a, row0 + r, (panel0 + p) * panel_width, acc[r][p]);
      } else {
        int8_stage::finish(a, row0 + r, (panel0 + p) * panel_width, acc[r][p]);
      }
    }
  }
}

// Blocks of 8 rows × 2 panels while 8 rows remain (each step's decode serves 8 rows; 10 or 12
// rows spill), then blocks of up to 4 rows × 4 panels (for M ≤ 4 every weight byte is read
// from memory once per call).
template <int Bits, bool Symmetric, bool Blocks, bool Prefetch>
void run_blocks(const Int8Args& a, std::int64_t panel_begin, std::int64_t panel_end) {
  constexpr int P = static_cast<int>(u8_regs_block_panels);
  constexpr int wide_rows = 8;
  constexpr int wide_panels = 2;
  const std::int64_t wide_end = a.m / wide_rows * wide_rows;
  for (std::int64_t panel = panel_begin; panel < panel_end; panel += P) {
    const int panels = static_cast<int>(std::min<std::int64_t>(P, panel_end - panel));
    for (int pair = 0; pair < panels; pair += wide_panels) {
      for (std::int64_t row0 = 0; row0 < wide_end; row0 += wide_rows) {
        rows_block<Bits, Symmetric, Blocks, Prefetch, wide_rows, wide_panels>(
            a, panel + pair, std::min(wide_panels, panels - pair), row0);
      }
    }
    for (std::int64_t row0 = wide_end; row0 < a.m; row0 += max_rows) {
      switch (std::min<std::int64_t>(max_rows, a.m - row0)) {
        case 1:
          rows_block<Bits, Symmetric, Blocks, Prefetch, 1, P>(a, panel, panels, row0);
          break;
        case 2:
          rows_block<Bits, Symmetric, Blocks, Prefetch, 2, P>(a, panel, panels, row0);
          break;
        case 3:
          rows_block<Bits, Symmetric, Blocks, Prefetch, 3, P>(a, panel, panels, row0);
          break;
        default:
          rows_block<Bits, Symmetric, Blocks, Prefetch, 4, P>(a, panel, panels, row0);
          break;
      }
    }
  }
}

// Software prefetch unless the weights are on huge pages and there is one block of rows: then
// the hardware prefetchers keep the streams full alone and the prefetch instructions only cost
// time. With more rows the later row blocks re-read the panels and the prefetch pays, and on
// 4 KiB pages it always does (numbers: docs/performance.md, "Weight-only GEMM").
template <int Bits, bool Symmetric, bool Blocks>
void run(const Int8Args& a, std::int64_t panel_begin, std::int64_t panel_end) {
  if (a.w.huge_pages && a.m <= max_rows) {
    run_blocks<Bits, Symmetric, Blocks, false>(a, panel_begin, panel_end);
  } else {
    run_blocks<Bits, Symmetric, Blocks, true>(a, panel_begin, panel_end);
  }
}

}  // namespace

void weight_only_u8_regs_64c__avx512_vnni(const Int8Args& a, std::int64_t panel_begin,
                                          std::int64_t panel_end) {
  with_format(a.w, [&](auto bits, auto symmetric) {
    constexpr int b = decltype(bits)::value;
    constexpr bool sym = decltype(symmetric)::value;
    if (a.x_block_scales != nullptr) {
      run<b, sym, true>(a, panel_begin, panel_end);
    } else {
      run<b, sym, false>(a, panel_begin, panel_end);
    }
  });
}

}  // namespace lucid::quantization::weight_only
