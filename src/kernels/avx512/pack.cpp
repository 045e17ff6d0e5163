// AVX-512 kernels packing int8 codes into 4- / 2-bit fields and back, 64 codes at a time.
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/simd.hpp"

namespace lucid::quantization::kernels::avx512 {
namespace {

constexpr std::int64_t codes_per_step = 64;

inline __mmask64 first_bytes(std::int64_t count) {
  return count >= 64 ? ~__mmask64{0} : (__mmask64{1} << count) - 1;
}

// Two codes per byte: in each 16-bit lane (c0 | c1 << 8), keep the nibbles and
// fold c1 down next to c0; the low byte of every lane is the packed byte.
// 128 codes at a time, vpmaddubsw computes c0 + 16 * c1 per lane (at most 255,
// so no saturation), two lanes' worth are packed to bytes with unsigned
// saturation (exact) and one permute undoes the per-128-bit-lane interleave:
// cheaper on Zen 4 than a two-uop vpmovwb per 64 codes, which the tail keeps.
void pack4__avx512(const std::int8_t* codes, std::int64_t n, std::uint8_t* packed) {
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  const __m512i weights = _mm512_set1_epi16(0x1001);  // bytes 1, 16
  const __m512i order = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
  std::int64_t k = 0;
  for (; k + 2 * codes_per_step <= n; k += 2 * codes_per_step) {
    const __m512i c0 = _mm512_and_si512(_mm512_loadu_si512(codes + k), nibble);
    const __m512i c1 = _mm512_and_si512(_mm512_loadu_si512(codes + k + codes_per_step), nibble);
    const __m512i bytes =
        _mm512_packus_epi16(_mm512_maddubs_epi16(c0, weights), _mm512_maddubs_epi16(c1, weights));
    _mm512_storeu_si512(packed + k / 2, _mm512_permutexvar_epi64(order, bytes));
  }
  for (; k < n; k += codes_per_step) {
    const std::int64_t count = n - k < codes_per_step ? n - k : codes_per_step;
    const __m512i c =
        _mm512_and_si512(_mm512_maskz_loadu_epi8(first_bytes(count), codes + k), nibble);
    const __m512i folded = _mm512_or_si512(c, _mm512_srli_epi16(c, 4));
    const auto bytes = static_cast<__mmask32>(first_bytes((count + 1) / 2));
    _mm512_mask_cvtepi16_storeu_epi8(packed + k / 2, bytes, folded);
  }
}

// Four codes per byte: in each 32-bit lane (c0 | c1 << 8 | c2 << 16 | c3 << 24)
// of 2-bit fields, shifts by 6, 12 and 18 bring c1..c3 next to c0.
void pack2__avx512(const std::int8_t* codes, std::int64_t n, std::uint8_t* packed) {
  const __m512i field = _mm512_set1_epi8(0x03);
  for (std::int64_t k = 0; k < n; k += codes_per_step) {
    const std::int64_t count = n - k < codes_per_step ? n - k : codes_per_step;
    const __m512i c =
        _mm512_and_si512(_mm512_maskz_loadu_epi8(first_bytes(count), codes + k), field);
    const __m512i folded =
        _mm512_or_si512(_mm512_or_si512(c, _mm512_srli_epi32(c, 6)),
                        _mm512_or_si512(_mm512_srli_epi32(c, 12), _mm512_srli_epi32(c, 18)));
    const auto bytes = static_cast<__mmask16>(first_bytes((count + 3) / 4));
    _mm512_mask_cvtepi32_storeu_epi8(packed + k / 4, bytes, folded);
  }
}

// Signed fields: (c ^ sign) - sign sign-extends a field of the given sign bit.
template <bool Signed>
inline __m512i sign_extend(__m512i codes, char sign_bit) {
  if constexpr (!Signed) return codes;
  const __m512i sign = _mm512_set1_epi8(sign_bit);
  return _mm512_sub_epi8(_mm512_xor_si512(codes, sign), sign);
}

// 128 codes at a time: the low and high nibbles of 64 bytes (signed fields
// sign-extended by a vpshufb table lookup), interleaved per 128-bit lane by vpunpck{l,h}bw and put
// back in order by two two-source permutes; the tail takes 64 codes at a time.
template <bool Signed>
void unpack4__avx512(const std::uint8_t* packed, std::int64_t n, std::int8_t* codes) {
  const __m512i low = _mm512_set1_epi16(0x000f);
  const __m512i high = _mm512_set1_epi16(0x00f0);
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  // Field value -> signed code, in every 128-bit lane (vpshufb looks up within lanes).
  const __m512i signed_code = _mm512_set4_epi32(
      static_cast<int>(0xfffefdfcu), static_cast<int>(0xfbfaf9f8u), 0x07060504, 0x03020100);
  auto code = [&](__m512i fields) {
    if constexpr (Signed) return _mm512_shuffle_epi8(signed_code, fields);
    return fields;
  };
  const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i second = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  std::int64_t k = 0;
  for (; k + 2 * codes_per_step <= n; k += 2 * codes_per_step) {
    const __m512i b = _mm512_loadu_si512(packed + k / 2);
    const __m512i lo = code(_mm512_and_si512(b, nibble));
    const __m512i hi = code(_mm512_and_si512(_mm512_srli_epi16(b, 4), nibble));
    const __m512i even = _mm512_unpacklo_epi8(lo, hi), odd = _mm512_unpackhi_epi8(lo, hi);
    _mm512_storeu_si512(codes + k, _mm512_permutex2var_epi64(even, first, odd));
    _mm512_storeu_si512(codes + k + codes_per_step, _mm512_permutex2var_epi64(even, second, odd));
  }
  for (; k < n; k += codes_per_step) {
    const std::int64_t count = n - k < codes_per_step ? n - k : codes_per_step;
    const auto bytes = static_cast<__mmask32>(first_bytes((count + 1) / 2));
    const __m512i b = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(bytes, packed + k / 2));
    const __m512i c =
        _mm512_or_si512(_mm512_and_si512(b, low), _mm512_slli_epi16(_mm512_and_si512(b, high), 4));
    _mm512_mask_storeu_epi8(codes + k, first_bytes(count), sign_extend<Signed>(c, 0x08));
  }
}

template <bool Signed>
void unpack2__avx512(const std::uint8_t* packed, std::int64_t n, std::int8_t* codes) {
  for (std::int64_t k = 0; k < n; k += codes_per_step) {
    const std::int64_t count = n - k < codes_per_step ? n - k : codes_per_step;
    const auto bytes = static_cast<__mmask16>(first_bytes((count + 3) / 4));
    const __m512i b = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(bytes, packed + k / 4));
    const __m512i c = _mm512_or_si512(
        _mm512_or_si512(_mm512_and_si512(b, _mm512_set1_epi32(0x03)),
                        _mm512_slli_epi32(_mm512_and_si512(b, _mm512_set1_epi32(0x0c)), 6)),
        _mm512_or_si512(_mm512_slli_epi32(_mm512_and_si512(b, _mm512_set1_epi32(0x30)), 12),
                        _mm512_slli_epi32(_mm512_and_si512(b, _mm512_set1_epi32(0xc0)), 18)));
    _mm512_mask_storeu_epi8(codes + k, first_bytes(count), sign_extend<Signed>(c, 0x02));
  }
}

}  // namespace

void fill_pack_kernels(KernelTable& table) {
  table.pack4 = pack4__avx512;
  table.pack2 = pack2__avx512;
  table.unpack4_signed = unpack4__avx512<true>;
  table.unpack4_unsigned = unpack4__avx512<false>;
  table.unpack2_signed = unpack2__avx512<true>;
  table.unpack2_unsigned = unpack2__avx512<false>;
}

}  // namespace lucid::quantization::kernels::avx512
