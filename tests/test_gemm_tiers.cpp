// Every int8 GEMM kernel variant the CPU supports against the reference kernel, bit for bit:
// shapes around tile edges, uint8 / int8 codes, extreme zero points, strided and unaligned
// rows whose last byte ends the allocation (ASan catches any read past it), guard bytes after C.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gemm/packed_layout.hpp"
#include "kernels/gemm_int8.hpp"
#include "lucid/quantization/gemm.hpp"
#include "lucid/quantization/runtime.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
namespace G = lucid::quantization::igemm;

namespace {

const std::vector<std::int64_t> sizes = {1,  2,  3,  4,  5,  7,  8,  9,   15,  16,
                                         17, 31, 33, 47, 48, 49, 64, 127, 255, 257};

// A[M, K] with row stride `stride` starting `offset` bytes into an allocation
// that ends exactly at the last code of the last row.
struct Activations {
  std::unique_ptr<std::uint8_t[]> bytes;
  const std::uint8_t* data;
  Activations(std::mt19937_64& rng, std::int64_t m, std::int64_t k, std::int64_t stride,
              std::size_t offset) {
    const auto size = offset + static_cast<std::size_t>((m - 1) * stride + k);
    bytes = std::make_unique<std::uint8_t[]>(size);
    std::uniform_int_distribution<int> byte(0, 255);
    for (std::size_t i = 0; i < size; ++i)
      bytes[i] = static_cast<std::uint8_t>(byte(rng));
    data = bytes.get() + offset;
  }
};

Q::PackedWeightsInt8 random_weights(std::mt19937_64& rng, std::int64_t n, std::int64_t k) {
  std::uniform_int_distribution<int> code(-128, 127);
  std::vector<std::int8_t> w(static_cast<std::size_t>(n * k));
  for (auto& v : w)
    v = static_cast<std::int8_t>(code(rng));
  const float scale = 0.01f;
  return Q::PackedWeightsInt8::pack(w.data(), n, k, k, {&scale, 1});
}

// Runs `kernel` over the whole of A × Wᵀ into an int32 block followed by guard values.
std::vector<std::int32_t> run(const G::GemmKernel& kernel, const Activations& a, std::int64_t m,
                              std::int64_t stride, bool flip, std::int32_t zero_point,
                              const Q::PackedWeightsInt8& w) {
  const auto& layout = w.layout();
  constexpr std::int32_t guard = 0x5a5a5a5a;
  constexpr std::int64_t guard_count = 16;
  const std::int64_t width = layout.panels * G::panel_width;
  std::vector<std::int32_t> acc(static_cast<std::size_t>(m * width + guard_count), guard);
  const std::vector<std::int32_t> zero_points(static_cast<std::size_t>(m), zero_point);
  G::GemmBlock b;
  b.a = a.data;
  b.a_stride = stride;
  b.rows = m;
  b.k = layout.k;
  b.flip = flip;
  b.zero_points = zero_points.data();
  b.panels = layout.panel(0);
  b.panel_count = layout.panels;
  b.column_sums = layout.column_sums.data();
  b.acc = acc.data();
  b.acc_stride = width;
  kernel.run(b);
  for (std::int64_t i = m * width; i < m * width + guard_count; ++i)
    EXPECT_EQ(acc[static_cast<std::size_t>(i)], guard) << kernel.name << " wrote past the block";
  acc.resize(static_cast<std::size_t>(m * width));
  return acc;
}

class GemmVariant : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    const auto variants = G::gemm_kernel_variants();
    ASSERT_LT(GetParam(), variants.size());
    kernel_ = variants[GetParam()];
    if (!kernel_.supported) {
      GTEST_SKIP() << "GEMM variant " << kernel_.name << " skipped: this CPU ("
                   << Q::cpu_features().describe() << ") does not support it";
    }
  }
  G::GemmKernel kernel_{};
};

TEST_P(GemmVariant, MatchesReferenceOverShapes) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const G::GemmKernel reference = G::gemm_kernel_variants()[0];
  std::uniform_int_distribution<std::size_t> pick(0, sizes.size() - 1);
  std::uniform_int_distribution<int> offset(0, 63);
  int cases = 0;
  for (const std::int64_t k : sizes) {
    for (int repeat = 0; repeat < 10; ++repeat) {
      const std::int64_t m = sizes[pick(rng)];
      const std::int64_t n = sizes[pick(rng)];
      const Q::PackedWeightsInt8 w = random_weights(rng, n, k);
      const bool flip = repeat % 2 == 1;
      const std::int32_t low = flip ? -128 : 0;
      const std::int32_t zero_points[] = {low, low + 255, low + 128, low + 1 + repeat * 23};
      const std::int32_t z = zero_points[repeat / 2 % 4];
      const std::int64_t stride = k + (repeat % 3 == 0 ? 0 : repeat * 5);
      const Activations a(rng, m, k, stride, static_cast<std::size_t>(offset(rng)));
      const std::int32_t effective = z + (flip ? 128 : 0);
      const auto expected = run(reference, a, m, stride, flip, effective, w);
      const auto actual = run(kernel_, a, m, stride, flip, effective, w);
      ASSERT_EQ(actual, expected) << kernel_.name << " M=" << m << " N=" << n << " K=" << k
                                  << " flip=" << flip << " z=" << z << " stride=" << stride;
      ++cases;
    }
  }
  std::cout << "[ gemm ] " << kernel_.name << ": " << cases << " cases\n";
}

TEST_P(GemmVariant, SmallBatchesOverSeveralDepthBlocks) {
  // M = 1..8 and 13 (the small-M paths; AVX2's direct path: whole-panel tiles of 1-3 rows,
  // half-panel tiles of 4-6, row groups of 6 and the rest) with K around and past multiples of
  // 4096 (that path widens the activations per k block of at most 8192 / M and carries partial
  // sums across blocks), ragged tails, both code types.
  std::mt19937_64 rng(Q::testing::test_seed());
  const G::GemmKernel reference = G::gemm_kernel_variants()[0];
  for (const std::int64_t k : {4095, 4096, 4097, 8195, 12289}) {
    for (const std::int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 13}) {
      for (const bool flip : {false, true}) {
        const std::int64_t n = m % 2 == 0 ? 33 : 16;
        const Q::PackedWeightsInt8 w = random_weights(rng, n, k);
        const std::int32_t z = (flip ? -128 : 0) + static_cast<std::int32_t>(k % 200);
        const Activations a(rng, m, k, k + 3, 5);
        const std::int32_t effective = z + (flip ? 128 : 0);
        ASSERT_EQ(run(kernel_, a, m, k + 3, flip, effective, w),
                  run(reference, a, m, k + 3, flip, effective, w))
            << kernel_.name << " M=" << m << " N=" << n << " K=" << k << " flip=" << flip;
      }
    }
  }
}

TEST_P(GemmVariant, ExtremeCodesAtMaximumDepth) {
  // K = max_gemm_depth with every product at its largest magnitude: the true sums
  // K · 255 · (−128) and K · (−128) · (−128)... reach ±2^31 − 2^k and must not wrap, and every
  // pair of products exceeds int16 (a scheme that adds pairs in int16, like vpmaddubsw, fails).
  // 2, 5 and 7 rows (the small-M paths; on AVX2 the direct path's whole-panel, half-panel and
  // 6 + 1 row tiles) and 19 (AVX2's widened path: 4-row tiles and a 3-row one);
  // N = 49 pads to 4 panels (a 3-panel slice and a 1-panel one).
  const std::int64_t k = Q::max_gemm_depth;
  constexpr std::int64_t n = 49, width = 64;
  const G::GemmKernel reference = G::gemm_kernel_variants()[0];
  for (const std::int8_t code : {std::int8_t{-128}, std::int8_t{127}}) {
    std::vector<std::int8_t> wv(static_cast<std::size_t>(n * k), code);
    const float scale = 1.0f;
    const auto w = Q::PackedWeightsInt8::pack(wv.data(), n, k, k, {&scale, 1});
    for (const std::int64_t m : {2, 5, 7, 19}) {
      for (const bool flip : {false, true}) {
        // a − z = 255 (a = 255, z = 0) and −255 (a = 0, z = 255), in uint8 or int8 form.
        for (const int sign : {1, -1}) {
          std::mt19937_64 rng(1);
          Activations a(rng, m, k, k, 0);
          const std::uint8_t fill = sign > 0 ? 255 : 0;
          std::fill(a.bytes.get(), a.bytes.get() + m * k,
                    static_cast<std::uint8_t>(fill ^ (flip ? 0x80 : 0)));
          const std::int32_t effective = sign > 0 ? 0 : 255;  // z + 128 for int8 (already flipped)
          const auto expected_value = static_cast<std::int64_t>(sign) * 255 * code * k;
          ASSERT_LT(std::abs(expected_value), std::int64_t{1} << 31);
          const auto actual = run(kernel_, a, m, k, flip, effective, w);
          const auto spec = run(reference, a, m, k, flip, effective, w);
          for (std::int64_t i = 0; i < m * width; ++i) {
            const std::int64_t col = i % width;
            const std::int64_t expected = col < n ? expected_value : 0;
            ASSERT_EQ(actual[static_cast<std::size_t>(i)], expected)
                << kernel_.name << " M=" << m << " row " << i / width << " col " << col << " code "
                << int{code} << " flip " << flip << " a - z = " << sign * 255;
            ASSERT_EQ(spec[static_cast<std::size_t>(i)], expected) << "reference col " << col;
          }
        }
      }
    }
  }
}

TEST_P(GemmVariant, MatchesReferenceForNineToSixteenRows) {
  // Every row count of 9..16 (a full 8-row micro-tile and a remainder of 1..8 rows) with
  // K % 4 = 0..3, N not a multiple of 48 (one-, two- and three-panel tiles) and uint8 / int8 codes.
  std::mt19937_64 rng(Q::testing::test_seed());
  const G::GemmKernel reference = G::gemm_kernel_variants()[0];
  std::uniform_int_distribution<int> offset(0, 63);
  for (std::int64_t m = 9; m <= 16; ++m) {
    for (const std::int64_t k : {1, 2, 3, 4, 61, 130, 259, 1024}) {
      const std::int64_t n = std::vector<std::int64_t>{17, 49, 81, 33}[(m + k) % 4];
      const Q::PackedWeightsInt8 w = random_weights(rng, n, k);
      const bool flip = (m + k) % 2 == 1;
      const std::int64_t stride = k + m % 3 * 7;
      const Activations a(rng, m, k, stride, static_cast<std::size_t>(offset(rng)));
      const std::int32_t effective =
          (flip ? -128 : 0) + 128 + static_cast<std::int32_t>(m * k % 128);
      ASSERT_EQ(run(kernel_, a, m, stride, flip, effective, w),
                run(reference, a, m, stride, flip, effective, w))
          << kernel_.name << " M=" << m << " N=" << n << " K=" << k << " flip=" << flip;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllVariants, GemmVariant,
                         ::testing::Range<std::size_t>(0, G::gemm_kernel_variants().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                           return std::string(G::gemm_kernel_variants()[info.param].name);
                         });

// The best variant this CPU supports is the default one and agrees with the reference
// (checked here on its own, as ctest runs each test in a separate process).
TEST(GemmVariants, BestSupportedVariantIsUsedAndExercised) {
  std::mt19937_64 rng(Q::testing::test_seed());
  G::GemmKernel best{};
  for (const G::GemmKernel& v : G::gemm_kernel_variants()) {
    if (v.supported) {
      best = v;
    } else {
      std::cout << "[ gemm ] variant " << v.name << " skipped: this CPU ("
                << Q::cpu_features().describe() << ") does not support it\n";
    }
  }
  std::cout << "[ gemm ] best supported variant: " << best.name << "\n";
  const Q::PackedWeightsInt8 w = random_weights(rng, 49, 33);
  const Activations a(rng, 17, 33, 33, 1);
  EXPECT_EQ(run(best, a, 17, 33, false, 3, w),
            run(G::gemm_kernel_variants()[0], a, 17, 33, false, 3, w));
  if (std::getenv("LUCIDQ_ISA") == nullptr) {
    EXPECT_STREQ(G::gemm_kernel().name, best.name)
        << "the default tier should dispatch to the best supported variant";
  }
}

// The whole GEMM (driver and default kernel of every tier) against a direct int64 sum, for small
// batches with deep rows, row strides at and near multiples of 4 KiB and ordinary ones.
TEST(GemmVariants, SmallBatchesWithAliasingRowStridesMatchDirectSums) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::uniform_int_distribution<int> byte(0, 255);
  struct Case {
    std::int64_t m, n, k, stride;
  };
  const Case cases[] = {{2, 33, 4096, 4096},   {3, 17, 4093, 4096},  {4, 49, 2048, 2048},
                        {8, 16, 4095, 8192},   {9, 33, 4096, 4096},  {12, 81, 1023, 4100},
                        {13, 17, 4097, 12288}, {16, 49, 4096, 4096}, {16, 33, 3000, 3000},
                        {11, 20, 1024, 1024}};
  for (const Q::Isa isa : Q::supported_isas()) {
    Q::set_isa(isa);
    for (const Case& c : cases) {
      for (const bool signed_codes : {false, true}) {
        std::vector<std::int8_t> wv(static_cast<std::size_t>(c.n * c.k));
        for (auto& v : wv)
          v = static_cast<std::int8_t>(byte(rng) - 128);
        const float scale = 0.01f;
        const auto w = Q::PackedWeightsInt8::pack(wv.data(), c.n, c.k, c.k, {&scale, 1});
        std::vector<std::uint8_t> a(static_cast<std::size_t>((c.m - 1) * c.stride + c.k));
        for (auto& v : a)
          v = static_cast<std::uint8_t>(byte(rng));
        const std::int32_t z = signed_codes ? -5 : 131;
        Q::ActivationMatrix am;
        am.data = a.data();
        am.type = signed_codes ? Q::ScalarType::int8 : Q::ScalarType::uint8;
        am.rows = c.m;
        am.row_stride = c.stride;
        am.zero_point = z;
        std::vector<std::int32_t> out(static_cast<std::size_t>(c.m * c.n));
        Q::gemm(am, w, Q::Int32Output{out.data(), c.n});
        for (std::int64_t r = 0; r < c.m; ++r) {
          for (std::int64_t col = 0; col < c.n; ++col) {
            std::int64_t sum = 0;
            for (std::int64_t i = 0; i < c.k; ++i) {
              const std::uint8_t code = a[static_cast<std::size_t>(r * c.stride + i)];
              const std::int64_t value =
                  signed_codes ? static_cast<std::int8_t>(code) : std::int64_t{code};
              sum += (value - z) * wv[static_cast<std::size_t>(col * c.k + i)];
            }
            ASSERT_EQ(out[static_cast<std::size_t>(r * c.n + col)], sum)
                << Q::to_string(isa) << " M=" << c.m << " N=" << c.n << " K=" << c.k
                << " stride=" << c.stride << " [" << r << ", " << col << "]";
          }
        }
      }
    }
  }
}

}  // namespace
