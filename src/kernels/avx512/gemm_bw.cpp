// AVX-512BW GEMM kernel for CPUs without VNNI: bytes widened to int16, exact vpmaddwd on zmm.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_int8.hpp"

namespace lucid::quantization::kernels {
namespace {

constexpr int max_rows = 6;  // rows per micro-tile, each against one 16-channel panel

// Four codes at `p`, flipped for int8, widened to 4 × int16 and repeated in every 64-bit lane.
inline __m512i broadcast_codes(const std::uint8_t* p, std::uint32_t flip) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  const __m128i wide = _mm_cvtepu8_epi16(_mm_cvtsi32_si128(static_cast<int>(v ^ flip)));
  return _mm512_broadcastq_epi64(wide);
}

template <int R>
void micro_tile(const igemm::GemmBlock& b, std::int64_t row, const std::int8_t* panel,
                const std::int32_t* column_sums, std::int32_t* acc) {
  const std::uint32_t flip = b.flip ? 0x80808080u : 0u;
  // c[r][h]: channels 8h..8h+7 as (k0·w0 + k1·w1, k2·w2 + k3·w3) pairs. The row loops are
  // unrolled so that the accumulators stay in registers.
  __m512i c[R][2];
  const std::uint8_t* a[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    c[r][0] = c[r][1] = _mm512_setzero_si512();
    a[r] = b.a + (row + r) * b.a_stride;
  }
  const auto step = [&](const std::int8_t* wg, std::int64_t offset) {
    const __m512i w0 =
        _mm512_cvtepi8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(wg)));
    const __m512i w1 =
        _mm512_cvtepi8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(wg + 32)));
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m512i av = broadcast_codes(a[r] + offset, flip);
      c[r][0] = _mm512_add_epi32(c[r][0], _mm512_madd_epi16(av, w0));
      c[r][1] = _mm512_add_epi32(c[r][1], _mm512_madd_epi16(av, w1));
    }
  };
  const std::int64_t full = b.k / 4;
  for (std::int64_t g = 0; g < full; ++g)
    step(panel + g * 64, 4 * g);
  if (b.k % 4 != 0) {
    // The k % 4 tail from zero-padded copies (never read past a row); padding meets zero weights.
    alignas(16) std::uint8_t tails[4 * max_rows] = {};
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      std::memcpy(tails + 4 * r, a[r] + 4 * full, static_cast<std::size_t>(b.k % 4));
      a[r] = tails + 4 * r;
    }
    step(panel + full * 64, 0);
  }
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i sums = _mm512_loadu_si512(column_sums);
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    const __m512i total = _mm512_add_epi32(_mm512_permutex2var_epi32(c[r][0], even, c[r][1]),
                                           _mm512_permutex2var_epi32(c[r][0], odd, c[r][1]));
    const __m512i z = _mm512_set1_epi32(b.zero_points[row + r]);
    _mm512_storeu_si512(acc + r * b.acc_stride,
                        _mm512_sub_epi32(total, _mm512_mullo_epi32(z, sums)));
  }
}

}  // namespace

void gemm_u8s8_i32_16c4__avx512_bw(const igemm::GemmBlock& b) {
  using Fn = void (*)(const igemm::GemmBlock&, std::int64_t, const std::int8_t*,
                      const std::int32_t*, std::int32_t*);
  static constexpr Fn by_rows[max_rows] = {micro_tile<1>, micro_tile<2>, micro_tile<3>,
                                           micro_tile<4>, micro_tile<5>, micro_tile<6>};
  const std::int64_t panel_stride = igemm::panel_bytes(b.k);
  for (std::int64_t p = 0; p < b.panel_count; ++p) {
    const std::int8_t* panel = b.panels + p * panel_stride;
    for (std::int64_t row = 0; row < b.rows; row += max_rows) {
      const std::int64_t rows = std::min<std::int64_t>(max_rows, b.rows - row);
      by_rows[rows - 1](b, row, panel, b.column_sums + 16 * p, b.acc + row * b.acc_stride + 16 * p);
    }
  }
}

}  // namespace lucid::quantization::kernels
