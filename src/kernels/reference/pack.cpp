// Reference (scalar) kernels packing int8 codes into 4- / 2-bit fields and back.
#include <cstring>

#include "kernels/reference/kernels.hpp"

namespace lucid::quantization::kernels::reference {
namespace {

// Element k in bits [(k % per_byte) * bits, ...) of byte k / per_byte, low bits first.
template <int Bits>
void pack__reference(const std::int8_t* codes, std::int64_t n, std::uint8_t* packed) {
  constexpr int per_byte = 8 / Bits;
  constexpr unsigned mask = (1u << Bits) - 1u;
  const std::int64_t bytes = (n + per_byte - 1) / per_byte;
  if (bytes > 0) std::memset(packed, 0, static_cast<std::size_t>(bytes));
  for (std::int64_t k = 0; k < n; ++k) {
    const unsigned field = static_cast<unsigned>(codes[k]) & mask;
    const auto shift = static_cast<unsigned>((k % per_byte) * Bits);
    packed[k / per_byte] = static_cast<std::uint8_t>(packed[k / per_byte] | (field << shift));
  }
}

template <int Bits, bool Signed>
void unpack__reference(const std::uint8_t* packed, std::int64_t n, std::int8_t* codes) {
  constexpr int per_byte = 8 / Bits;
  constexpr unsigned mask = (1u << Bits) - 1u;
  constexpr unsigned sign_bit = 1u << (Bits - 1);
  for (std::int64_t k = 0; k < n; ++k) {
    const auto shift = static_cast<unsigned>((k % per_byte) * Bits);
    const unsigned field = (packed[k / per_byte] >> shift) & mask;
    const bool negative = Signed && (field & sign_bit) != 0;
    codes[k] = static_cast<std::int8_t>(static_cast<int>(field) - (negative ? int{1} << Bits : 0));
  }
}

}  // namespace

void fill_pack_kernels(KernelTable& table) {
  table.pack4 = pack__reference<4>;
  table.pack2 = pack__reference<2>;
  table.unpack4_signed = unpack__reference<4, true>;
  table.unpack4_unsigned = unpack__reference<4, false>;
  table.unpack2_signed = unpack__reference<2, true>;
  table.unpack2_unsigned = unpack__reference<2, false>;
}

}  // namespace lucid::quantization::kernels::reference
