// AVX2 GEMM kernel: bytes widened to int16 and multiplied with vpmaddwd (exact; no saturating
// vpmaddubsw).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_int8.hpp"

namespace lucid::quantization::kernels {
namespace {

constexpr int max_rows = 4;  // rows per micro-tile, each against 8 channels (half a panel)

// Four codes at `p`, flipped for int8 and widened to 4 × int16, repeated in every 64-bit lane.
inline __m256i broadcast_codes(const std::uint8_t* p, std::uint32_t flip) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  const __m128i wide = _mm_cvtepu8_epi16(_mm_cvtsi32_si128(static_cast<int>(v ^ flip)));
  return _mm256_broadcastq_epi64(wide);
}

// acc[r][c] for R rows and the 8 channels of `half` (32-byte halves of each 64-byte group).
template <int R>
void micro_tile(const igemm::GemmBlock& b, std::int64_t row, const std::int8_t* half,
                const std::int32_t* column_sums, std::int32_t* acc) {
  const std::uint32_t flip = b.flip ? 0x80808080u : 0u;
  // c[r][0]: channels 0-3, c[r][1]: channels 4-7, as (k0·w0 + k1·w1, k2·w2 + k3·w3) pairs.
  // The row loops are unrolled so that the accumulators stay in registers.
  __m256i c[R][2];
  const std::uint8_t* a[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    c[r][0] = c[r][1] = _mm256_setzero_si256();
    a[r] = b.a + (row + r) * b.a_stride;
  }
  const auto step = [&](const std::int8_t* wg, std::int64_t offset) {
    const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wg)));
    const __m256i w1 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wg + 16)));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256i av = broadcast_codes(a[r] + offset, flip);
      c[r][0] = _mm256_add_epi32(c[r][0], _mm256_madd_epi16(av, w0));
      c[r][1] = _mm256_add_epi32(c[r][1], _mm256_madd_epi16(av, w1));
    }
  };
  const std::int64_t full = b.k / 4;
  for (std::int64_t g = 0; g < full; ++g)
    step(half + g * 64, 4 * g);
  if (b.k % 4 != 0) {
    // The k % 4 tail from zero-padded copies (never read past a row); padding meets zero weights.
    alignas(16) std::uint8_t tails[4 * max_rows] = {};
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      std::memcpy(tails + 4 * r, a[r] + 4 * full, static_cast<std::size_t>(b.k % 4));
      a[r] = tails + 4 * r;
    }
    step(half + full * 64, 0);
  }
  const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(column_sums));
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    // hadd gives channels (0, 1, 4, 5 | 2, 3, 6, 7); the permute restores 0..7.
    const __m256i pairs = _mm256_hadd_epi32(c[r][0], c[r][1]);
    const __m256i total = _mm256_permute4x64_epi64(pairs, _MM_SHUFFLE(3, 1, 2, 0));
    const __m256i z = _mm256_set1_epi32(b.zero_points[row + r]);
    const __m256i v = _mm256_sub_epi32(total, _mm256_mullo_epi32(z, sums));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * b.acc_stride), v);
  }
}

}  // namespace

void gemm_u8s8_i32_16c4__avx2(const igemm::GemmBlock& b) {
  using Fn = void (*)(const igemm::GemmBlock&, std::int64_t, const std::int8_t*,
                      const std::int32_t*, std::int32_t*);
  static constexpr Fn by_rows[max_rows] = {micro_tile<1>, micro_tile<2>, micro_tile<3>,
                                           micro_tile<4>};
  const std::int64_t panel_stride = igemm::panel_bytes(b.k);
  for (std::int64_t h = 0; h < 2 * b.panel_count; ++h) {
    const std::int8_t* half = b.panels + h / 2 * panel_stride + h % 2 * 32;
    const std::int32_t* sums = b.column_sums + 8 * h;
    for (std::int64_t row = 0; row < b.rows; row += max_rows) {
      const std::int64_t rows = std::min<std::int64_t>(max_rows, b.rows - row);
      by_rows[rows - 1](b, row, half, sums, b.acc + row * b.acc_stride + 8 * h);
    }
  }
}

}  // namespace lucid::quantization::kernels
