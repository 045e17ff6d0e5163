// AVX-512 ggml block kernels: Q8_0 / Q4_0 quantize and decode, F16 / BF16 rows, and the K-quant
// and imatrix searches on 32 lanes (ggml_lanes_rows.hpp). Same bytes as the reference.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/simd.hpp"
#include "kernels/ggml_kquant_decode.hpp"
#include "kernels/ggml_lanes_rows.hpp"
#include "kernels/reference/ggml_kernels.hpp"

namespace lucid::quantization::kernels::avx512 {
namespace {

// fp16 <-> fp32 of one scale with F16C: round to nearest even like ggml_fp16 for every non-NaN
// value (a scale computed from finite input is never NaN). Decoding a NaN scale gives the quiet
// NaN the reference's product gives too.
inline std::uint16_t scale_to_fp16(float d) {
  return static_cast<std::uint16_t>(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
}
inline float scale_to_fp32(std::uint16_t h) {
  return _cvtsh_ss(h);
}

constexpr int search_lanes = 32;  // two zmm per lane array: two dependency chains per sum

// roundf: truncate, then step away from zero when the dropped part is at least one half.
inline __m512 round_half_away(__m512 v) {
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 dropped = _mm512_abs_ps(_mm512_sub_ps(v, t));
  const __m512 step = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_castps_si512(_mm512_set1_ps(1.0f)),
                      _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN))));
  const __mmask16 away = _mm512_cmp_ps_mask(dropped, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm512_mask_add_ps(t, away, t, step);
}

void quantize_row_q8_0(const float* x, void* blocks, std::int64_t n, const float*) {
  auto* y = static_cast<BlockQ8_0*>(blocks);
  for (std::int64_t i = 0; i < n / 32; ++i, x += 32) {
    const __m512 v0 = _mm512_loadu_ps(x);
    const __m512 v1 = _mm512_loadu_ps(x + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = scale_to_fp16(d);
    const __m512 vid = _mm512_set1_ps(id);
    const __m512i q0 = _mm512_cvttps_epi32(round_half_away(_mm512_mul_ps(v0, vid)));
    const __m512i q1 = _mm512_cvttps_epi32(round_half_away(_mm512_mul_ps(v1, vid)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i].qs), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i].qs + 16), _mm512_cvtepi32_epi8(q1));
  }
}

void dequantize_q8_0(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ8_0*>(blocks);
  for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
    const __m512 d = _mm512_set1_ps(scale_to_fp32(x[i].d));
    for (int j = 0; j < 2; ++j) {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs + 16 * j));
      _mm512_storeu_ps(y + 16 * j, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), d));
    }
  }
}

// Q4_0's code of 16 values: min(15, (int8_t)(x * id + 8.5f)) as a byte in each int32 lane.
inline __m512i q4_0_codes(__m512 v, __m512 id) {
  const __m512i t = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(v, id), _mm512_set1_ps(8.5f)));
  const __m512i low = _mm512_srai_epi32(_mm512_slli_epi32(t, 24), 24);
  return _mm512_and_si512(_mm512_min_epi32(low, _mm512_set1_epi32(15)), _mm512_set1_epi32(0xff));
}

void quantize_q4_0_plain(const float* x, BlockQ4_0* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / 32; ++i, x += 32) {
    const __m512 v0 = _mm512_loadu_ps(x);
    const __m512 v1 = _mm512_loadu_ps(x + 16);
    const __m512 a0 = _mm512_abs_ps(v0);
    const __m512 a1 = _mm512_abs_ps(v1);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
    float max = 0.0f;  // the first value of largest magnitude (ggml's strict '<' scan)
    if (amax > 0.0f) {
      const __m512 target = _mm512_set1_ps(amax);
      const std::uint32_t hits =
          static_cast<std::uint32_t>(_mm512_cmp_ps_mask(a0, target, _CMP_EQ_OQ)) |
          static_cast<std::uint32_t>(_mm512_cmp_ps_mask(a1, target, _CMP_EQ_OQ)) << 16;
      max = x[__builtin_ctz(hits)];
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = scale_to_fp16(d);
    const __m512 vid = _mm512_set1_ps(id);
    const __m512i bytes =
        _mm512_or_si512(q4_0_codes(v0, vid), _mm512_slli_epi32(q4_0_codes(v1, vid), 4));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i].qs), _mm512_cvtepi32_epi8(bytes));
  }
}

void quantize_row_q4_0(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  if (imatrix != nullptr) {
    lanes_row_legacy_imatrix<search_lanes, BlockQ4_0>(x, blocks, n, imatrix);
    return;
  }
  quantize_q4_0_plain(x, static_cast<BlockQ4_0*>(blocks), n);
}

void dequantize_q4_0(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ4_0*>(blocks);
  for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
    const __m512 d = _mm512_set1_ps(scale_to_fp32(x[i].d));
    const __m512i q =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs)));
    const __m512i eight = _mm512_set1_epi32(8);
    const __m512i lo = _mm512_sub_epi32(_mm512_and_si512(q, _mm512_set1_epi32(0xf)), eight);
    const __m512i hi = _mm512_sub_epi32(_mm512_srli_epi32(q, 4), eight);
    _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(lo), d));
    _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(hi), d));
  }
}

void quantize_row_q4_1(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  if (imatrix == nullptr) return reference::quantize_row_q4_1(x, blocks, n, nullptr);
  lanes_row_legacy_imatrix<search_lanes, BlockQ4_1>(x, blocks, n, imatrix);
}

void quantize_row_q5_0(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  if (imatrix == nullptr) return reference::quantize_row_q5_0(x, blocks, n, nullptr);
  lanes_row_legacy_imatrix<search_lanes, BlockQ5_0>(x, blocks, n, imatrix);
}

void quantize_row_q5_1(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  if (imatrix == nullptr) return reference::quantize_row_q5_1(x, blocks, n, nullptr);
  lanes_row_legacy_imatrix<search_lanes, BlockQ5_1>(x, blocks, n, imatrix);
}

// F16 via vcvtps2ph (round to nearest even: ggml's conversion for every non-NaN input; the
// driver admits no NaN).
void quantize_row_f16(const float* x, void* blocks, std::int64_t n, const float*) {
  auto* y = static_cast<std::uint16_t*>(blocks);
  std::int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(x + k), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + k), h);
  }
  reference::quantize_row_f16(x + k, y + k, n - k, nullptr);
}

// fp16 -> fp32 by integer arithmetic (NaN payloads kept bit for bit, like the reference).
void dequantize_f16(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const std::uint16_t*>(blocks);
  const __m512i exp_mask = _mm512_set1_epi32(0x7c00 << 13);
  const __m512 subnormal_bias = _mm512_castsi512_ps(_mm512_set1_epi32(113 << 23));
  std::int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m512i h =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + k)));
    const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(h, _mm512_set1_epi32(0x8000)), 16);
    __m512i o = _mm512_slli_epi32(_mm512_and_si512(h, _mm512_set1_epi32(0x7fff)), 13);
    const __m512i exp = _mm512_and_si512(o, exp_mask);
    o = _mm512_add_epi32(o, _mm512_set1_epi32((127 - 15) << 23));
    const __mmask16 inf_nan = _mm512_cmpeq_epi32_mask(exp, exp_mask);
    o = _mm512_mask_add_epi32(o, inf_nan, o, _mm512_set1_epi32((128 - 16) << 23));
    const __mmask16 small = _mm512_cmpeq_epi32_mask(exp, _mm512_setzero_si512());
    const __m512 renormalised = _mm512_sub_ps(
        _mm512_castsi512_ps(_mm512_add_epi32(o, _mm512_set1_epi32(1 << 23))), subnormal_bias);
    const __m512i magnitude = _mm512_mask_blend_epi32(small, o, _mm512_castps_si512(renormalised));
    _mm512_storeu_ps(y + k, _mm512_castsi512_ps(_mm512_or_si512(magnitude, sign)));
  }
  reference::dequantize_f16(x + k, y + k, n - k);
}

void quantize_row_bf16(const float* x, void* blocks, std::int64_t n, const float*) {
  auto* y = static_cast<std::uint16_t*>(blocks);
  std::int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m512i bits = _mm512_loadu_si512(x + k);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(bits, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(
        _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    const __m512i out = _mm512_mask_blend_epi32(nan, rounded, quiet);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + k), _mm512_cvtepi32_epi16(out));
  }
  reference::quantize_row_bf16(x + k, y + k, n - k, nullptr);
}

void dequantize_bf16(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const std::uint16_t*>(blocks);
  std::int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m512i h =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + k)));
    _mm512_storeu_ps(y + k, _mm512_castsi512_ps(_mm512_slli_epi32(h, 16)));
  }
  reference::dequantize_bf16(x + k, y + k, n - k);
}

}  // namespace

void fill_ggml_kernels(KernelTable& table) {
  fill_ggml_lane_quantizers<search_lanes>(table);
  const auto set_quantize = [&](GgmlKernel kernel, GgmlQuantizeRowFn fn) {
    table.ggml_quantize[static_cast<int>(kernel)] = fn;
  };
  const auto set_decode = [&](GgmlKernel kernel, GgmlDequantizeFn fn) {
    table.ggml_dequantize[static_cast<int>(kernel)] = fn;
  };
  set_quantize(GgmlKernel::q8_0, quantize_row_q8_0);
  set_quantize(GgmlKernel::q4_0, quantize_row_q4_0);
  set_quantize(GgmlKernel::q4_1, quantize_row_q4_1);
  set_quantize(GgmlKernel::q5_0, quantize_row_q5_0);
  set_quantize(GgmlKernel::q5_1, quantize_row_q5_1);
  set_quantize(GgmlKernel::f16, quantize_row_f16);
  set_quantize(GgmlKernel::bf16, quantize_row_bf16);
  set_decode(GgmlKernel::q8_0, dequantize_q8_0);
  set_decode(GgmlKernel::q4_0, dequantize_q4_0);
  set_decode(GgmlKernel::f16, dequantize_f16);
  set_decode(GgmlKernel::bf16, dequantize_bf16);
  set_decode(GgmlKernel::q3_k, decode_q3_k_blocks);
  set_decode(GgmlKernel::q6_k, decode_q6_k_blocks);
}

}  // namespace lucid::quantization::kernels::avx512
