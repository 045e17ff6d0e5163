// AVX-512 tier of the weight-only GEMM: int4 / int8 group codes decoded in registers, float32 FMA.
//
// One panel = 16 output channels = one zmm of accumulators per activation
// row. Per group: partial[r] = Σ_k x[r, k] · v[k] (v the lane values, exact
// in float32), then acc[r] = fma(s, partial[r], acc[r]) and for affine
// formats acc[r] = fnmadd(o, Σ_k x[r, k], acc[r]) with the group offset o = s · z' (super6:
// s = d · sc, o = dmin · m; load_group_affine). int4 lanes are turned
// into floats by one vpermps per 8 codes' nibble (the 16-entry table holds
// 0..15, or the signed values for symmetric formats; vpermps reads the low 4
// bits of each dword, so a shift is the whole unpack). int8 lanes widen with
// vpmovsxbd / vpmovzxbd and vcvtdq2ps. Up to 8 rows share one decode (GEMV
// for M ≤ 8 streams the weights once); larger M walks row blocks of 8 inside
// each panel, so the panel is decoded once per 8 rows from L2.
#include <immintrin.h>

#include <utility>

#include "kernels/avx512/weight_only_scales.hpp"
#include "kernels/weight_only.hpp"

namespace lucid::quantization::weight_only {
namespace {

constexpr int max_rows = 8;
// Bytes ahead of the current block that each step asks the prefetcher for.
constexpr std::int64_t prefetch_bytes = 1024;

// Independent partial sums per row: enough to hide the FMA latency at small MR.
constexpr int chains_for(int mr) {
  return mr >= 4 ? 1 : (mr >= 2 ? 2 : 4);
}

template <int MR, int C>
struct Partials {
  __m512 p[MR][C];
};

template <int T, int MR, int C>
inline void int4_step(__m512i q, __m512 lut, const float* x, std::int64_t xs,
                      Partials<MR, C>& part) {
  const __m512i shifted = T == 0 ? q : _mm512_srli_epi32(q, 4 * T);
  const __m512 w = _mm512_permutexvar_ps(shifted, lut);
  for (int r = 0; r < MR; ++r) {
    part.p[r][T % C] = _mm512_fmadd_ps(w, _mm512_set1_ps(x[r * xs + T]), part.p[r][T % C]);
  }
}

template <int MR, int C, int... T>
inline void int4_block(const std::uint8_t* codes, __m512 lut, const float* x, std::int64_t xs,
                       Partials<MR, C>& part, std::integer_sequence<int, T...>) {
  const __m512i q = _mm512_loadu_si512(codes);
  (int4_step<T, MR, C>(q, lut, x, xs, part), ...);
}

template <bool Signed, int MR, int C>
inline void int8_step(const std::uint8_t* codes, int t, const float* x, std::int64_t xs,
                      Partials<MR, C>& part) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 16 * t));
  const __m512i wide = Signed ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
  const __m512 w = _mm512_cvtepi32_ps(wide);
  for (int r = 0; r < MR; ++r) {
    part.p[r][t % C] = _mm512_fmadd_ps(w, _mm512_set1_ps(x[r * xs + t]), part.p[r][t % C]);
  }
}

// acc[r] += the rows' products with channels of one panel over all groups.
template <int Bits, bool Signed, int MR>
inline void panel_rows(const GemmArgs& a, std::int64_t panel, std::int64_t row0, __m512 lut,
                       __m512* acc) {
  constexpr int C = chains_for(MR);
  const PackedView& v = a.w;
  const float* x0 = a.x + row0 * a.x_stride;
  for (int r = 0; r < MR; ++r)
    acc[r] = _mm512_setzero_ps();
  for (std::int64_t j = 0; j < v.groups; ++j) {
    const std::uint8_t* rec = v.record(panel, j);
    const std::int64_t len = v.padded_length(j);
    const float* xg = x0 + j * v.group_length;
    Partials<MR, C> part;
    for (int r = 0; r < MR; ++r) {
      for (int c = 0; c < C; ++c)
        part.p[r][c] = _mm512_setzero_ps();
    }
    if constexpr (Bits == 4) {
      for (std::int64_t b = 0; b < len / 8; ++b) {
        _mm_prefetch(reinterpret_cast<const char*>(rec + 64 * b + prefetch_bytes), _MM_HINT_T0);
        int4_block<MR, C>(rec + 64 * b, lut, xg + 8 * b, a.x_stride, part,
                          std::make_integer_sequence<int, 8>{});
      }
    } else {
      for (std::int64_t b = 0; b < len / 4; ++b) {
        _mm_prefetch(reinterpret_cast<const char*>(rec + 64 * b + prefetch_bytes), _MM_HINT_T0);
        const std::uint8_t* codes = rec + 64 * b;
        const float* xb = xg + 4 * b;
        int8_step<Signed, MR, C>(codes, 0, xb, a.x_stride, part);
        int8_step<Signed, MR, C>(codes, 1, xb, a.x_stride, part);
        int8_step<Signed, MR, C>(codes, 2, xb, a.x_stride, part);
        int8_step<Signed, MR, C>(codes, 3, xb, a.x_stride, part);
      }
    }
    const std::uint8_t* meta = rec + v.code_bytes(len);
    const GroupAffine16 g = load_group_affine(v, v.data + panel * v.panel_bytes, j, meta);
    const __m512 s = g.scale;
    for (int r = 0; r < MR; ++r) {
      __m512 p = part.p[r][0];
      if constexpr (C == 2) p = _mm512_add_ps(p, part.p[r][1]);
      if constexpr (C == 4) {
        p = _mm512_add_ps(_mm512_add_ps(p, part.p[r][1]),
                          _mm512_add_ps(part.p[r][2], part.p[r][3]));
      }
      acc[r] = _mm512_fmadd_ps(s, p, acc[r]);
    }
    if (!v.symmetric) {
      for (int r = 0; r < MR; ++r) {
        const float sum = a.x_sums[(row0 + r) * v.groups + j];
        acc[r] = _mm512_fnmadd_ps(g.offset, _mm512_set1_ps(sum), acc[r]);
      }
    }
  }
}

template <int Bits, bool Signed, int MR>
void rows_of_panel(const GemmArgs& a, std::int64_t panel, std::int64_t row0, __m512 lut) {
  __m512 acc[MR];
  panel_rows<Bits, Signed, MR>(a, panel, row0, lut, acc);
  const std::int64_t col = panel * panel_width;
  const std::int64_t left = a.w.n - col;
  const __mmask16 mask =
      left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
  const __m512 bias =
      a.bias != nullptr ? _mm512_maskz_loadu_ps(mask, a.bias + col) : _mm512_setzero_ps();
  for (int r = 0; r < MR; ++r) {
    const __m512 out = a.bias != nullptr ? _mm512_add_ps(acc[r], bias) : acc[r];
    _mm512_mask_storeu_ps(a.y + (row0 + r) * a.y_stride + col, mask, out);
  }
}

template <int Bits, bool Signed>
void panels_typed(const GemmArgs& a, std::int64_t panel_begin, std::int64_t panel_end) {
  // vpermps table: lane values 0..15 (affine) or the two's-complement nibble's value.
  const __m512 lut = a.w.symmetric
                         ? _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1)
                         : _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (std::int64_t panel = panel_begin; panel < panel_end; ++panel) {
    for (std::int64_t row0 = 0; row0 < a.m; row0 += max_rows) {
      switch (a.m - row0 >= max_rows ? max_rows : a.m - row0) {
        case 1:
          rows_of_panel<Bits, Signed, 1>(a, panel, row0, lut);
          break;
        case 2:
          rows_of_panel<Bits, Signed, 2>(a, panel, row0, lut);
          break;
        case 3:
          rows_of_panel<Bits, Signed, 3>(a, panel, row0, lut);
          break;
        case 4:
          rows_of_panel<Bits, Signed, 4>(a, panel, row0, lut);
          break;
        case 5:
          rows_of_panel<Bits, Signed, 5>(a, panel, row0, lut);
          break;
        case 6:
          rows_of_panel<Bits, Signed, 6>(a, panel, row0, lut);
          break;
        case 7:
          rows_of_panel<Bits, Signed, 7>(a, panel, row0, lut);
          break;
        default:
          rows_of_panel<Bits, Signed, 8>(a, panel, row0, lut);
          break;
      }
    }
  }
}

}  // namespace

void weight_only_f32_16c__avx512(const GemmArgs& a, std::int64_t panel_begin,
                                 std::int64_t panel_end) {
  with_format(a.w, [&](auto bits, auto symmetric) {
    constexpr int b = decltype(bits)::value;  // int4: signedness lives in the table
    panels_typed<b, b == 4 || decltype(symmetric)::value>(a, panel_begin, panel_end);
  });
}

}  // namespace lucid::quantization::weight_only
