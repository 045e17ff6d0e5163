// Every weight-only kernel tier against the reference: bit-exact integer decode, bounded float
// error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "lucid/quantization/pack.hpp"
#include "lucid/quantization/quantize.hpp"
#include "lucid/quantization/runtime.hpp"
#include "lucid/quantization/weight_only.hpp"
#include "test_support.hpp"
#include "weight_only_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::exact_product;
using Q::testing::gaussian;
using Q::testing::PlainWeights;
using Q::testing::rounding_bound;

namespace {

using Q::testing::make_format;

class WeightOnlyTiers : public ::testing::Test {
 protected:
  void TearDown() override { Q::set_isa(Q::supported_isas().back()); }
};

// Runs y = x · ŵᵀ + bias on a tier, with padded strides and guard values around every row of y.
std::vector<float> run_on(
    Q::Isa isa, const std::vector<float>& x, std::int64_t m, const Q::PackedWeightsLowBit& w,
    const float* bias, Q::WeightOnlyActivations activations = Q::WeightOnlyActivations::float32) {
  Q::set_isa(isa);
  const std::int64_t n = w.rows(), k = w.columns();
  const std::int64_t xs = k + 3, ys = n + 5;
  std::vector<float> xp(static_cast<std::size_t>(m * xs + 1), std::nanf(""));
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t c = 0; c < k; ++c) {
      xp[static_cast<std::size_t>(r * xs + c + 1)] = x[static_cast<std::size_t>(r * k + c)];
    }
  }
  constexpr float guard = -12345.0f;
  std::vector<float> yp(static_cast<std::size_t>(m * ys), guard);
  Q::weight_only_gemm(xp.data() + 1, m, xs, w, bias, yp.data(), ys,
                      Q::WeightOnlyOptions{activations});  // x unaligned by 4 bytes
  std::vector<float> y(static_cast<std::size_t>(m * n));
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t c = 0; c < ys; ++c) {
      const float v = yp[static_cast<std::size_t>(r * ys + c)];
      if (c < n) {
        y[static_cast<std::size_t>(r * n + c)] = v;
      } else {
        EXPECT_EQ(v, guard) << "wrote past N at row " << r << " column " << c;
      }
    }
  }
  return y;
}

// One-hot activations and power-of-two scales make every float operation exact, so each
// tier must return s · (q − z) bit for bit: the integer decode of every code is checked.
TEST_F(WeightOnlyTiers, DecodeIsBitExactThroughTheKernels) {
  std::mt19937_64 rng(Q::testing::test_seed());
  for (const int bits : {4, 8}) {
    for (const bool sym : {true, false}) {
      for (const std::int64_t g : {std::int64_t{0}, std::int64_t{32}, std::int64_t{64}}) {
        const std::int64_t n = 37, k = 77;  // ragged groups, partial panel, K not a multiple of 8
        const Q::QDtype qd = Q::QDtype::full_range(bits, sym);
        const std::int64_t groups = g == 0 ? 1 : (k + g - 1) / g;
        std::uniform_int_distribution<int> code(static_cast<int>(qd.quant_min()),
                                                static_cast<int>(qd.quant_max()));
        std::uniform_int_distribution<int> exponent(-6, 3);
        std::vector<std::int32_t> q(static_cast<std::size_t>(n * k));
        for (auto& v : q)
          v = code(rng);
        const std::size_t params = static_cast<std::size_t>(n * groups);
        std::vector<float> s(params);
        std::vector<std::int32_t> z(params, 0);
        for (std::size_t i = 0; i < params; ++i) {
          s[i] = std::ldexp(1.0f, exponent(rng));
          if (!sym) z[i] = code(rng);
        }
        const Q::QScheme scheme =
            sym ? Q::QScheme::PER_CHANNEL_SYMMETRIC : Q::QScheme::PER_CHANNEL_AFFINE;
        const Q::QParams qp = g == 0 ? Q::QParams::per_channel(s, z, 0, qd, scheme)
                                     : Q::QParams::per_group(s, z, 1, g, qd, scheme);
        const Q::QuantizedTensor qt({n, k}, qp, Q::pack_codes(q, qd));
        const auto packed = Q::PackedWeightsLowBit::from_quantized(qt);
        ASSERT_EQ(packed.codes(), q);
        std::vector<float> x(static_cast<std::size_t>(k * k), 0.0f);
        for (std::int64_t r = 0; r < k; ++r)
          x[static_cast<std::size_t>(r * k + r)] = 1.0f;
        for (const Q::Isa isa : Q::supported_isas()) {
          SCOPED_TRACE(Q::to_string(isa) + " " + packed.format().describe());
          const std::vector<float> y = run_on(isa, x, k, packed, nullptr);
          for (std::int64_t r = 0; r < k; ++r) {
            for (std::int64_t c = 0; c < n; ++c) {
              const std::size_t gi = static_cast<std::size_t>(c * groups + (g == 0 ? 0 : r / g));
              const float expected =
                  s[gi] * static_cast<float>(q[static_cast<std::size_t>(c * k + r)] - z[gi]);
              ASSERT_EQ(y[static_cast<std::size_t>(r * n + c)], expected)
                  << "k=" << r << " n=" << c;
            }
          }
        }
      }
    }
  }
}

// Gaussian data over shapes around the panel (16), block (8) and group edges and the row blocks
// (4 for AVX2, 8 for AVX-512): every tier within the rounding bound of the exact product, and
// the reference tier equal to the exact product rounded once.
TEST_F(WeightOnlyTiers, EveryTierWithinTheRoundingBound) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t ns[] = {1, 15, 16, 17, 40};
  const std::int64_t ks[] = {1, 8, 31, 33, 64, 130, 300};
  const std::int64_t ms[] = {1, 2, 3, 4, 5, 8, 9, 17};
  int checked = 0;
  for (const int bits : {4, 8}) {
    for (const bool sym : {true, false}) {
      for (const std::int64_t g : {std::int64_t{0}, std::int64_t{32}, std::int64_t{256}}) {
        for (const Q::ScaleType st : {Q::ScaleType::f32, Q::ScaleType::bf16}) {
          const std::int64_t n = ns[rng() % 5], k = ks[rng() % 7], m = ms[rng() % 8];
          const Q::WeightOnlyFormat f = make_format(bits, g, sym, st);
          SCOPED_TRACE(f.describe() + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                       " m=" + std::to_string(m));
          const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
          const std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
          const std::vector<float> b = gaussian(static_cast<std::size_t>(n), rng);
          const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, f);
          const PlainWeights p(packed);
          const std::vector<double> exact = exact_product(x, m, p, b.data());
          for (const Q::Isa isa : Q::supported_isas()) {
            SCOPED_TRACE(Q::to_string(isa));
            const std::vector<float> y = run_on(isa, x, m, packed, b.data());
            for (std::int64_t r = 0; r < m; ++r) {
              for (std::int64_t c = 0; c < n; ++c) {
                const auto i = static_cast<std::size_t>(r * n + c);
                if (isa == Q::Isa::reference) {
                  ASSERT_EQ(y[i], static_cast<float>(exact[i])) << r << "," << c;
                } else {
                  ASSERT_NEAR(y[i], exact[i], rounding_bound(x, r, p, c, exact[i]))
                      << r << "," << c;
                }
              }
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GE(checked, 24);
}

// A full sweep of the edges for one format per bit width (all shapes, all tiers).
TEST_F(WeightOnlyTiers, ShapeSweep) {
  std::mt19937_64 rng(Q::testing::test_seed());
  for (const int bits : {4, 8}) {
    for (const std::int64_t n : {1, 15, 16, 17, 33}) {
      for (const std::int64_t k : {8, 31, 32, 33, 129}) {
        for (const std::int64_t m : {1, 3, 7, 8, 9, 16}) {
          const Q::WeightOnlyFormat f = make_format(bits, 32, bits == 8, Q::ScaleType::f32);
          SCOPED_TRACE(f.describe() + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                       " m=" + std::to_string(m));
          const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
          const std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
          const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, f);
          const PlainWeights p(packed);
          const std::vector<double> exact = exact_product(x, m, p, nullptr);
          for (const Q::Isa isa : Q::supported_isas()) {
            if (isa == Q::Isa::reference) continue;
            SCOPED_TRACE(Q::to_string(isa));
            const std::vector<float> y = run_on(isa, x, m, packed, nullptr);
            for (std::int64_t r = 0; r < m; ++r) {
              for (std::int64_t c = 0; c < n; ++c) {
                const auto i = static_cast<std::size_t>(r * n + c);
                ASSERT_NEAR(y[i], exact[i], rounding_bound(x, r, p, c, exact[i])) << r << "," << c;
              }
            }
          }
        }
      }
    }
  }
}

// The int8-activation path on every tier (the VNNI kernels on AVX-512 CPUs with it, the AVX2
// kernel on the AVX2 tier, for int4 and int8 codes; the reference kernel on the reference tier)
// equals the test's own transcription of its specification bit for bit: shapes around the
// 8-row × 3-panel tile and the AVX2 kernel's blocks of 4 rows, the int4 block (8) and group edges,
// ragged last groups, N not a multiple of 16, int4 / int8, symmetric / affine, f32 / bf16 scales,
// with and without bias.
TEST_F(WeightOnlyTiers, Int8PathMatchesItsSpecificationBitForBit) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t ns[] = {1, 16, 37, 48, 49, 100};
  const std::int64_t ks[] = {8, 13, 64, 77, 128, 200, 300};
  const std::int64_t ms[] = {1, 7, 8, 9, 33, 70};
  int checked = 0;
  for (const int bits : {4, 8}) {
    for (const bool sym : {true, false}) {
      for (const std::int64_t g :
           {std::int64_t{0}, std::int64_t{32}, std::int64_t{64}, std::int64_t{128}}) {
        for (int trial = 0; trial < 3; ++trial) {
          const std::int64_t n = ns[rng() % 6], k = ks[rng() % 7], m = ms[rng() % 6];
          const auto scales = trial == 1 ? Q::ScaleType::bf16 : Q::ScaleType::f32;
          const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
          // Activations with an offset, so that the zero points are far from 128.
          std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng, 2.0f);
          for (float& v : x)
            v += trial == 2 ? 1.5f : 0.0f;
          const std::vector<float> bias = gaussian(static_cast<std::size_t>(n), rng);
          const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), n, k, k,
                                                               make_format(bits, g, sym, scales));
          const float* b = trial == 0 ? nullptr : bias.data();
          const std::vector<float> expected = Q::testing::int8_path_spec(x, m, packed, b);
          for (const Q::Isa isa : Q::supported_isas()) {
            SCOPED_TRACE(Q::to_string(isa) + " " + packed.format().describe() + " m=" +
                         std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
            const std::vector<float> y =
                run_on(isa, x, m, packed, b, Q::WeightOnlyActivations::int8_dynamic);
            ASSERT_EQ(y, expected);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// The few-row int8 kernels (M = 1 … 9 and 15, 16, 17, 20, 23: the VNNI few-row kernel's
// 8-row × 2-panel blocks, its row blocks of 1-4 after them, the AVX2 kernel's row blocks, blocks
// of 4 panels, a partial last block per thread) against the same specification, for every
// format: int4 / int8 codes, symmetric / affine, per-channel and groups, f32 and bf16 scales.
TEST_F(WeightOnlyTiers, Int8PathFewRowsMatchesItsSpecification) {
  std::mt19937_64 rng(Q::testing::test_seed());
  int checked = 0;
  for (const int bits : {4, 8}) {
    for (const bool sym : {true, false}) {
      for (const std::int64_t g : {std::int64_t{0}, std::int64_t{32}, std::int64_t{128}}) {
        for (const Q::ScaleType scales : {Q::ScaleType::f32, Q::ScaleType::bf16}) {
          // N from one channel to past two 4-panel blocks; K with ragged groups and k % 8 != 0.
          const std::int64_t n = std::int64_t{1} + static_cast<std::int64_t>(rng() % 150);
          const std::int64_t k = g == 128 ? 300 : 77;
          const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
          const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), n, k, k,
                                                               make_format(bits, g, sym, scales));
          const std::vector<float> bias = gaussian(static_cast<std::size_t>(n), rng);
          for (const std::int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 20, 23}) {
            std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng, 2.0f);
            for (float& v : x)
              v += static_cast<float>(m % 3) - 1.0f;
            const float* b = m % 2 == 0 ? bias.data() : nullptr;
            const std::vector<float> expected = Q::testing::int8_path_spec(x, m, packed, b);
            for (const Q::Isa isa : Q::supported_isas()) {
              SCOPED_TRACE(Q::to_string(isa) + " " + packed.format().describe() +
                           " m=" + std::to_string(m) + " n=" + std::to_string(n) +
                           " k=" + std::to_string(k));
              ASSERT_EQ(run_on(isa, x, m, packed, b, Q::WeightOnlyActivations::int8_dynamic),
                        expected);
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// Weights of 4 MiB and more live on huge pages, where the few-row kernel skips its software
// prefetch (another instantiation): the same bits as the specification.
TEST_F(WeightOnlyTiers, Int8PathOnHugePageWeights) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 4100, k = 2056;  // int4 codes alone: 4.2 MB
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  const auto packed =
      Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, make_format(4, 128, true, {}));
  ASSERT_GE(packed.packed_bytes(), std::size_t{4} << 20);
  for (const std::int64_t m : {std::int64_t{1}, std::int64_t{6}}) {
    const std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
    const std::vector<float> expected = Q::testing::int8_path_spec(x, m, packed, nullptr);
    SCOPED_TRACE("m=" + std::to_string(m));
    EXPECT_EQ(run_on(Q::supported_isas().back(), x, m, packed, nullptr,
                     Q::WeightOnlyActivations::int8_dynamic),
              expected);
  }
}

// Codes at both ends of their grid (qint8 −128 / 127, quint8 0 / 255 with zero points 0 / 255,
// int4 alike) against activation codes at both ends of theirs (whole rows at 255 or 0) over the
// longest group the int8 path takes (per-channel, K = 65536) and over ragged 256-groups: a kernel
// whose int16 products saturate (a vpmaddubsw pair 2 · 255 · 127 > 32767) or whose int32 sums
// overflow (65536 · 255 · −128 is 0.4 % inside int32) differs from the specification here.
// Every tier, every format, M = 6 (a block of 4 rows and a partial one); f32 scales with codes
// set exactly (from_quantized), f32 and bf16 scales from quantize() of weights at ±a.
TEST_F(WeightOnlyTiers, Int8PathExtremeCodesAndActivations) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 37, m = 6;
  // The premise for x: a row of 1.0 quantizes to 255 everywhere, a row of −1.0 to 0.
  for (const float v : {1.0f, -1.0f}) {
    const Q::QParams qx = Q::calculate_qparams(std::min(v, 0.0f), std::max(v, 0.0f),
                                               Q::QScheme::PER_TENSOR_AFFINE, Q::quint8);
    const float code =
        std::nearbyint(v * (1.0f / qx.scale[0])) + static_cast<float>(qx.zero_point[0]);
    ASSERT_EQ(std::clamp(code, 0.0f, 255.0f), v > 0 ? 255.0f : 0.0f);
  }
  int checked = 0;
  for (const int bits : {4, 8}) {
    for (const bool sym : {true, false}) {
      for (const std::int64_t g : {std::int64_t{0}, std::int64_t{256}}) {
        const std::int64_t k = g == 0 ? 65536 : 16 * 256 + 3;
        const std::int64_t groups = g == 0 ? 1 : (k + g - 1) / g;
        const Q::QDtype qd = Q::QDtype::full_range(bits, sym);
        const auto qmin = static_cast<std::int32_t>(qd.quant_min());
        const auto qmax = static_cast<std::int32_t>(qd.quant_max());
        // Per channel c: all at the top (affine zero point at the bottom), all at the bottom (the
        // reverse), top / bottom alternating along k, random.
        std::uniform_int_distribution<std::int32_t> code(qmin, qmax);
        std::vector<std::int32_t> q(static_cast<std::size_t>(n * k));
        std::vector<float> w(q.size());
        for (std::int64_t c = 0; c < n; ++c) {
          const float a = 0.5f + 0.01f * static_cast<float>(c);
          for (std::int64_t t = 0; t < k; ++t) {
            const bool top = c % 4 == 0 || (c % 4 == 2 && t % 2 == 0);
            const auto i = static_cast<std::size_t>(c * k + t);
            q[i] = c % 4 == 3 ? code(rng) : top ? qmax : qmin;
            w[i] = c % 4 == 3 ? static_cast<float>(q[i]) / 64.0f : top ? a : -a;
          }
        }
        std::vector<float> s(static_cast<std::size_t>(n * groups));
        std::vector<std::int32_t> z(s.size(), 0);
        for (std::size_t i = 0; i < s.size(); ++i) {
          s[i] = 0.01f + 0.001f * static_cast<float>(i % 7);
          const auto c = static_cast<std::int64_t>(i) / groups;
          if (!sym) z[i] = c % 4 == 0 ? qmin : c % 4 == 1 ? qmax : code(rng);
        }
        const Q::QScheme scheme =
            sym ? Q::QScheme::PER_CHANNEL_SYMMETRIC : Q::QScheme::PER_CHANNEL_AFFINE;
        const Q::QParams qp = g == 0 ? Q::QParams::per_channel(s, z, 0, qd, scheme)
                                     : Q::QParams::per_group(s, z, 1, g, qd, scheme);
        std::vector<Q::PackedWeightsLowBit> weights;
        weights.push_back(Q::PackedWeightsLowBit::from_quantized(
            Q::QuantizedTensor({n, k}, qp, Q::pack_codes(q, qd))));
        ASSERT_EQ(weights.back().codes(), q);
        // The min_max grid with f32 and bf16 scales, the search grid with f16 ones.
        for (const Q::ScaleType st : {Q::ScaleType::f32, Q::ScaleType::bf16, Q::ScaleType::f16}) {
          Q::WeightOnlyFormat f = make_format(bits, g, sym, st);
          f.grid = st == Q::ScaleType::f16 ? Q::WeightOnlyGrid::search : Q::WeightOnlyGrid::min_max;
          weights.push_back(Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, f));
          if (f.grid == Q::WeightOnlyGrid::search) continue;  // it may clip ±a (least squares)
          // quantize() puts ±a at the ends of the grid or one step inside (the symmetric grids'
          // tie at −7.5 / −127.5 rounds either way; a 16-bit scale may round up).
          const std::vector<std::int32_t> got = weights.back().codes();
          const Q::QDtype range = Q::QDtype::full_range(bits, sym);
          ASSERT_GE(got[0], range.quant_max() - 1) << f.describe();
          ASSERT_LE(got[static_cast<std::size_t>(k)], range.quant_min() + 1) << f.describe();
        }
        // Rows of x (codes): all 255 (zero point 0); all 0 (zero point 255); 255 but one 0 (zero
        // point 128); 255 / 0 alternating; Gaussian; 255 but one 0 (zero point 3).
        std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
        for (std::int64_t t = 0; t < k; ++t) {
          const auto at = [&](std::int64_t r) -> float& {
            return x[static_cast<std::size_t>(r * k + t)];
          };
          at(0) = 1.0f;
          at(1) = -1.0f;
          at(2) = t == 5 ? -1.0f : 1.0f;
          at(3) = t % 2 == 0 ? 1.0f : -1.0f;
          at(5) = t == k - 1 ? -0.01f : 1.0f;
        }
        for (const auto& packed : weights) {
          const std::vector<float> expected = Q::testing::int8_path_spec(x, m, packed, nullptr);
          for (const Q::Isa isa : Q::supported_isas()) {
            SCOPED_TRACE(Q::to_string(isa) + " " + packed.format().describe() +
                         " k=" + std::to_string(k));
            const std::vector<float> y =
                run_on(isa, x, m, packed, nullptr, Q::WeightOnlyActivations::int8_dynamic);
            for (std::int64_t r = 0; r < m; ++r) {
              for (std::int64_t c = 0; c < n; ++c) {
                const auto i = static_cast<std::size_t>(r * n + c);
                ASSERT_EQ(y[i], expected[i]) << "row " << r << " channel " << c;
              }
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// Signed affine grids (from_quantized: lanes stored as q − grid_min) take the same path.
TEST_F(WeightOnlyTiers, Int8PathSignedAffineGrids) {
  std::mt19937_64 rng(Q::testing::test_seed());
  for (const int bits : {4, 8}) {
    const std::int64_t n = 21, k = 100, m = 11, g = 32;
    const Q::QDtype qd = Q::QDtype::full_range(bits, true);
    std::uniform_int_distribution<int> code(static_cast<int>(qd.quant_min()),
                                            static_cast<int>(qd.quant_max()));
    std::vector<std::int32_t> q(static_cast<std::size_t>(n * k));
    for (auto& v : q)
      v = code(rng);
    const std::int64_t groups = (k + g - 1) / g;
    std::vector<float> s(static_cast<std::size_t>(n * groups));
    std::vector<std::int32_t> z(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
      s[i] = 0.01f + 0.001f * static_cast<float>(i % 17);
      z[i] = code(rng);
    }
    const Q::QParams qp = Q::QParams::per_group(s, z, 1, g, qd, Q::QScheme::PER_CHANNEL_AFFINE);
    const auto packed = Q::PackedWeightsLowBit::from_quantized(
        Q::QuantizedTensor({n, k}, qp, Q::pack_codes(q, qd)));
    ASSERT_FALSE(packed.format().symmetric);
    const std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
    const std::vector<float> expected = Q::testing::int8_path_spec(x, m, packed, nullptr);
    for (const Q::Isa isa : Q::supported_isas()) {
      SCOPED_TRACE(Q::to_string(isa) + " " + packed.format().describe());
      EXPECT_EQ(run_on(isa, x, m, packed, nullptr, Q::WeightOnlyActivations::int8_dynamic),
                expected);
    }
  }
}

}  // namespace
