// AVX2 GEMM kernel: u8 × s8 products widened to int16 and multiplied with vpmaddwd (exact; never
// the saturating vpmaddubsw). Design: docs/kernels.md; measurements: docs/performance.md.
//
// Blocks of more than 16 rows (the driver's large-M tiles) take the widened path: for each slice
// of ≤ 3 panels and each block of `block_depth` k, the slice's weights are widened once into an
// L1-resident int16 panel laid out as k pairs (8 channels × (w[c][2j], w[c][2j+1]) per vector),
// each 4-row group's activations into an int16 strip; a 4-row × 3-vector register tile (12
// accumulators, 3 weight vectors, 1 broadcast activation pair: all 16 ymm registers) then does
// one vpmaddwd + vpaddd per 16 multiply-adds. Blocks of up to 16 rows (the weights would be
// widened for too few rows) take the direct path: each weight group is widened in registers as
// it is read, for row groups of up to 6 rows (docs/kernels.md, "Int8 GEMM kernels").
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "kernels/gemm_int8.hpp"
#include "kernels/stream_prefetch.hpp"

namespace lucid::quantization::kernels {
namespace {

// ---- The widened path -------------------------------------------------------------------------

constexpr int tile_rows = 4;     // rows per register tile
constexpr int tile_vectors = 3;  // 8-channel vectors per register tile
constexpr int slice_panels = 3;  // panels widened together (6 vectors, two register tiles)
constexpr int slice_vectors = 2 * slice_panels;
// k per block: the slice's widened weights take 48 channels × 2 bytes × 256 = 24 KiB of L1.
constexpr std::int64_t block_depth = 256;
constexpr std::int64_t block_groups = block_depth / igemm::group_depth;
constexpr std::int64_t block_pairs = block_depth / 2;
constexpr std::int64_t min_widened_rows = 17;

// The widened weights of one slice and k block: pair j of vector v at (j · vectors + v) · 16.
struct alignas(64) WidenedSlice {
  std::int16_t w[block_pairs * slice_vectors * 16];
};
// One row group's activations of one k block, (a ^ flip) as int16, zero past k.
struct alignas(64) WidenedRows {
  std::int16_t a[tile_rows][block_depth];
};

// Widens `groups` packed groups of `panels` panels (from group g0 on) into `out`.
void widen_weights(const std::int8_t* panels_begin, std::int64_t panel_stride, int panels,
                   std::int64_t g0, std::int64_t groups, WidenedSlice& out) {
  // Within each 128-bit lane (4 channels × 4 k): the channels' (k0, k1) bytes, then (k2, k3).
  const __m256i split_pairs =
      _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9, 12,
                       13, 2, 3, 6, 7, 10, 11, 14, 15);
  const int vectors = 2 * panels;
  for (int p = 0; p < panels; ++p) {
    const std::int8_t* group = panels_begin + p * panel_stride + g0 * 64;
    for (std::int64_t g = 0; g < groups; ++g, group += 64) {
      for (int h = 0; h < 2; ++h) {
        const __m256i bytes = _mm256_load_si256(reinterpret_cast<const __m256i*>(group + 32 * h));
        // Low 128 bits: 8 channels' (k0, k1); high: their (k2, k3).
        const __m256i pairs =
            _mm256_permute4x64_epi64(_mm256_shuffle_epi8(bytes, split_pairs), 0xd8);
        std::int16_t* even = out.w + ((2 * g) * vectors + 2 * p + h) * 16;
        std::int16_t* odd = even + vectors * 16;
        _mm256_store_si256(reinterpret_cast<__m256i*>(even),
                           _mm256_cvtepi8_epi16(_mm256_castsi256_si128(pairs)));
        _mm256_store_si256(reinterpret_cast<__m256i*>(odd),
                           _mm256_cvtepi8_epi16(_mm256_extracti128_si256(pairs, 1)));
      }
    }
  }
}

// Widens k0 .. k0 + depth of `rows` rows (flipped when `flip`) to out + r · out_stride, zero up
// to `padded` codes (room for the next multiple of 16 is needed).
void widen_rows(const igemm::GemmBlock& b, std::int64_t row, int rows, std::int64_t k0,
                std::int64_t depth, std::int64_t padded, std::int16_t* out,
                std::int64_t out_stride) {
  const __m128i flip = _mm_set1_epi8(b.flip ? static_cast<char>(0x80) : 0);
  for (int r = 0; r < rows; ++r) {
    const std::uint8_t* a = b.a + (row + r) * b.a_stride + k0;
    std::int16_t* dst = out + r * out_stride;
    std::int64_t i = 0;
    for (; i + 16 <= depth; i += 16) {
      const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
      _mm256_store_si256(reinterpret_cast<__m256i*>(dst + i),
                         _mm256_cvtepu8_epi16(_mm_xor_si128(codes, flip)));
    }
    if (i < padded) {
      // The last < 16 codes from a zero-padded copy (never read past a row): padding meets zero
      // weights, so its flipped value does not matter.
      alignas(16) std::uint8_t tail[16] = {};
      std::memcpy(tail, a + i, static_cast<std::size_t>(depth - i));
      const __m128i codes = _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
      _mm256_store_si256(reinterpret_cast<__m256i*>(dst + i),
                         _mm256_cvtepu8_epi16(_mm_xor_si128(codes, flip)));
    }
  }
}

// Prefetches k0 .. k0 + depth of up to tile_rows rows from `row` on into L1.
void prefetch_rows(const igemm::GemmBlock& b, std::int64_t row, std::int64_t k0,
                   std::int64_t depth) {
  const std::int64_t rows = std::min<std::int64_t>(tile_rows, b.rows - row);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::uint8_t* a = b.a + (row + r) * b.a_stride + k0;
    for (std::int64_t i = 0; i < depth; i += 64)
      _mm_prefetch(reinterpret_cast<const char*>(a + i), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(a + depth - 1), _MM_HINT_T0);
  }
}

// acc[r][8v..8v+7] for R rows and C vectors over `pairs` k pairs of one block: starts from zero
// (first block) or the partial sums in acc, and ends with − z · column_sums (last block).
template <int R, int C>
void register_tile(const std::int16_t* w, int vectors, const WidenedRows& a, std::int64_t pairs,
                   bool first, bool last, const std::int32_t* zero_points,
                   const std::int32_t* column_sums, std::int32_t* acc, std::int64_t acc_stride) {
  __m256i c[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < C; ++v) {
      c[r][v] =
          first
              ? _mm256_setzero_si256()
              : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + r * acc_stride + 8 * v));
    }
  }
  const auto* pair_codes = reinterpret_cast<const std::int32_t*>(a.a[0]);
  constexpr std::int64_t row_pairs = block_depth / 2;
  for (std::int64_t j = 0; j < pairs; ++j, w += vectors * 16) {
    __m256i wv[C];
#pragma GCC unroll 8
    for (int v = 0; v < C; ++v)
      wv[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(w + 16 * v));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i av = _mm256_set1_epi32(pair_codes[r * row_pairs + j]);
#pragma GCC unroll 8
      for (int v = 0; v < C; ++v)
        c[r][v] = _mm256_add_epi32(c[r][v], _mm256_madd_epi16(av, wv[v]));
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m256i z = _mm256_set1_epi32(last ? zero_points[r] : 0);
#pragma GCC unroll 8
    for (int v = 0; v < C; ++v) {
      __m256i out = c[r][v];
      if (last) {
        const __m256i sums =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(column_sums + 8 * v));
        out = _mm256_sub_epi32(out, _mm256_mullo_epi32(z, sums));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * acc_stride + 8 * v), out);
    }
  }
}

using TileFn = void (*)(const std::int16_t*, int, const WidenedRows&, std::int64_t, bool, bool,
                        const std::int32_t*, const std::int32_t*, std::int32_t*, std::int64_t);

template <int R, std::size_t... C>
constexpr std::array<TileFn, sizeof...(C)> tiles_of_rows(std::index_sequence<C...>) {
  return {register_tile<R, static_cast<int>(C) + 1>...};
}
template <std::size_t... R>
constexpr std::array<std::array<TileFn, tile_vectors>, sizeof...(R)> all_tiles(
    std::index_sequence<R...>) {
  return {tiles_of_rows<static_cast<int>(R) + 1>(std::make_index_sequence<tile_vectors>())...};
}
// tiles[r − 1][c − 1]: the register tile of r rows × c vectors.
constexpr auto tiles = all_tiles(std::make_index_sequence<tile_rows>());

void gemm_widened(const igemm::GemmBlock& b) {
  alignas(64) WidenedSlice weights;
  alignas(64) WidenedRows rows;
  const std::int64_t panel_stride = igemm::panel_bytes(b.k);
  for (std::int64_t p0 = 0; p0 < b.panel_count; p0 += slice_panels) {
    const int panels = static_cast<int>(std::min<std::int64_t>(slice_panels, b.panel_count - p0));
    const int vectors = 2 * panels;
    for (std::int64_t k0 = 0; k0 < b.k; k0 += block_depth) {
      const std::int64_t depth = std::min(block_depth, b.k - k0);
      const std::int64_t groups = (depth + igemm::group_depth - 1) / igemm::group_depth;
      widen_weights(b.panels + p0 * panel_stride, panel_stride, panels, k0 / igemm::group_depth,
                    groups, weights);
      const bool first = k0 == 0;
      const bool last = k0 + block_depth >= b.k;
      // The next block's packed weights, prefetched a share per row group: 64 rows · block_depth
      // codes are too few for the hardware prefetchers to follow each panel's stream.
      const std::int64_t next_groups =
          last ? 0 : std::min(block_groups, (b.k - k0 - block_depth + 3) / igemm::group_depth);
      const std::int64_t row_groups = (b.rows + tile_rows - 1) / tile_rows;
      const std::int64_t share = (next_groups + row_groups - 1) / row_groups;
      for (std::int64_t row = 0, t = 0; row < b.rows; row += tile_rows, ++t) {
        const int r = static_cast<int>(std::min<std::int64_t>(tile_rows, b.rows - row));
        widen_rows(b, row, r, k0, depth, groups * igemm::group_depth, rows.a[0], block_depth);
        // The rows the next widen_rows reads: the next row group, or the first at the next block.
        if (row + tile_rows < b.rows) {
          prefetch_rows(b, row + tile_rows, k0, depth);
        } else if (!last) {
          prefetch_rows(b, 0, k0 + block_depth, std::min(block_depth, b.k - k0 - block_depth));
        }
        const std::int64_t g_begin = std::min(next_groups, t * share);
        const std::int64_t g_end = std::min(next_groups, g_begin + share);
        for (int p = 0; p < panels; ++p) {
          const std::int8_t* next =
              b.panels + (p0 + p) * panel_stride + (k0 + block_depth) / 4 * 64;
          for (std::int64_t g = g_begin; g < g_end; ++g)
            _mm_prefetch(reinterpret_cast<const char*>(next + 64 * g), _MM_HINT_T0);
        }
        for (int v = 0; v < vectors; v += tile_vectors) {
          const int c = std::min(tile_vectors, vectors - v);
          tiles[r - 1][c - 1](weights.w + 16 * v, vectors, rows, 2 * groups, first, last,
                              b.zero_points + row, b.column_sums + 16 * p0 + 8 * v,
                              b.acc + row * b.acc_stride + 16 * p0 + 8 * v, b.acc_stride);
        }
      }
    }
  }
}

// ---- The direct path (M < min_widened_rows) ----------------------------------------------------

// Rows of the direct path's tiles: up to 3 rows take whole panels per pass (4 accumulators per
// row, 4 weight vectors), 4 to 6 rows half a panel (2 per row, 2 weight vectors), so that the
// accumulators, the weight vectors and one broadcast fit the 16 ymm registers. More rows go in
// groups of 6 and one of the rest (fewer groups: fewer passes over the panel).
constexpr int direct_whole_rows = 3;
constexpr int direct_tile_rows = 6;
constexpr int direct_max_rows = static_cast<int>(min_widened_rows) - 1;
// The direct path widens its rows' activations to int16 once per k block, so that each weight
// group costs one broadcast load per row: the block is sized so that they take at most
// direct_budget bytes of L1, beside the panel's weights, which each row group and pass re-reads.
constexpr std::int64_t direct_budget = 16384;
struct alignas(64) DirectRows {
  std::int16_t a[direct_budget / 2 + 16 * direct_max_rows];  // row r at r · stride
  std::int64_t stride = 0;                                   // the block's depth, padded to 16
};

// acc[r][8h..8h+7] for R rows, over `groups` groups from `group` (one k block), of the halves
// h = h0 .. h0 + H − 1 of one panel (H = 2: the whole panel): starts from zero (first block) or
// the partial sums in acc, and ends with − z · column_sums (last block). Each group's 16-byte
// quarters (4 channels × 4 k; quarters 2h and 2h + 1 are half h) are widened in registers and
// multiplied (vpmaddwd) by the row's broadcast (a0, a1, a2, a3).
template <int R, int H>
void direct_tile(const igemm::GemmBlock& b, const DirectRows& rows, std::int64_t row,
                 const std::int8_t* group, std::int64_t groups, int h0, bool prefetch, bool first,
                 bool last, const std::int32_t* column_sums, std::int32_t* acc) {
  constexpr int Q = 2 * H;
  __m256i c[R][Q];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int q = 0; q < Q; ++q) {
      // An opaque zero per accumulator: GCC otherwise starts all of them from one register,
      // fails to give each its own and spills them in the loop.
      c[r][q] = _mm256_setzero_si256();
      asm("" : "+x"(c[r][q]));
    }
  }
  const std::int64_t stride = rows.stride;
  const std::int16_t* quads = rows.a + row * stride;  // row r's k group g at r · stride + 4 · g
  const std::int8_t* quarters = group + 32 * h0;
  for (std::int64_t g = 0; g < groups; ++g, quarters += 64) {
    if (prefetch) stream_prefetch(quarters);  // the panels are one stream: each follows the last
    __m256i w[Q];
#pragma GCC unroll 4
    for (int q = 0; q < Q; ++q) {
      w[q] =
          _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(quarters + 16 * q)));
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      std::int64_t four;
      std::memcpy(&four, quads + r * stride + 4 * g, 8);
      const __m256i a = _mm256_set1_epi64x(four);
#pragma GCC unroll 4
      for (int q = 0; q < Q; ++q)
        c[r][q] = _mm256_add_epi32(_mm256_madd_epi16(a, w[q]), c[r][q]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    std::int32_t* out = acc + (row + r) * b.acc_stride;
#pragma GCC unroll 2
    for (int h = 0; h < H; ++h) {
      // hadd gives channels (0, 1, 4, 5 | 2, 3, 6, 7) of the half; the permute restores 0..7.
      const __m256i pairs = _mm256_hadd_epi32(c[r][2 * h], c[r][2 * h + 1]);
      __m256i total = _mm256_permute4x64_epi64(pairs, _MM_SHUFFLE(3, 1, 2, 0));
      auto* at = reinterpret_cast<__m256i*>(out + 8 * (h0 + h));
      if (!first) total = _mm256_add_epi32(total, _mm256_loadu_si256(at));
      if (last) {
        const __m256i sums =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(column_sums + 8 * (h0 + h)));
        total = _mm256_sub_epi32(
            total, _mm256_mullo_epi32(_mm256_set1_epi32(b.zero_points[row + r]), sums));
      }
      _mm256_storeu_si256(at, total);
    }
  }
}

using DirectTileFn = void (*)(const igemm::GemmBlock&, const DirectRows&, std::int64_t,
                              const std::int8_t*, std::int64_t, int, bool, bool, bool,
                              const std::int32_t*, std::int32_t*);

// Halves of a panel per pass of an R-row direct tile.
constexpr int direct_halves(int rows) {
  return rows <= direct_whole_rows ? 2 : 1;
}

template <std::size_t... R>
constexpr std::array<DirectTileFn, sizeof...(R)> direct_tiles(std::index_sequence<R...>) {
  return {direct_tile<static_cast<int>(R) + 1, direct_halves(static_cast<int>(R) + 1)>...};
}

void gemm_direct(const igemm::GemmBlock& b) {
  // by_rows[r − 1]: the direct tile of r rows.
  static constexpr auto by_rows = direct_tiles(std::make_index_sequence<direct_tile_rows>());
  alignas(64) DirectRows rows;
  const std::int64_t panel_stride = igemm::panel_bytes(b.k);
  const std::int64_t blocks =
      std::max<std::int64_t>(1, (2 * b.rows * b.k + direct_budget - 1) / direct_budget);
  rows.stride = ((b.k + blocks - 1) / blocks + 15) / 16 * 16;
  std::int64_t k0 = 0;
  do {  // at least once: k = 0 still writes − z · column_sums
    const std::int64_t depth = std::min(rows.stride, b.k - k0);
    const std::int64_t groups = (depth + igemm::group_depth - 1) / igemm::group_depth;
    widen_rows(b, 0, static_cast<int>(b.rows), k0, depth, groups * igemm::group_depth, rows.a,
               rows.stride);
    const bool first = k0 == 0, last = k0 + rows.stride >= b.k;
    for (std::int64_t p = 0; p < b.panel_count; ++p) {
      const std::int8_t* panel = b.panels + p * panel_stride + k0 / igemm::group_depth * 64;
      // Row groups of direct_tile_rows rows and the rest; the first pass over the panel's
      // block prefetches it, the others read it from L1.
      for (std::int64_t row = 0; row < b.rows;) {
        const int r = static_cast<int>(std::min<std::int64_t>(direct_tile_rows, b.rows - row));
        for (int h0 = 0; h0 < 2; h0 += direct_halves(r)) {
          by_rows[r - 1](b, rows, row, panel, groups, h0, row == 0 && h0 == 0, first, last,
                         b.column_sums + 16 * p, b.acc + 16 * p);
        }
        row += r;
      }
    }
    k0 += rows.stride;
  } while (k0 < b.k);
}

}  // namespace

void gemm_u8s8_i32_16c4__avx2(const igemm::GemmBlock& b) {
  if (b.rows >= min_widened_rows) {
    gemm_widened(b);
  } else if (b.rows > 0) {
    gemm_direct(b);
  }
}

}  // namespace lucid::quantization::kernels
