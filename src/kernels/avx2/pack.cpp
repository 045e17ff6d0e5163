// AVX2 kernels packing int8 codes into 4- / 2-bit fields and back, 32 codes at a time;
// the rest (fewer than 32 codes, starting byte aligned) goes to the reference kernel.
#include "kernels/avx2/kernels.hpp"
#include "kernels/avx2/simd.hpp"

namespace lucid::quantization::kernels::avx2 {
namespace {

constexpr std::int64_t codes_per_step = 32;

inline __m256i load32(const std::int8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Two codes per byte (fold_nibbles).
void pack4__avx2(const std::int8_t* codes, std::int64_t n, std::uint8_t* packed) {
  std::int64_t k = 0;
  for (; k + codes_per_step <= n; k += codes_per_step)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(packed + k / 2), fold_nibbles(load32(codes + k)));
  if (k < n) reference_table().pack4(codes + k, n - k, packed + k / 2);
}

// Four codes per byte: shifts by 6, 12 and 18 bring c1..c3 of each 32-bit lane next to c0.
void pack2__avx2(const std::int8_t* codes, std::int64_t n, std::uint8_t* packed) {
  const __m256i field = _mm256_set1_epi8(0x03);
  std::int64_t k = 0;
  for (; k + codes_per_step <= n; k += codes_per_step) {
    const __m256i c = _mm256_and_si256(load32(codes + k), field);
    const __m256i folded =
        _mm256_or_si256(_mm256_or_si256(c, _mm256_srli_epi32(c, 6)),
                        _mm256_or_si256(_mm256_srli_epi32(c, 12), _mm256_srli_epi32(c, 18)));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(packed + k / 4), low_bytes(folded));
  }
  if (k < n) reference_table().pack2(codes + k, n - k, packed + k / 4);
}

template <bool Signed>
inline __m256i sign_extend(__m256i codes, char sign_bit) {
  if constexpr (!Signed) return codes;
  const __m256i sign = _mm256_set1_epi8(sign_bit);
  return _mm256_sub_epi8(_mm256_xor_si256(codes, sign), sign);
}

template <bool Signed>
void unpack4__avx2(const std::uint8_t* packed, std::int64_t n, std::int8_t* codes) {
  const __m256i low = _mm256_set1_epi16(0x000f);
  const __m256i high = _mm256_set1_epi16(0x00f0);
  std::int64_t k = 0;
  for (; k + codes_per_step <= n; k += codes_per_step) {
    const __m256i b =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + k / 2)));
    const __m256i c =
        _mm256_or_si256(_mm256_and_si256(b, low), _mm256_slli_epi16(_mm256_and_si256(b, high), 4));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + k), sign_extend<Signed>(c, 0x08));
  }
  if (k == n) return;
  const UnpackFn rest =
      Signed ? reference_table().unpack4_signed : reference_table().unpack4_unsigned;
  rest(packed + k / 2, n - k, codes + k);
}

template <bool Signed>
void unpack2__avx2(const std::uint8_t* packed, std::int64_t n, std::int8_t* codes) {
  std::int64_t k = 0;
  for (; k + codes_per_step <= n; k += codes_per_step) {
    const __m256i b =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed + k / 4)));
    const __m256i c = _mm256_or_si256(
        _mm256_or_si256(_mm256_and_si256(b, _mm256_set1_epi32(0x03)),
                        _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x0c)), 6)),
        _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x30)), 12),
                        _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0xc0)), 18)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + k), sign_extend<Signed>(c, 0x02));
  }
  if (k == n) return;
  const UnpackFn rest =
      Signed ? reference_table().unpack2_signed : reference_table().unpack2_unsigned;
  rest(packed + k / 4, n - k, codes + k);
}

}  // namespace

void fill_pack_kernels(KernelTable& table) {
  table.pack4 = pack4__avx2;
  table.pack2 = pack2__avx2;
  table.unpack4_signed = unpack4__avx2<true>;
  table.unpack4_unsigned = unpack4__avx2<false>;
  table.unpack2_signed = unpack2__avx2<true>;
  table.unpack2_unsigned = unpack2__avx2<false>;
}

}  // namespace lucid::quantization::kernels::avx2
