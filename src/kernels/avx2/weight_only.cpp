// AVX2 tier of the weight-only GEMM: int4 / int8 group codes decoded in registers, float32 FMA.
//
// The same panels as the AVX-512 tier, as two ymm halves of 8 channels. int4
// lanes are unpacked with shifts (signed: shift left then arithmetic right;
// affine: shift right and mask) and vcvtdq2ps; int8 lanes with vpmovsxbd /
// vpmovzxbd. Per group: partial = Σ x · v, acc = fma(s, partial, acc), minus
// o · Σ x for affine formats (o = s · z', super6: s = d · sc, o = dmin · m; load_half_affine).
// Up to 4 rows share one decode.
#include <immintrin.h>

#include <utility>

#include "kernels/avx2/weight_only_scales.hpp"
#include "kernels/weight_only.hpp"

namespace lucid::quantization::weight_only {
namespace {

constexpr int max_rows = 4;

template <int MR>
struct Partials {
  __m256 p[MR][2][2];  // [row][chain][half]
};

constexpr int chains_for(int mr) {
  return mr >= 2 ? 1 : 2;
}

template <int T, bool Signed>
inline __m256 nibble(__m256i q) {
  if constexpr (Signed) {
    const __m256i up = T == 7 ? q : _mm256_slli_epi32(q, 28 - 4 * T);
    return _mm256_cvtepi32_ps(_mm256_srai_epi32(up, 28));
  } else {
    if constexpr (T == 7) return _mm256_cvtepi32_ps(_mm256_srli_epi32(q, 28));
    const __m256i down = T == 0 ? q : _mm256_srli_epi32(q, 4 * T);
    return _mm256_cvtepi32_ps(_mm256_and_si256(down, _mm256_set1_epi32(0xf)));
  }
}

template <int T, bool Signed, int MR>
inline void int4_step(__m256i lo, __m256i hi, const float* x, std::int64_t xs, Partials<MR>& part) {
  constexpr int C = chains_for(MR);
  const __m256 w0 = nibble<T, Signed>(lo);
  const __m256 w1 = nibble<T, Signed>(hi);
  for (int r = 0; r < MR; ++r) {
    const __m256 xv = _mm256_broadcast_ss(x + r * xs + T);
    part.p[r][T % C][0] = _mm256_fmadd_ps(w0, xv, part.p[r][T % C][0]);
    part.p[r][T % C][1] = _mm256_fmadd_ps(w1, xv, part.p[r][T % C][1]);
  }
}

template <bool Signed, int MR, int... T>
inline void int4_block(const std::uint8_t* codes, const float* x, std::int64_t xs,
                       Partials<MR>& part, std::integer_sequence<int, T...>) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 32));
  (int4_step<T, Signed, MR>(lo, hi, x, xs, part), ...);
}

template <bool Signed, int MR>
inline void int8_step(const std::uint8_t* codes, int t, const float* x, std::int64_t xs,
                      Partials<MR>& part) {
  constexpr int C = chains_for(MR);
  const __m128i b0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + 16 * t));
  const __m128i b1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + 16 * t + 8));
  const __m256 w0 =
      _mm256_cvtepi32_ps(Signed ? _mm256_cvtepi8_epi32(b0) : _mm256_cvtepu8_epi32(b0));
  const __m256 w1 =
      _mm256_cvtepi32_ps(Signed ? _mm256_cvtepi8_epi32(b1) : _mm256_cvtepu8_epi32(b1));
  for (int r = 0; r < MR; ++r) {
    const __m256 xv = _mm256_broadcast_ss(x + r * xs + t);
    part.p[r][t % C][0] = _mm256_fmadd_ps(w0, xv, part.p[r][t % C][0]);
    part.p[r][t % C][1] = _mm256_fmadd_ps(w1, xv, part.p[r][t % C][1]);
  }
}

template <int Bits, bool Signed, int MR>
void rows_of_panel(const GemmArgs& a, std::int64_t panel, std::int64_t row0) {
  constexpr int C = chains_for(MR);
  const PackedView& v = a.w;
  const float* x0 = a.x + row0 * a.x_stride;
  // Accumulators live in L1 (touched once per group); the 16 ymm registers hold the partials.
  alignas(32) float acc[MR][16] = {};
  for (std::int64_t j = 0; j < v.groups; ++j) {
    const std::uint8_t* rec = v.record(panel, j);
    const std::int64_t len = v.padded_length(j);
    const float* xg = x0 + j * v.group_length;
    Partials<MR> part;
    for (int r = 0; r < MR; ++r) {
      for (int c = 0; c < 2; ++c)
        part.p[r][c][0] = part.p[r][c][1] = _mm256_setzero_ps();
    }
    if constexpr (Bits == 4) {
      for (std::int64_t b = 0; b < len / 8; ++b) {
        int4_block<Signed, MR>(rec + 64 * b, xg + 8 * b, a.x_stride, part,
                               std::make_integer_sequence<int, 8>{});
      }
    } else {
      for (std::int64_t b = 0; b < len / 4; ++b) {
        for (int t = 0; t < 4; ++t)
          int8_step<Signed, MR>(rec + 64 * b, t, xg + 4 * b, a.x_stride, part);
      }
    }
    const std::uint8_t* meta = rec + v.code_bytes(len);
    for (int h = 0; h < 2; ++h) {
      const GroupAffine8 g = load_half_affine(v, v.data + panel * v.panel_bytes, j, meta, h);
      const __m256 s = g.scale;
      for (int r = 0; r < MR; ++r) {
        __m256 p = part.p[r][0][h];
        if constexpr (C == 2) p = _mm256_add_ps(p, part.p[r][1][h]);
        float* a_rh = acc[r] + 8 * h;
        _mm256_store_ps(a_rh, _mm256_fmadd_ps(s, p, _mm256_load_ps(a_rh)));
      }
      if (!v.symmetric) {
        for (int r = 0; r < MR; ++r) {
          const __m256 sum = _mm256_broadcast_ss(a.x_sums + (row0 + r) * v.groups + j);
          float* a_rh = acc[r] + 8 * h;
          _mm256_store_ps(a_rh, _mm256_fnmadd_ps(g.offset, sum, _mm256_load_ps(a_rh)));
        }
      }
    }
  }
  const std::int64_t col = panel * panel_width;
  const std::int64_t left = a.w.n - col;
  for (int r = 0; r < MR; ++r) {
    const float* out = acc[r];
    float* y = a.y + (row0 + r) * a.y_stride + col;
    for (std::int64_t c = 0; c < 16 && c < left; ++c) {
      y[c] = a.bias != nullptr ? out[c] + a.bias[col + c] : out[c];
    }
  }
}

template <int Bits, bool Signed>
void panels_typed(const GemmArgs& a, std::int64_t panel_begin, std::int64_t panel_end) {
  for (std::int64_t panel = panel_begin; panel < panel_end; ++panel) {
    for (std::int64_t row0 = 0; row0 < a.m; row0 += max_rows) {
      switch (a.m - row0 >= max_rows ? max_rows : a.m - row0) {
        case 1:
          rows_of_panel<Bits, Signed, 1>(a, panel, row0);
          break;
        case 2:
          rows_of_panel<Bits, Signed, 2>(a, panel, row0);
          break;
        case 3:
          rows_of_panel<Bits, Signed, 3>(a, panel, row0);
          break;
        default:
          rows_of_panel<Bits, Signed, 4>(a, panel, row0);
          break;
      }
    }
  }
}

}  // namespace

void weight_only_f32_16c__avx2(const GemmArgs& a, std::int64_t panel_begin,
                               std::int64_t panel_end) {
  with_format(a.w, [&](auto bits, auto symmetric) {
    panels_typed<decltype(bits)::value, decltype(symmetric)::value>(a, panel_begin, panel_end);
  });
}

}  // namespace lucid::quantization::weight_only
