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
void pack4__avx512(const std::int8_t* codes, std::int64_t n, std::uint8_t* packed) {
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  for (std::int64_t k = 0; k < n; k += codes_per_step) {
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

template <bool Signed>
void unpack4__avx512(const std::uint8_t* packed, std::int64_t n, std::int8_t* codes) {
  const __m512i low = _mm512_set1_epi16(0x000f);
  const __m512i high = _mm512_set1_epi16(0x00f0);
  for (std::int64_t k = 0; k < n; k += codes_per_step) {
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
