// Every kernel of every tier the CPU supports against the reference tier, bit for bit:
// lengths 0..257 and around vector widths, unaligned starts, guard bytes after the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/kernel_table.hpp"
#include "lucid/quantization/runtime.hpp"
#include "lucid/quantization/scalar_type.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
namespace K = lucid::quantization::kernels;

namespace {

constexpr std::uint8_t guard_byte = 0xa5;
constexpr std::size_t guard_size = 64;

// Lengths 0..257 plus edges of 512-bit and 4096-element blocks.
std::vector<std::int64_t> lengths() {
  std::vector<std::int64_t> out;
  for (std::int64_t n = 0; n <= 257; ++n)
    out.push_back(n);
  for (std::int64_t n : {511, 512, 513, 1023, 1024, 1025, 4095, 4096, 4097})
    out.push_back(n);
  return out;
}

// A byte buffer whose payload starts `offset` bytes in and is followed by guard bytes.
struct Guarded {
  std::vector<std::uint8_t> bytes;
  std::size_t offset;
  std::size_t size;
  Guarded(std::size_t payload, std::size_t offset_) : offset(offset_), size(payload) {
    bytes.assign(offset + payload + guard_size, guard_byte);
  }
  void* data() { return bytes.data() + offset; }
  template <class T>
  T* as() {
    return reinterpret_cast<T*>(data());
  }
  // Guard bytes before and after the payload are untouched.
  bool intact() const {
    for (std::size_t i = 0; i < offset; ++i)
      if (bytes[i] != guard_byte) return false;
    for (std::size_t i = offset + size; i < bytes.size(); ++i)
      if (bytes[i] != guard_byte) return false;
    return true;
  }
  // A payload whose address is `residue` modulo 64, after at least `residue` guard bytes.
  static Guarded at_residue(std::size_t payload, std::size_t residue) {
    Guarded g(payload, 64 + residue);
    const auto base = reinterpret_cast<std::uintptr_t>(g.bytes.data());
    g.offset = (64 - base % 64) % 64 + residue;
    return g;
  }
  std::vector<std::uint8_t> payload() const {
    return {bytes.begin() + static_cast<std::ptrdiff_t>(offset),
            bytes.begin() + static_cast<std::ptrdiff_t>(offset + size)};
  }
};

// Inputs that exercise every branch: ordinary values, exact ties, grid edges,
// NaN, +-Inf, +-0, huge values and subnormals.
float interesting_value(std::mt19937_64& rng, float scale) {
  std::uniform_int_distribution<int> kind(0, 15);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> step(-300, 300);
  switch (kind(rng)) {
    case 0:
      return std::numeric_limits<float>::quiet_NaN();
    case 1:
      return unit(rng) < 0 ? -INFINITY : INFINITY;
    case 2:
      return unit(rng) < 0 ? -0.0f : 0.0f;
    case 3:
      return unit(rng) * 3e38f;
    case 4:
      return unit(rng) * 1e-40f;
    case 5:
    case 6:
      return (static_cast<float>(step(rng)) + 0.5f) * scale;  // a tie when scale is a power of 2
    default:
      return unit(rng) * scale * 300.0f;
  }
}

// n elements of type T (4 or 2 bytes each) at byte offset `offset`, element k = value(k).
template <class Value>
Guarded input_of(K::FloatType type, std::int64_t n, std::size_t offset, Value value) {
  const std::size_t size = type == K::FloatType::f32 ? 4 : 2;
  Guarded in(static_cast<std::size_t>(n) * size, offset);
  for (std::int64_t k = 0; k < n; ++k) {
    const float v = value(k);
    unsigned char* at = static_cast<unsigned char*>(in.data()) + static_cast<std::size_t>(k) * size;
    if (type == K::FloatType::f32) {
      std::memcpy(at, &v, 4);
    } else {
      const std::uint16_t bits =
          type == K::FloatType::f16 ? Q::float_to_float16(v) : Q::float_to_bfloat16(v);
      std::memcpy(at, &bits, 2);
    }
  }
  return in;
}

// n interesting values (every branch) of type T at byte offset `offset`.
Guarded make_input(K::FloatType type, std::int64_t n, std::size_t offset, std::mt19937_64& rng,
                   float scale) {
  return input_of(type, n, offset, [&](std::int64_t) { return interesting_value(rng, scale); });
}

// n values of type T without special ones: ordinary values and exact ties within 300 steps.
Guarded make_ordinary_input(K::FloatType type, std::int64_t n, std::mt19937_64& rng, float scale) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> step(-300, 300);
  return input_of(type, n, 0, [&](std::int64_t k) {
    return k % 3 == 0 ? (static_cast<float>(step(rng)) + 0.5f) * scale : unit(rng) * scale * 300.0f;
  });
}

// Grids of every storage width, full and custom ranges.
std::vector<K::Grid> grids_for(K::CodeWidth width) {
  switch (width) {
    case K::CodeWidth::b8:
      return {{-128, 127}, {0, 255}, {-127, 127}, {-8, 7}, {0, 15},
              {-2, 1},     {0, 3},   {-100, 27},  {3, 200}};
    case K::CodeWidth::b16:
      return {{-32768, 32767}, {0, 65535}, {-1000, 1000}};
    default:
      return {{std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()},
              {-5, 1 << 30}};
  }
}

std::size_t width_bytes(K::CodeWidth w) {
  return w == K::CodeWidth::b8 ? 1 : w == K::CodeWidth::b16 ? 2 : 4;
}

std::int32_t random_zero_point(std::mt19937_64& rng, K::Grid grid) {
  std::uniform_int_distribution<std::int64_t> z(grid.quant_min, grid.quant_max);
  return static_cast<std::int32_t>(z(rng));
}

float random_scale(std::mt19937_64& rng) {
  const float powers[] = {1.0f, 0.5f, 0.25f, 0.03125f, 4.0f, 1e-30f};
  std::uniform_int_distribution<int> pick(0, 7);
  const int p = pick(rng);
  if (p < 6) return powers[p];  // exact reciprocals: ties stay ties
  std::uniform_real_distribution<float> any(0.001f, 10.0f);
  return any(rng);
}

const K::KernelTable& table_of(Q::Isa isa) {
  switch (isa) {
    case Q::Isa::avx2:
      return K::avx2_table();
    case Q::Isa::avx512:
      return K::avx512_table();
    default:
      return K::reference_table();
  }
}

class KernelTier : public ::testing::TestWithParam<Q::Isa> {
 protected:
  void SetUp() override {
    const std::vector<Q::Isa> supported = Q::supported_isas();
    if (std::find(supported.begin(), supported.end(), GetParam()) == supported.end()) {
      GTEST_SKIP() << "tier " << Q::to_string(GetParam()) << " skipped: this CPU ("
                   << Q::cpu_features().describe() << ") does not support it";
    }
    ASSERT_EQ(tier().isa, GetParam()) << "the table of a tier must say which tier it is";
  }
  const K::KernelTable& tier() const { return table_of(GetParam()); }
  const K::KernelTable& reference() const { return K::reference_table(); }
};

const K::FloatType float_types[] = {K::FloatType::f32, K::FloatType::f16, K::FloatType::bf16};
const K::CodeWidth code_widths[] = {K::CodeWidth::b8, K::CodeWidth::b16, K::CodeWidth::b32};

std::string where(K::FloatType t, std::int64_t n, std::size_t offset, K::Grid g) {
  return "input type " + std::to_string(static_cast<int>(t)) + ", n = " + std::to_string(n) +
         ", offset " + std::to_string(offset) + ", grid [" + std::to_string(g.quant_min) + ", " +
         std::to_string(g.quant_max) + "]";
}

}  // namespace

TEST_P(KernelTier, QuantizeMatchesReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  for (const K::FloatType t : float_types) {
    for (const K::CodeWidth w : code_widths) {
      for (const K::Grid grid : grids_for(w)) {
        for (const std::int64_t n : lengths()) {
          const std::size_t offset = static_cast<std::size_t>(n % 4);
          const float scale = random_scale(rng);
          const K::Affine p{1.0f / scale, scale, random_zero_point(rng, grid)};
          Guarded x = make_input(t, n, offset, rng, scale);
          const std::size_t bytes = static_cast<std::size_t>(n) * width_bytes(w);
          Guarded expected(bytes, 0), actual(bytes, (offset + 1) % 4);
          reference().quantize[int(t)][int(w)](x.data(), n, p, grid, expected.data());
          tier().quantize[int(t)][int(w)](x.data(), n, p, grid, actual.data());
          ASSERT_EQ(actual.payload(), expected.payload()) << where(t, n, offset, grid);
          ASSERT_TRUE(actual.intact()) << where(t, n, offset, grid);
        }
      }
    }
  }
}

TEST_P(KernelTier, QuantizePerElementMatchesReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  for (const K::FloatType t : float_types) {
    for (const K::CodeWidth w : code_widths) {
      for (const K::Grid grid : grids_for(w)) {
        for (const std::int64_t n : lengths()) {
          std::vector<float> inverse(static_cast<std::size_t>(n));
          std::vector<std::int32_t> zero(static_cast<std::size_t>(n));
          for (std::size_t k = 0; k < inverse.size(); ++k) {
            inverse[k] = 1.0f / random_scale(rng);
            zero[k] = random_zero_point(rng, grid);
          }
          Guarded x = make_input(t, n, 2, rng, 0.5f);
          const std::size_t bytes = static_cast<std::size_t>(n) * width_bytes(w);
          Guarded expected(bytes, 0), actual(bytes, 1);
          reference().quantize_vec[int(t)][int(w)](x.data(), n, inverse.data(), zero.data(), grid,
                                                   expected.data());
          tier().quantize_vec[int(t)][int(w)](x.data(), n, inverse.data(), zero.data(), grid,
                                              actual.data());
          ASSERT_EQ(actual.payload(), expected.payload()) << where(t, n, 2, grid);
          ASSERT_TRUE(actual.intact()) << where(t, n, 2, grid);
        }
      }
    }
  }
}

TEST_P(KernelTier, FakeQuantizeAndMaskMatchReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  for (const K::FloatType t : float_types) {
    for (const K::CodeWidth w : code_widths) {
      const int wide = w == K::CodeWidth::b32 ? 1 : 0;
      for (const K::Grid grid : grids_for(w)) {
        for (const std::int64_t n : lengths()) {
          const float scale = random_scale(rng);
          const K::Affine p{1.0f / scale, scale, random_zero_point(rng, grid)};
          Guarded x = make_input(t, n, static_cast<std::size_t>(n % 3), rng, scale);
          const auto count = static_cast<std::size_t>(n);
          Guarded out_ref(count * 4, 0), out(count * 4, 4 * (n % 2)), mask_ref(count, 0),
              mask(count, 3);
          reference().fake_quantize[int(t)][wide](x.data(), n, p, grid, out_ref.as<float>(),
                                                  mask_ref.as<std::uint8_t>());
          tier().fake_quantize[int(t)][wide](x.data(), n, p, grid, out.as<float>(),
                                             mask.as<std::uint8_t>());
          ASSERT_EQ(out.payload(), out_ref.payload()) << where(t, n, 0, grid);
          ASSERT_EQ(mask.payload(), mask_ref.payload()) << where(t, n, 0, grid);
          ASSERT_TRUE(out.intact() && mask.intact()) << where(t, n, 0, grid);
          Guarded out_no_mask(count * 4, 0);
          tier().fake_quantize[int(t)][wide](x.data(), n, p, grid, out_no_mask.as<float>(),
                                             nullptr);
          ASSERT_EQ(out_no_mask.payload(), out_ref.payload()) << where(t, n, 0, grid);
          // Per-element parameters.
          std::vector<float> inverse(count), scales(count);
          std::vector<std::int32_t> zero(count);
          for (std::size_t k = 0; k < count; ++k) {
            scales[k] = random_scale(rng);
            inverse[k] = 1.0f / scales[k];
            zero[k] = random_zero_point(rng, grid);
          }
          reference().fake_quantize_vec[int(t)][wide](x.data(), n, inverse.data(), scales.data(),
                                                      zero.data(), grid, out_ref.as<float>(),
                                                      mask_ref.as<std::uint8_t>());
          tier().fake_quantize_vec[int(t)][wide](x.data(), n, inverse.data(), scales.data(),
                                                 zero.data(), grid, out.as<float>(),
                                                 mask.as<std::uint8_t>());
          ASSERT_EQ(out.payload(), out_ref.payload()) << where(t, n, 0, grid);
          ASSERT_EQ(mask.payload(), mask_ref.payload()) << where(t, n, 0, grid);
          ASSERT_TRUE(out.intact() && mask.intact()) << where(t, n, 0, grid);
        }
      }
    }
  }
}

// Every code type with its size in bytes.
const std::pair<K::CodeType, std::size_t> code_types[] = {{K::CodeType::i8, 1},
                                                          {K::CodeType::u8, 1},
                                                          {K::CodeType::i16, 2},
                                                          {K::CodeType::u16, 2},
                                                          {K::CodeType::i32, 4}};

TEST_P(KernelTier, DequantizeMatchesReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::uniform_int_distribution<int> byte(0, 255);
  for (const auto& [type, size] : code_types) {
    for (const std::int64_t n : lengths()) {
      const auto count = static_cast<std::size_t>(n);
      Guarded codes(count * size, static_cast<std::size_t>(n % 4));
      for (std::size_t i = 0; i < codes.size; ++i)
        codes.as<std::uint8_t>()[i] = static_cast<std::uint8_t>(byte(rng));
      const K::Grid grid = type == K::CodeType::u8    ? K::Grid{0, 255}
                           : type == K::CodeType::i8  ? K::Grid{-128, 127}
                           : type == K::CodeType::i16 ? K::Grid{-32768, 32767}
                           : type == K::CodeType::u16 ? K::Grid{0, 65535}
                                                      : grids_for(K::CodeWidth::b32)[0];
      const float scale = random_scale(rng) * (n % 7 == 0 ? 1e30f : 1.0f);
      const std::int32_t zero = random_zero_point(rng, grid);
      Guarded expected(count * 4, 0), actual(count * 4, 4);
      reference().dequantize[int(type)](codes.data(), n, scale, zero, expected.as<float>());
      tier().dequantize[int(type)](codes.data(), n, scale, zero, actual.as<float>());
      ASSERT_EQ(actual.payload(), expected.payload()) << "code type " << int(type) << " n " << n;
      ASSERT_TRUE(actual.intact());
      std::vector<float> scales(count);
      std::vector<std::int32_t> zeros(count);
      for (std::size_t k = 0; k < count; ++k) {
        scales[k] = random_scale(rng);
        zeros[k] = random_zero_point(rng, grid);
      }
      reference().dequantize_vec[int(type)](codes.data(), n, scales.data(), zeros.data(),
                                            expected.as<float>());
      tier().dequantize_vec[int(type)](codes.data(), n, scales.data(), zeros.data(),
                                       actual.as<float>());
      ASSERT_EQ(actual.payload(), expected.payload()) << "code type " << int(type) << " n " << n;
      ASSERT_TRUE(actual.intact());
    }
  }
}

// Around the vector widths and the 64-byte boundaries the non-temporal kernels split at.
const std::int64_t streaming_lengths[] = {0, 1, 7, 8, 15, 16, 17, 31, 33, 64, 100, 257, 1025};

// The non-temporal dequantize: the same bits as the reference for every residue of the output
// address modulo 64 (the aligned body, the plain head and tail), nothing written outside it.
TEST_P(KernelTier, DequantizeStreamingMatchesReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::uniform_int_distribution<int> byte(0, 255);
  for (const auto& [type, size] : code_types) {
    for (const std::int64_t n : streaming_lengths) {
      const auto count = static_cast<std::size_t>(n);
      Guarded codes(count * size, 0);
      for (std::size_t i = 0; i < codes.size; ++i)
        codes.as<std::uint8_t>()[i] = static_cast<std::uint8_t>(byte(rng));
      const float scale = random_scale(rng);
      const std::int32_t zero = type == K::CodeType::u8 ? 7 : -3;
      Guarded expected(count * 4, 0);
      reference().dequantize[int(type)](codes.data(), n, scale, zero, expected.as<float>());
      for (std::size_t residue = 0; residue < 64; residue += 4) {
        Guarded out = Guarded::at_residue(count * 4, residue);
        tier().dequantize_streaming[int(type)](codes.data(), n, scale, zero, out.as<float>());
        ASSERT_EQ(out.payload(), expected.payload())
            << "code type " << int(type) << " n " << n << " address % 64 = " << residue;
        ASSERT_TRUE(out.intact()) << "code type " << int(type) << " n " << n;
      }
    }
  }
}

// The non-temporal fake_quantize: the same output and mask as the reference for every residue
// of the output address modulo 64, nothing written outside them.
TEST_P(KernelTier, FakeQuantizeStreamingMatchesReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  for (const K::FloatType t : float_types) {
    for (const K::CodeWidth w : code_widths) {
      const int wide = w == K::CodeWidth::b32 ? 1 : 0;
      for (const K::Grid grid : grids_for(w)) {
        for (const std::int64_t n : streaming_lengths) {
          const float scale = random_scale(rng);
          const K::Affine p{1.0f / scale, scale, random_zero_point(rng, grid)};
          Guarded x = make_input(t, n, 0, rng, scale);
          const auto count = static_cast<std::size_t>(n);
          Guarded expected(count * 4, 0), expected_mask(count, 0);
          reference().fake_quantize[int(t)][wide](x.data(), n, p, grid, expected.as<float>(),
                                                  expected_mask.as<std::uint8_t>());
          for (std::size_t residue = 0; residue < 64; residue += 4) {
            Guarded out = Guarded::at_residue(count * 4, residue), mask(count, 1);
            tier().fake_quantize_streaming[int(t)][wide](x.data(), n, p, grid, out.as<float>(),
                                                         mask.as<std::uint8_t>());
            ASSERT_EQ(out.payload(), expected.payload())
                << where(t, n, 0, grid) << " residue " << residue;
            ASSERT_EQ(mask.payload(), expected_mask.payload()) << where(t, n, 0, grid);
            ASSERT_TRUE(out.intact() && mask.intact()) << where(t, n, 0, grid);
            Guarded no_mask = Guarded::at_residue(count * 4, residue);
            tier().fake_quantize_streaming[int(t)][wide](x.data(), n, p, grid, no_mask.as<float>(),
                                                         nullptr);
            ASSERT_EQ(no_mask.payload(), expected.payload()) << where(t, n, 0, grid);
          }
        }
      }
    }
  }
}

namespace {

// n int32 accumulators at byte offset `offset`: mostly within +-100000, every fifth anywhere in
// int32, and INT32_MIN at k % 17 == 3.
Guarded random_accumulators(std::int64_t n, std::size_t offset, std::mt19937_64& rng) {
  std::uniform_int_distribution<std::int32_t> any_acc(std::numeric_limits<std::int32_t>::min(),
                                                      std::numeric_limits<std::int32_t>::max());
  std::uniform_int_distribution<std::int32_t> small_acc(-100000, 100000);
  const auto count = static_cast<std::size_t>(n);
  Guarded acc(count * 4, offset);
  for (std::size_t k = 0; k < count; ++k) {
    acc.as<std::int32_t>()[k] = k % 5 == 0 ? any_acc(rng) : small_acc(rng);
    if (k % 17 == 3) acc.as<std::int32_t>()[k] = std::numeric_limits<std::int32_t>::min();
  }
  return acc;
}

}  // namespace

// Lengths of the byte-output streaming tests: around the 32- and 64-code vectors, and several
// 256-code blocks of the AVX2 saturating quantize (a block with a NaN or huge value is redone).
const std::int64_t streaming_code_lengths[] = {0, 1, 31, 32, 33, 63, 64, 65, 100, 257, 1025, 2113};

// The non-temporal 8-bit quantize: the same codes as the reference for every residue of the
// output address modulo 64, nothing written outside them; inputs with every kind of special
// value (so every block is redone) and with ordinary values only (never redone).
TEST_P(KernelTier, QuantizeStreamingMatchesReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  for (const K::FloatType t : float_types) {
    for (const K::Grid grid : grids_for(K::CodeWidth::b8)) {
      for (const std::int64_t n : streaming_code_lengths) {
        for (const bool special : {true, false}) {
          const float scale = random_scale(rng);
          const K::Affine p{1.0f / scale, scale, random_zero_point(rng, grid)};
          Guarded x =
              special ? make_input(t, n, 0, rng, scale) : make_ordinary_input(t, n, rng, scale);
          const auto count = static_cast<std::size_t>(n);
          Guarded expected(count, 0);
          reference().quantize[int(t)][0](x.data(), n, p, grid, expected.data());
          for (std::size_t residue = 0; residue < 64; ++residue) {
            Guarded out = Guarded::at_residue(count, residue);
            tier().quantize_streaming[int(t)](x.data(), n, p, grid, out.data());
            ASSERT_EQ(out.payload(), expected.payload())
                << where(t, n, 0, grid) << (special ? ", special values" : ", ordinary values")
                << ", address % 64 = " << residue;
            ASSERT_TRUE(out.intact()) << where(t, n, 0, grid) << " residue " << residue;
          }
        }
      }
    }
  }
}

// The non-temporal requantize: the same codes as the reference for every residue of the output
// address modulo 64, for multipliers of the saturating path (<= 1) and of the double one (> 1).
TEST_P(KernelTier, RequantizeStreamingMatchesReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::uniform_real_distribution<float> multiplier(1e-6f, 1.0f);
  for (const K::Grid grid : grids_for(K::CodeWidth::b8)) {
    for (const std::int64_t n : streaming_code_lengths) {
      const auto count = static_cast<std::size_t>(n);
      Guarded acc = random_accumulators(n, 0, rng);
      for (const float m : {0.5f, 1.0f, multiplier(rng), 1e-30f, 1.5f}) {
        const std::int32_t z = random_zero_point(rng, grid);
        Guarded expected(count, 0);
        reference().requantize(acc.as<std::int32_t>(), n, m, z, grid, expected.as<std::uint8_t>());
        for (std::size_t residue = 0; residue < 64; ++residue) {
          Guarded out = Guarded::at_residue(count, residue);
          tier().requantize_streaming(acc.as<std::int32_t>(), n, m, z, grid,
                                      out.as<std::uint8_t>());
          ASSERT_EQ(out.payload(), expected.payload())
              << "n = " << n << ", multiplier " << m << ", grid [" << grid.quant_min << ", "
              << grid.quant_max << "], address % 64 = " << residue;
          ASSERT_TRUE(out.intact()) << "n = " << n << " residue " << residue;
        }
      }
    }
  }
}

TEST_P(KernelTier, PackAndUnpackMatchReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  for (const int bits : {4, 2}) {
    const int per_byte = 8 / bits;
    for (const bool is_signed : {true, false}) {
      std::uniform_int_distribution<int> code(is_signed ? -(1 << (bits - 1)) : 0,
                                              is_signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1);
      for (const std::int64_t n : lengths()) {
        const auto count = static_cast<std::size_t>(n);
        const std::size_t packed_bytes = (count + per_byte - 1) / per_byte;
        std::vector<std::int8_t> codes(count);
        for (auto& c : codes)
          c = static_cast<std::int8_t>(code(rng));
        Guarded expected(packed_bytes, 0), actual(packed_bytes, 1 + count % 3);
        const K::PackFn ref_pack = bits == 4 ? reference().pack4 : reference().pack2;
        const K::PackFn pack = bits == 4 ? tier().pack4 : tier().pack2;
        ref_pack(codes.data(), n, expected.as<std::uint8_t>());
        pack(codes.data(), n, actual.as<std::uint8_t>());
        ASSERT_EQ(actual.payload(), expected.payload()) << bits << " bits, n = " << n;
        ASSERT_TRUE(actual.intact());
        const K::UnpackFn unpack =
            bits == 4 ? (is_signed ? tier().unpack4_signed : tier().unpack4_unsigned)
                      : (is_signed ? tier().unpack2_signed : tier().unpack2_unsigned);
        Guarded unpacked(count, 3);
        unpack(actual.as<std::uint8_t>(), n, unpacked.as<std::int8_t>());
        ASSERT_TRUE(count == 0 || std::memcmp(unpacked.data(), codes.data(), count) == 0)
            << bits << " bits, n " << n;
        ASSERT_TRUE(unpacked.intact());
      }
    }
  }
}

TEST_P(KernelTier, RangesMatchReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::uniform_real_distribution<float> start(-5.0f, 5.0f);
  for (const K::FloatType t : float_types) {
    for (const std::int64_t n : lengths()) {
      Guarded x = make_input(t, n, static_cast<std::size_t>(n % 4), rng, 0.01f);
      const float lo0 = start(rng), hi0 = lo0 + 1.0f;
      float lo_ref = lo0, hi_ref = hi0, lo = lo0, hi = hi0;
      const std::int64_t bad_ref = reference().minmax[int(t)](x.data(), n, &lo_ref, &hi_ref);
      ASSERT_EQ(tier().minmax[int(t)](x.data(), n, &lo, &hi), bad_ref) << "n = " << n;
      ASSERT_EQ(lo, lo_ref) << "n = " << n;  // -0 == +0: the sign of a zero is unspecified
      ASSERT_EQ(hi, hi_ref) << "n = " << n;
      float top_ref = std::fabs(lo0), top = top_ref;
      ASSERT_EQ(tier().abs_max[int(t)](x.data(), n, &top),
                reference().abs_max[int(t)](x.data(), n, &top_ref));
      ASSERT_EQ(top, top_ref) << "n = " << n;
      const auto count = static_cast<std::size_t>(n);
      std::vector<float> mins_ref(count), maxs_ref(count), tops_ref(count);
      for (std::size_t k = 0; k < count; ++k) {
        mins_ref[k] = start(rng);
        maxs_ref[k] = mins_ref[k] + 0.5f;
        tops_ref[k] = std::fabs(mins_ref[k]);
      }
      std::vector<float> mins = mins_ref, maxs = maxs_ref, tops = tops_ref;
      ASSERT_EQ(tier().minmax_vec[int(t)](x.data(), n, mins.data(), maxs.data()),
                reference().minmax_vec[int(t)](x.data(), n, mins_ref.data(), maxs_ref.data()));
      ASSERT_EQ(mins, mins_ref) << "n = " << n;
      ASSERT_EQ(maxs, maxs_ref) << "n = " << n;
      ASSERT_EQ(tier().abs_max_vec[int(t)](x.data(), n, tops.data()),
                reference().abs_max_vec[int(t)](x.data(), n, tops_ref.data()));
      ASSERT_EQ(tops, tops_ref) << "n = " << n;
    }
  }
}

// Stores v as element k of a `type` buffer.
void put(Guarded& x, K::FloatType type, std::int64_t k, float v) {
  auto* at = static_cast<unsigned char*>(x.data());
  if (type == K::FloatType::f32) {
    std::memcpy(at + 4 * k, &v, 4);
    return;
  }
  const std::uint16_t bits =
      type == K::FloatType::f16 ? Q::float_to_float16(v) : Q::float_to_bfloat16(v);
  std::memcpy(at + 2 * k, &bits, 2);
}

// The range kernels' fast paths work on blocks of finite values and re-run a block
// holding NaN or Inf exactly: mostly finite inputs with one non-finite value at
// block and vector edges, in the tail, and inputs with no finite value at all.
TEST_P(KernelTier, RangesWithFewNonFiniteValuesMatchReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY};
  for (const K::FloatType t : float_types) {
    for (const std::int64_t n : {512, 513, 1024 + 17, 4096, 4096 + 5}) {
      std::vector<std::int64_t> places = {-1, 0, 15, 16, 511, 512, n - 1, n / 2};
      for (const std::int64_t place : places) {
        for (const float special : specials) {
          for (const bool all_special : {false, true}) {
            if (all_special && place != -1) continue;
            Guarded x(static_cast<std::size_t>(n) * (t == K::FloatType::f32 ? 4 : 2), 0);
            for (std::int64_t k = 0; k < n; ++k) {
              const float v = k % 97 == 5 ? -0.0f : k % 89 == 7 ? 1e-40f : normal(rng);
              put(x, t, k, all_special ? special : v);
            }
            if (place >= 0 && place < n) put(x, t, place, special);
            const std::string at = "type " + std::to_string(int(t)) + ", n = " + std::to_string(n) +
                                   ", place " + std::to_string(place) + ", value " +
                                   std::to_string(special) + (all_special ? " everywhere" : "");
            float lo_ref = INFINITY, hi_ref = -INFINITY, lo = lo_ref, hi = hi_ref;
            ASSERT_EQ(tier().minmax[int(t)](x.data(), n, &lo, &hi),
                      reference().minmax[int(t)](x.data(), n, &lo_ref, &hi_ref))
                << at;
            ASSERT_EQ(lo, lo_ref) << at;  // -0 == +0: the sign of a zero is unspecified
            ASSERT_EQ(hi, hi_ref) << at;
            float top_ref = 0.0f, top = 0.0f;
            ASSERT_EQ(tier().abs_max[int(t)](x.data(), n, &top),
                      reference().abs_max[int(t)](x.data(), n, &top_ref))
                << at;
            ASSERT_EQ(top, top_ref) << at;
          }
        }
      }
    }
  }
}

TEST_P(KernelTier, RequantizeMatchesReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::uniform_real_distribution<float> multiplier(1e-6f, 2.0f);
  for (const K::Grid grid : grids_for(K::CodeWidth::b8)) {
    for (const std::int64_t n : lengths()) {
      const auto count = static_cast<std::size_t>(n);
      Guarded acc = random_accumulators(n, 4 * (count % 2), rng);
      // 0.5: exact ties; 1: the largest multiplier of the AVX2 saturating path; 1e-30: tiny.
      const float m = n % 3 == 0    ? 0.5f
                      : n % 7 == 1  ? 1.0f
                      : n % 11 == 2 ? 1e-30f
                                    : multiplier(rng);
      const std::int32_t z = random_zero_point(rng, grid);
      Guarded expected(count, 0), actual(count, 1);
      reference().requantize(acc.as<std::int32_t>(), n, m, z, grid, expected.as<std::uint8_t>());
      tier().requantize(acc.as<std::int32_t>(), n, m, z, grid, actual.as<std::uint8_t>());
      ASSERT_EQ(actual.payload(), expected.payload()) << "n = " << n;
      ASSERT_TRUE(actual.intact());
      std::vector<float> ms(count);
      std::vector<std::int32_t> zs(count);
      for (std::size_t k = 0; k < count; ++k) {
        ms[k] = multiplier(rng);
        zs[k] = random_zero_point(rng, grid);
      }
      reference().requantize_vec(acc.as<std::int32_t>(), n, ms.data(), zs.data(), grid,
                                 expected.as<std::uint8_t>());
      tier().requantize_vec(acc.as<std::int32_t>(), n, ms.data(), zs.data(), grid,
                            actual.as<std::uint8_t>());
      ASSERT_EQ(actual.payload(), expected.payload()) << "n = " << n;
      ASSERT_TRUE(actual.intact());
    }
  }
}

// The 8-bit quantize kernels' fast blocks (no float clamp, saturating int16 packs) and the blocks
// they redo: mostly finite steps, ties and steps beyond the grid and beyond int16 (|step| up to
// 40000), with one block each holding a NaN, +-Inf, +-3e38, a step of exactly -32768, a tie that
// rounds to -32768 or 32768, a denormal, around clean blocks; every 8-bit grid, random zero
// points and scales, every input type, a ragged tail.
// The GEMM's requantized output stage, one row: the reference's bytes for int8 and uint8 grids,
// zero points at both ends, ReLU's raised floor, exact ties (multipliers of 1/2 and 1/4), int32
// extremes, biases and offsets, every length around the 8-column step.
TEST_P(KernelTier, GemmRequantizeRowMatchesReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::uniform_real_distribution<double> any_multiplier(1e-9, 2.0), any_offset(-300.0, 300.0);
  std::uniform_int_distribution<std::int32_t> any_bias(-1000000, 1000000);
  struct Output {
    std::int32_t quant_min, quant_max, zero_point;
    bool relu;
  };
  const Output outputs[] = {{-128, 127, -3, false}, {-128, 127, -128, false},
                            {-128, 127, 127, true}, {0, 255, 0, false},
                            {0, 255, 255, false},   {0, 255, 7, true}};
  for (const Output& o : outputs) {
    const double low = std::max(o.quant_min, o.relu ? o.zero_point : o.quant_min) - o.zero_point;
    const double high = o.quant_max - o.zero_point;
    for (const std::int64_t n : lengths()) {
      const auto count = static_cast<std::size_t>(n);
      Guarded acc = random_accumulators(n, 0, rng);
      std::vector<double> bias(count), multiplier(count), offset(count);
      for (std::size_t j = 0; j < count; ++j) {
        bias[j] = j % 3 == 0 ? 0.0 : any_bias(rng);
        multiplier[j] = j % 4 == 0 ? 0.5 : j % 4 == 1 ? 0.25 : any_multiplier(rng);
        offset[j] = j % 5 == 0 ? 0.0 : any_offset(rng);
      }
      const lucid::quantization::igemm::RequantizeRowArgs args{
          .bias = bias.data(),
          .multiplier = multiplier.data(),
          .offset = offset.data(),
          .below = low - 1.0,
          .above = high + 1.0,
          .low = low,
          .high = high,
          .zero_point = static_cast<double>(o.zero_point)};
      Guarded expected(count, 0), actual(count, 1);
      reference().gemm_requantize_row(acc.as<std::int32_t>(), n, args, expected.as<std::uint8_t>());
      tier().gemm_requantize_row(acc.as<std::int32_t>(), n, args, actual.as<std::uint8_t>());
      ASSERT_EQ(actual.payload(), expected.payload())
          << "n = " << n << ", grid [" << o.quant_min << ", " << o.quant_max << "], z "
          << o.zero_point << (o.relu ? ", relu" : "");
      ASSERT_TRUE(actual.intact()) << "n = " << n;
    }
  }
}

TEST_P(KernelTier, QuantizeInt8BlocksMatchReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::uniform_int_distribution<int> kind(0, 7), step(-300, 300), far(-40000, 40000);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const std::int64_t block = 256, n = 14 * block + 37;
  for (const K::FloatType t : float_types) {
    for (const K::Grid grid : grids_for(K::CodeWidth::b8)) {
      for (int round = 0; round < 4; ++round) {
        const float scale = random_scale(rng);
        const K::Affine p{1.0f / scale, scale, random_zero_point(rng, grid)};
        Guarded x(static_cast<std::size_t>(n) * (t == K::FloatType::f32 ? 4 : 2), 0);
        for (std::int64_t k = 0; k < n; ++k) {
          const int c = kind(rng);
          const float v = c == 0   ? (static_cast<float>(step(rng)) + 0.5f) * scale
                          : c == 1 ? static_cast<float>(far(rng)) * scale
                                   : unit(rng) * scale * 300.0f;
          put(x, t, k, v);
        }
        const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                                  INFINITY,
                                  -INFINITY,
                                  3e38f,
                                  -3e38f,
                                  -32768.0f * scale,
                                  -32767.5f * scale,
                                  32767.5f * scale,
                                  1e-40f};
        for (std::size_t i = 0; i < std::size(specials); ++i) {
          const auto b = static_cast<std::int64_t>(2 * i + 1) % 14;  // odd blocks; even ones clean
          put(x, t, b * block + (b * 37 + round) % block, specials[i]);
        }
        Guarded expected(static_cast<std::size_t>(n), 0), actual(static_cast<std::size_t>(n), 1);
        reference().quantize[int(t)][0](x.data(), n, p, grid, expected.data());
        tier().quantize[int(t)][0](x.data(), n, p, grid, actual.data());
        ASSERT_EQ(actual.payload(), expected.payload())
            << "type " << int(t) << ", grid [" << grid.quant_min << ", " << grid.quant_max
            << "], scale " << scale << ", zero point " << p.zero_point;
        ASSERT_TRUE(actual.intact());
      }
    }
  }
}

// The fused per-group kernels: group sizes on and off the 8-lane vectors (odd and even vector
// counts, multiples of 32), 8-group batches that are clean or hold a NaN, a +Inf, a -Inf or
// nothing finite (the exact re-run) and a last partial batch, for ranges and abs-maxes; every
// 8-bit grid, per-group parameters (zero points changing per group or shared), huge values
// against the grid's ends; on 4-bit grids the packed entry too.
TEST_P(KernelTier, GroupRangesAndCodesMatchReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY};
  for (const K::FloatType t : float_types) {
    for (const std::int64_t size : {1, 7, 8, 24, 32, 40, 64, 96, 128, 131, 136}) {
      const std::int64_t groups = 35;  // 4 batches of 8 and 3 more
      const std::int64_t n = groups * size;
      Guarded x(static_cast<std::size_t>(n) * (t == K::FloatType::f32 ? 4 : 2), 0);
      for (std::int64_t k = 0; k < n; ++k)
        put(x, t, k, k % 97 == 5 ? -0.0f : k % 89 == 3 ? 6e4f * (k % 2 ? 1 : -1) : normal(rng));
      put(x, t, 2 * size + size / 2, specials[0]);  // batch 0: a NaN, an Inf, nothing finite
      put(x, t, 4 * size, specials[1]);
      for (std::int64_t k = 6 * size; k < 7 * size; ++k)
        put(x, t, k, specials[k % 3]);
      put(x, t, 19 * size + size - 1, specials[2]);  // batch 2: a -Inf; batch 1 is clean
      put(x, t, 29 * size, specials[1]);             // batch 3: a +Inf
      put(x, t, 33 * size + size / 3, specials[0]);  // the last groups: a NaN
      const std::string at =
          "type " + std::to_string(int(t)) + ", group size " + std::to_string(size);
      std::vector<float> lo(groups), hi(groups), lo_ref(groups), hi_ref(groups);
      EXPECT_FALSE(
          reference().minmax_groups[int(t)](x.data(), groups, size, lo_ref.data(), hi_ref.data()))
          << at << ": the groups hold NaN and Inf";
      EXPECT_FALSE(tier().minmax_groups[int(t)](x.data(), groups, size, lo.data(), hi.data()))
          << at << ": the groups hold NaN and Inf";
      EXPECT_EQ(lo, lo_ref) << at;  // -0 == +0: the sign of a zero is unspecified
      EXPECT_EQ(hi, hi_ref) << at;
      // The abs-maxes symmetric schemes take: max(|min|, |max|) of the finite, 0 for none.
      std::vector<float> top(groups), top_ref(groups), from_range(groups);
      EXPECT_FALSE(reference().abs_max_groups[int(t)](x.data(), groups, size, top_ref.data()));
      EXPECT_FALSE(tier().abs_max_groups[int(t)](x.data(), groups, size, top.data())) << at;
      for (std::int64_t g = 0; g < groups; ++g)
        from_range[g] = lo_ref[g] > hi_ref[g] ? 0.0f : std::max(-lo_ref[g], hi_ref[g]);
      EXPECT_EQ(top_ref, from_range) << at;
      EXPECT_EQ(top, top_ref) << at;
      for (const K::Grid grid : grids_for(K::CodeWidth::b8)) {
        std::vector<float> inv(groups), scales(groups);
        std::vector<std::int32_t> zero_points(groups);
        for (std::int64_t g = 0; g < groups; ++g) {
          scales[g] = random_scale(rng);
          inv[g] = 1.0f / scales[g];
          zero_points[g] = random_zero_point(rng, grid);
        }
        // Zero points all 0 (the kernels then add none) on the signed 4-bit grid.
        if (grid.quant_min == -8) std::fill(zero_points.begin(), zero_points.end(), 0);
        Guarded expected(static_cast<std::size_t>(n), 0), actual(static_cast<std::size_t>(n), 1);
        reference().quantize_groups[int(t)](x.data(), groups, size, inv.data(), scales.data(),
                                            zero_points.data(), grid, K::GroupValues::any,
                                            expected.as<std::int8_t>());
        tier().quantize_groups[int(t)](x.data(), groups, size, inv.data(), scales.data(),
                                       zero_points.data(), grid, K::GroupValues::any,
                                       actual.as<std::int8_t>());
        ASSERT_EQ(actual.payload(), expected.payload())
            << at << ", grid [" << grid.quant_min << ", " << grid.quant_max << "]";
        ASSERT_TRUE(actual.intact()) << at;
        // Batch 1 alone: a call without NaN or Inf (the fast paths end to end).
        const auto* clean = static_cast<const unsigned char*>(x.data()) +
                            8 * size * (t == K::FloatType::f32 ? 4 : 2);
        Guarded expected1(static_cast<std::size_t>(8 * size), 0),
            actual1(static_cast<std::size_t>(8 * size), 1);
        reference().quantize_groups[int(t)](clean, 8, size, inv.data() + 8, scales.data() + 8,
                                            zero_points.data() + 8, grid, K::GroupValues::any,
                                            expected1.as<std::int8_t>());
        tier().quantize_groups[int(t)](clean, 8, size, inv.data() + 8, scales.data() + 8,
                                       zero_points.data() + 8, grid, K::GroupValues::any,
                                       actual1.as<std::int8_t>());
        ASSERT_EQ(actual1.payload(), expected1.payload())
            << at << ", groups 8-15, grid [" << grid.quant_min << ", " << grid.quant_max << "]";
        ASSERT_TRUE(actual1.intact()) << at;
        if (grid.quant_max - grid.quant_min > 15 || size % 2 != 0) continue;
        // 4-bit grids: the same codes packed two per byte (the reference pack of the reference
        // codes), all groups and the clean batch alone.
        for (const std::int64_t first : {std::int64_t{0}, std::int64_t{8}}) {
          const std::int64_t count = first == 0 ? groups : 8;
          const auto m = static_cast<std::size_t>(count * size);
          const auto* codes = expected.as<std::int8_t>() + first * size;
          Guarded packed_expected(m / 2, 0), packed(m / 2, 1);
          reference().pack4(codes, count * size, packed_expected.as<std::uint8_t>());
          const auto* input = static_cast<const unsigned char*>(x.data()) +
                              first * size * (t == K::FloatType::f32 ? 4 : 2);
          tier().quantize_groups_int4[int(t)](input, count, size, inv.data() + first,
                                              scales.data() + first, zero_points.data() + first,
                                              grid, K::GroupValues::any, packed.as<std::uint8_t>());
          ASSERT_EQ(packed.payload(), packed_expected.payload())
              << at << ", packed, groups " << first << "-" << first + count - 1 << ", grid ["
              << grid.quant_min << ", " << grid.quant_max << "]";
          ASSERT_TRUE(packed.intact()) << at;
        }
      }
    }
  }
}

// The per-group codes kernels told that the values lie in their groups' own ranges
// (GroupValues::own_range: finite input, parameters from the groups' own ranges, as
// quantize_per_group calls them), which skips the kernels' checks: the same codes as the
// reference. Groups of ordinary, tiny, huge and one-signed values and of zeros (scale eps), both
// schemes (symmetric signed grids: every zero point 0, no zero point added), every 8-bit grid.
TEST_P(KernelTier, GroupCodesInTheirOwnRangesMatchReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float magnitudes[] = {1.0f, 3e-38f, 1e-20f, 6e4f, 1e30f};
  for (const K::FloatType t : float_types) {
    for (const std::int64_t size : {8, 32, 64, 96, 128, 136}) {
      const std::int64_t groups = 21;
      const std::int64_t n = groups * size;
      Guarded x(static_cast<std::size_t>(n) * (t == K::FloatType::f32 ? 4 : 2), 0);
      for (std::int64_t g = 0; g < groups; ++g) {
        const float magnitude = t == K::FloatType::f16 ? 1.0f : magnitudes[g % 5];
        for (std::int64_t k = g * size; k < (g + 1) * size; ++k) {
          const float v = normal(rng) * magnitude;
          put(x, t, k,
              g % 7 == 3   ? 0.0f
              : g % 4 == 1 ? std::fabs(v)
              : g % 4 == 2 ? -std::fabs(v)
                           : v);
        }
      }
      for (const K::Grid grid : grids_for(K::CodeWidth::b8)) {
        for (const bool symmetric : {false, true}) {
          const std::string at =
              "type " + std::to_string(int(t)) + ", group size " + std::to_string(size) +
              ", grid [" + std::to_string(grid.quant_min) + ", " + std::to_string(grid.quant_max) +
              "], " + (symmetric ? "symmetric" : "affine");
          const std::int32_t zero =
              grid.quant_min < 0 ? 0 : (grid.quant_min + grid.quant_max + 1) / 2;
          const K::RangeRule rule{symmetric, grid.quant_min, grid.quant_max, zero,
                                  std::numeric_limits<float>::epsilon()};
          std::vector<float> mins(groups, 0.0f), maxs(groups);
          const bool finite =
              symmetric
                  ? tier().abs_max_groups[int(t)](x.data(), groups, size, maxs.data())
                  : tier().minmax_groups[int(t)](x.data(), groups, size, mins.data(), maxs.data());
          ASSERT_TRUE(finite) << at << ": every element is finite";
          std::vector<float> inv(groups), scales(groups);
          std::vector<std::int32_t> zero_points(groups);
          tier().group_qparams(mins.data(), maxs.data(), groups, rule, inv.data(), scales.data(),
                               zero_points.data());
          Guarded expected(static_cast<std::size_t>(n), 0), actual(static_cast<std::size_t>(n), 1);
          reference().quantize_groups[int(t)](x.data(), groups, size, inv.data(), scales.data(),
                                              zero_points.data(), grid, K::GroupValues::any,
                                              expected.as<std::int8_t>());
          tier().quantize_groups[int(t)](x.data(), groups, size, inv.data(), scales.data(),
                                         zero_points.data(), grid, K::GroupValues::own_range,
                                         actual.as<std::int8_t>());
          ASSERT_EQ(actual.payload(), expected.payload()) << at;
          ASSERT_TRUE(actual.intact()) << at;
          if (grid.quant_max - grid.quant_min > 15) continue;
          Guarded packed_expected(static_cast<std::size_t>(n / 2), 0),
              packed(static_cast<std::size_t>(n / 2), 1);
          reference().pack4(expected.as<std::int8_t>(), n, packed_expected.as<std::uint8_t>());
          tier().quantize_groups_int4[int(t)](x.data(), groups, size, inv.data(), scales.data(),
                                              zero_points.data(), grid, K::GroupValues::own_range,
                                              packed.as<std::uint8_t>());
          ASSERT_EQ(packed.payload(), packed_expected.payload()) << at << ", packed";
          ASSERT_TRUE(packed.intact()) << at;
        }
      }
    }
  }
}

// The per-group parameters: ranges that saw nothing finite (min > max), signed zeros, one-sided
// and huge ranges (an affine max - min that overflows float32), ranges below eps, every grid
// width, both schemes, a last partial batch of 8.
TEST_P(KernelTier, GroupQParamsMatchReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const float big = std::numeric_limits<float>::max();
  const std::int64_t groups = 8 * 6 + 5;
  std::vector<float> mins(groups), maxs(groups);
  for (std::int64_t g = 0; g < groups; ++g) {
    const float magnitude = std::pow(10.0f, static_cast<float>(g % 13) * 3.0f - 30.0f);
    const float a = unit(rng) * magnitude, b = unit(rng) * magnitude;
    mins[g] = std::min(a, b);
    maxs[g] = std::max(a, b);
    switch (g % 8) {
      case 1:
        mins[g] = std::fabs(mins[g]);
        break;  // positive only
      case 2:
        maxs[g] = -std::fabs(maxs[g]);
        break;  // negative only
      case 3:
        mins[g] = -0.0f;
        maxs[g] = 0.0f;
        break;
      case 4:
        mins[g] = INFINITY;
        maxs[g] = -INFINITY;
        break;  // nothing finite
      default:
        break;
    }
    if (mins[g] > maxs[g] && g % 8 != 4) std::swap(mins[g], maxs[g]);
  }
  mins[13] = -big;  // batch 1: max - min overflows float32
  maxs[13] = big;
  mins[groups - 2] = -big;  // and in the last partial batch
  maxs[groups - 2] = big / 2;
  std::vector<K::Grid> grids = grids_for(K::CodeWidth::b8);
  for (const K::CodeWidth w : {K::CodeWidth::b16, K::CodeWidth::b32})
    for (const K::Grid grid : grids_for(w))
      grids.push_back(grid);
  for (const K::Grid grid : grids) {
    for (const bool symmetric : {false, true}) {
      for (const float eps : {std::numeric_limits<float>::epsilon(), 1e-30f, 0.5f}) {
        const auto middle = static_cast<std::int32_t>(
            (static_cast<std::int64_t>(grid.quant_min) + grid.quant_max) / 2);
        const K::RangeRule rule{symmetric, grid.quant_min, grid.quant_max, middle, eps};
        std::vector<float> inv(groups), scales(groups), inv_ref(groups), scales_ref(groups);
        std::vector<std::int32_t> zps(groups), zps_ref(groups);
        reference().group_qparams(mins.data(), maxs.data(), groups, rule, inv_ref.data(),
                                  scales_ref.data(), zps_ref.data());
        tier().group_qparams(mins.data(), maxs.data(), groups, rule, inv.data(), scales.data(),
                             zps.data());
        const std::string at = "grid [" + std::to_string(grid.quant_min) + ", " +
                               std::to_string(grid.quant_max) + "], symmetric " +
                               std::to_string(symmetric) + ", eps " + std::to_string(eps);
        for (std::int64_t g = 0; g < groups; ++g) {
          ASSERT_EQ(std::memcmp(&scales[g], &scales_ref[g], 4), 0) << at << ", group " << g;
          ASSERT_EQ(std::memcmp(&inv[g], &inv_ref[g], 4), 0) << at << ", group " << g;
          ASSERT_EQ(zps[g], zps_ref[g]) << at << ", group " << g;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tiers, KernelTier, ::testing::Values(Q::Isa::avx2, Q::Isa::avx512),
                         [](const auto& info) { return Q::to_string(info.param); });
