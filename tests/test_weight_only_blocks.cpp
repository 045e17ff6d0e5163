// Block-wise int8 activations (WeightOnlyActivations::int8_blocks): every tier bit for bit
// against the specification, the errors they raise, and their accuracy against per-row scales.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lucid/quantization/runtime.hpp"
#include "lucid/quantization/weight_only.hpp"
#include "test_support.hpp"
#include "weight_only_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::gaussian;

namespace {

using Q::testing::make_format;

std::vector<float> run(const std::vector<float>& x, std::int64_t m, const Q::PackedWeightsLowBit& w,
                       const float* bias, Q::WeightOnlyActivations activations) {
  std::vector<float> y(static_cast<std::size_t>(m * w.rows()));
  Q::weight_only_gemm(x.data(), m, w.columns(), w, bias, y.data(), w.rows(),
                      Q::WeightOnlyOptions{activations});
  return y;
}

class WeightOnlyBlocks : public ::testing::Test {
 protected:
  void TearDown() override { Q::set_isa(Q::supported_isas().back()); }
};

}  // namespace

// Every tier, every format (int4 / int8, symmetric / affine, per-channel and groups, f32 / bf16 /
// f16 scales, both grids: the search grid's negative scales included), M from 1 past the int8
// tile kernel's crossover (64 rows), ragged K: the same bits as int8_blocks_spec.
TEST_F(WeightOnlyBlocks, EveryTierMatchesTheSpecificationBitForBit) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t ns[] = {1, 16, 37, 49, 100};
  const std::int64_t ks[] = {8, 13, 64, 77, 200, 300};
  const std::int64_t ms[] = {1, 3, 4, 5, 8, 9, 17, 70};
  const Q::ScaleType scale_types[] = {Q::ScaleType::f32, Q::ScaleType::bf16, Q::ScaleType::f16};
  int checked = 0;
  for (const int bits : {4, 8}) {
    for (const bool sym : {true, false}) {
      for (const std::int64_t g : {std::int64_t{0}, std::int64_t{32}, std::int64_t{128}}) {
        for (int trial = 0; trial < 3; ++trial) {
          const std::int64_t n = ns[rng() % 5], k = ks[rng() % 6], m = ms[rng() % 8];
          const auto grid = trial == 2 ? Q::WeightOnlyGrid::min_max : Q::WeightOnlyGrid::search;
          const auto f = make_format(bits, g, sym, scale_types[trial], grid);
          const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
          std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng, 2.0f);
          if (trial == 1) {  // an all-zero block and an offset row
            for (std::int64_t t = 0; t < std::min<std::int64_t>(k, 32); ++t)
              x[static_cast<std::size_t>(t)] = 0.0f;
            for (std::int64_t t = 0; t < k && m > 1; ++t)
              x[static_cast<std::size_t>(k + t)] += 3.0f;
          }
          const std::vector<float> bias = gaussian(static_cast<std::size_t>(n), rng);
          const float* b = trial == 0 ? nullptr : bias.data();
          const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, f);
          const std::vector<float> expected = Q::testing::int8_blocks_spec(x, m, packed, b);
          for (const Q::Isa isa : Q::supported_isas()) {
            Q::set_isa(isa);
            SCOPED_TRACE(Q::to_string(isa) + " " + f.describe() + " m=" + std::to_string(m) +
                         " n=" + std::to_string(n) + " k=" + std::to_string(k));
            ASSERT_EQ(run(x, m, packed, b, Q::WeightOnlyActivations::int8_blocks), expected);
            ++checked;
          }
        }
      }
    }
  }
  std::string tiers;
  for (const Q::Isa isa : Q::supported_isas())
    tiers += " " + Q::to_string(isa);
  std::printf("[ tiers ]%s: %d products checked (tiers this CPU lacks are skipped)\n",
              tiers.c_str(), checked);
  EXPECT_GT(checked, 0);
}

// Non-finite x: int8_blocks throws naming the element; automatic falls back to float32.
TEST_F(WeightOnlyBlocks, NonFiniteActivations) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 20, k = 96, m = 3;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  const auto packed = Q::PackedWeightsLowBit::quantize(
      w.data(), n, k, k, make_format(4, 32, true, Q::ScaleType::f16, Q::WeightOnlyGrid::search));
  std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
  x[static_cast<std::size_t>(2 * k + 40)] = INFINITY;
  EXPECT_ERROR_CONTAINS(run(x, m, packed, nullptr, Q::WeightOnlyActivations::int8_blocks),
                        "x[2, 40] = inf");
  const auto y = run(x, m, packed, nullptr, Q::WeightOnlyActivations::automatic);
  const auto y_float = run(x, m, packed, nullptr, Q::WeightOnlyActivations::float32);
  EXPECT_TRUE(std::isnan(y[static_cast<std::size_t>(2 * n)]) ||
              std::isinf(y[static_cast<std::size_t>(2 * n)]));
  EXPECT_EQ(std::memcmp(y.data(), y_float.data(), y.size() * sizeof(float)), 0);  // NaN bits
}

// One scale per group of 32 leaves less activation error than one per row: the relative RMS
// error against the float32-activation product (the weight's own error taken out) is below
// 0.8 × the per-row path's, for int4 and int8 codes (Gaussian x, K = 1024: measured ≈ 0.7, the
// ratio of the steps: max|x| / 127 over 32 values against the row's range / 255).
TEST_F(WeightOnlyBlocks, LessActivationErrorThanPerRowScales) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 64, k = 1024, m = 8;
  for (const int bits : {4, 8}) {
    const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
    const std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
    const auto packed = Q::PackedWeightsLowBit::quantize(
        w.data(), n, k, k,
        make_format(bits, 32, true, Q::ScaleType::f16, Q::WeightOnlyGrid::search));
    const auto exact = run(x, m, packed, nullptr, Q::WeightOnlyActivations::float32);
    const auto error = [&](Q::WeightOnlyActivations a) {
      const auto y = run(x, m, packed, nullptr, a);
      double e = 0, r = 0;
      for (std::size_t i = 0; i < y.size(); ++i) {
        e += (double{y[i]} - exact[i]) * (double{y[i]} - exact[i]);
        r += double{exact[i]} * exact[i];
      }
      return std::sqrt(e / r);
    };
    const double blocks = error(Q::WeightOnlyActivations::int8_blocks);
    const double rows = error(Q::WeightOnlyActivations::int8_dynamic);
    std::printf("[ error ] int%d g32: activation error per block %.5f, per row %.5f\n", bits,
                blocks, rows);
    EXPECT_LT(blocks, 0.8 * rows) << "int" << bits;
  }
}
