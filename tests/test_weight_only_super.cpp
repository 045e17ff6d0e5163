// The super6 weight-only format (int4 affine groups of 32 under float16 super-blocks of 256):
// its bits, its search, every tier against its specification, and its errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lucid/quantization/ggml_quants.hpp"
#include "lucid/quantization/ggml_type.hpp"
#include "lucid/quantization/runtime.hpp"
#include "lucid/quantization/weight_only.hpp"
#include "test_support.hpp"
#include "weight_only_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::gaussian;

namespace {

const Q::WeightOnlyFormat super6 = Q::testing::make_format(4, 32, false, Q::ScaleType::super6);

class WeightOnlySuper : public ::testing::Test {
 protected:
  void TearDown() override {
    Q::set_isa(Q::supported_isas().back());
    Q::set_num_threads(threads_);
  }
  int threads_ = Q::num_threads();
};

std::vector<float> run(Q::Isa isa, int threads, const std::vector<float>& x, std::int64_t m,
                       const Q::PackedWeightsLowBit& w, const float* bias,
                       Q::WeightOnlyActivations path) {
  Q::set_isa(isa);
  Q::set_num_threads(threads);
  std::vector<float> y(static_cast<std::size_t>(m * w.rows()), -1.0f);
  Q::weight_only_gemm(x.data(), m, w.columns(), w, bias, y.data(), w.rows(),
                      Q::WeightOnlyOptions{path});
  return y;
}

// The int8_blocks specification for super6, from the public accessors (docs/numerics.md,
// "Block-wise activation scales"): per group s_x = max|x| / 127, xq = nearbyint(x · fl(1 / s_x))
// clamped to ±127, P = Σ xq · q and Sx = Σ xq exact, acc = fma(fl(s · s_x), P, acc),
// acc = fma(−fl(o · s_x), Sx, acc) in group order, y = acc + bias.
std::vector<float> blocks_spec(const std::vector<float>& x, std::int64_t m,
                               const Q::PackedWeightsLowBit& w, const float* bias) {
  const std::int64_t n = w.rows(), k = w.columns(), groups = w.groups_per_row();
  const std::vector<std::int32_t> q = w.codes();
  const std::vector<float> s = w.scales(), o = w.offsets();
  std::vector<float> y(static_cast<std::size_t>(m * n));
  std::vector<std::int32_t> xq(static_cast<std::size_t>(k));
  std::vector<float> sx(static_cast<std::size_t>(groups));
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t j = 0; j < groups; ++j) {
      float amax = 0;
      for (std::int64_t t = 32 * j; t < 32 * j + 32; ++t)
        amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(r * k + t)]));
      const float scale = amax / 127.0f;
      const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
      for (std::int64_t t = 32 * j; t < 32 * j + 32; ++t) {
        const float v = std::clamp(x[static_cast<std::size_t>(r * k + t)] * inv, -127.0f, 127.0f);
        xq[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(std::nearbyint(v));
      }
      sx[static_cast<std::size_t>(j)] = scale;
    }
    for (std::int64_t c = 0; c < n; ++c) {
      float acc = 0;
      for (std::int64_t j = 0; j < groups; ++j) {
        std::int32_t p = 0, sum = 0;
        for (std::int64_t t = 32 * j; t < 32 * j + 32; ++t) {
          p += xq[static_cast<std::size_t>(t)] * q[static_cast<std::size_t>(c * k + t)];
          sum += xq[static_cast<std::size_t>(t)];
        }
        const auto g = static_cast<std::size_t>(c * groups + j);
        const float xs = sx[static_cast<std::size_t>(j)];
        acc = std::fma(s[g] * xs, static_cast<float>(p), acc);
        acc = std::fma(-(o[g] * xs), static_cast<float>(sum), acc);
      }
      y[static_cast<std::size_t>(r * n + c)] = acc + (bias != nullptr ? bias[c] : 0.0f);
    }
  }
  return y;
}

// The exact product Σ x · (s · q − o) + bias and the float32 rounding bound of the kernels
// (docs/numerics.md, "Weight-only GEMM", with |s| · |q| + |o| for |s| · (|q| + |z|)).
struct Exact {
  std::vector<double> y, bound;
};
Exact exact(const std::vector<float>& x, std::int64_t m, const Q::PackedWeightsLowBit& w,
            const float* bias) {
  const std::int64_t n = w.rows(), k = w.columns(), groups = w.groups_per_row();
  const std::vector<std::int32_t> q = w.codes();
  const std::vector<float> s = w.scales(), o = w.offsets();
  const double u = std::ldexp(1.0, -24);
  Exact e{std::vector<double>(static_cast<std::size_t>(m * n)),
          std::vector<double>(static_cast<std::size_t>(m * n))};
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t c = 0; c < n; ++c) {
      double acc = bias != nullptr ? bias[c] : 0.0, magnitude = 0;
      for (std::int64_t t = 0; t < k; ++t) {
        const auto g = static_cast<std::size_t>(c * groups + t / 32);
        const double xv = x[static_cast<std::size_t>(r * k + t)];
        const double qv = q[static_cast<std::size_t>(c * k + t)];
        acc += xv * (double{s[g]} * qv - double{o[g]});
        magnitude += std::fabs(xv) * (std::fabs(double{s[g]}) * qv + std::fabs(double{o[g]}));
      }
      const auto i = static_cast<std::size_t>(r * n + c);
      e.y[i] = acc;
      e.bound[i] = (32.0 + static_cast<double>(groups) + 6.0) * u * magnitude + u * std::fabs(acc);
    }
  }
  return e;
}

TEST_F(WeightOnlySuper, StreamsExactlyQ4KsBits) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 37, k = 512;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, super6);
  EXPECT_EQ(super6.bits_per_weight(k), 4.5);
  EXPECT_EQ(8.0 * static_cast<double>(Q::ggml_row_size(Q::GgmlType::Q4_K, k)) / k, 4.5);
  // 3 panels of 16 channels × 2 super-blocks of 2304 bytes.
  EXPECT_EQ(packed.packed_bytes(), std::size_t{3 * 2 * 2304});
  EXPECT_NE(super6.describe().find("4.5 bits"), std::string::npos) << super6.describe();
}

// decode() is fl(s · q) − o with the accessors' values, codes on 0..15, and its squared error
// is at most Q4_K's on every row (the search starts from Q4_K's block and only keeps
// improvements), strictly lower in total.
TEST_F(WeightOnlySuper, SearchNeverLosesToQ4K) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 24, k = 1024;
  std::student_t_distribution<float> t3(3.0f);
  std::vector<float> w(static_cast<std::size_t>(n * k));
  for (float& v : w)
    v = t3(rng);
  const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, super6);
  const std::vector<float> ours = packed.decode();
  const std::vector<std::int32_t> q = packed.codes();
  const std::vector<float> s = packed.scales(), o = packed.offsets();
  const std::vector<float> q4k = Q::ggml_round_trip_rows(Q::GgmlType::Q4_K, w.data(), n, k);
  double total_ours = 0, total_q4k = 0;
  for (std::int64_t r = 0; r < n; ++r) {
    double e_ours = 0, e_q4k = 0;
    for (std::int64_t t = 0; t < k; ++t) {
      const auto i = static_cast<std::size_t>(r * k + t);
      const auto g = static_cast<std::size_t>(i / 32);
      ASSERT_GE(q[i], 0);
      ASSERT_LE(q[i], 15);
      ASSERT_EQ(ours[i], s[g] * static_cast<float>(q[i]) - o[g]);
      e_ours += (double{w[i]} - ours[i]) * (double{w[i]} - ours[i]);
      e_q4k += (double{w[i]} - q4k[i]) * (double{w[i]} - q4k[i]);
    }
    EXPECT_LE(e_ours, e_q4k) << "row " << r;
    total_ours += e_ours;
    total_q4k += e_q4k;
  }
  EXPECT_LT(total_ours, total_q4k);
}

// Every tier, 1 and 2 threads: the int8 paths (int8_blocks, int8_dynamic) bit for bit equal to
// the reference tier, int8_blocks also to the test's own specification; the float32 path within
// the rounding bound of the exact product on every tier. M = 1, few and > 8 rows; N not a
// multiple of 16; K = 256 and more; with and without bias.
TEST_F(WeightOnlySuper, EveryTierMatchesTheReference) {
  std::mt19937_64 rng(Q::testing::test_seed());
  int checked = 0;
  for (const std::int64_t n : {1, 15, 37, 100}) {
    for (const std::int64_t k : {256, 768}) {
      const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
      const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, super6);
      const std::vector<float> bias = gaussian(static_cast<std::size_t>(n), rng);
      for (const std::int64_t m : {1, 3, 9, 17}) {
        std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng, 2.0f);
        for (float& v : x)
          v += static_cast<float>(m % 3) - 1.0f;
        const float* b = (n + m) % 2 == 0 ? bias.data() : nullptr;
        const std::vector<float> spec = blocks_spec(x, m, packed, b);
        const Exact e = exact(x, m, packed, b);
        using A = Q::WeightOnlyActivations;
        const std::vector<float> dynamic_ref =
            run(Q::Isa::reference, 1, x, m, packed, b, A::int8_dynamic);
        for (const Q::Isa isa : Q::supported_isas()) {
          for (const int threads : {1, 2}) {
            SCOPED_TRACE(Q::to_string(isa) + " threads=" + std::to_string(threads) + " m=" +
                         std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
            ASSERT_EQ(run(isa, threads, x, m, packed, b, A::int8_blocks), spec);
            ASSERT_EQ(run(isa, threads, x, m, packed, b, A::int8_dynamic), dynamic_ref);
            const std::vector<float> y = run(isa, threads, x, m, packed, b, A::float32);
            for (std::size_t i = 0; i < y.size(); ++i)
              ASSERT_NEAR(y[i], e.y[i], e.bound[i]) << i;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// Where the CPU has a fast int8 kernel, automatic takes int8_blocks for super6 (many groups).
TEST_F(WeightOnlySuper, AutomaticTakesBlocks) {
  const std::vector<float> w(256, 0.5f);
  const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), 1, 256, 256, super6);
  for (const Q::Isa isa : Q::supported_isas()) {
    Q::set_isa(isa);
    EXPECT_EQ(Q::resolve_activations({}, 1, packed), isa == Q::Isa::reference
                                                         ? Q::WeightOnlyActivations::float32
                                                         : Q::WeightOnlyActivations::int8_blocks)
        << Q::to_string(isa);
  }
}

TEST_F(WeightOnlySuper, Errors) {
  const std::vector<float> w(2 * 320, 0.25f);
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsLowBit::quantize(w.data(), 2, 320, 320, super6),
                        "k = 320 (expected a multiple of 256 for super6");
  for (const Q::WeightOnlyFormat& f :
       {Q::testing::make_format(8, 32, false, Q::ScaleType::super6),
        Q::testing::make_format(4, 64, false, Q::ScaleType::super6),
        Q::testing::make_format(4, 32, true, Q::ScaleType::super6)}) {
    EXPECT_ERROR_CONTAINS(f.validate(), "expected bits = 4, group_size = 32, symmetric = false");
  }
  EXPECT_ERROR_CONTAINS(
      Q::testing::make_format(4, 32, false, Q::ScaleType::super6, Q::WeightOnlyGrid::min_max)
          .validate(),
      "grid = min_max (expected search");
  const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), 2, 256, 256, super6);
  EXPECT_ERROR_CONTAINS(packed.to_quantized(), "integer zero points cannot express");
  std::vector<float> huge(256, 1e30f);
  huge[7] = -1e30f;
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsLowBit::quantize(huge.data(), 1, 256, 256, super6),
                        "d or dmin overflows float16");
  EXPECT_ERROR_CONTAINS(packed.zero_points(), "expected offsets()");
}

}  // namespace

namespace {

// ggml Q4_K rows import without loss: decode() is ggml's dequantization bit for bit, and the
// kernels run on the imported weight (the int8_blocks path against its specification).
TEST_F(WeightOnlySuper, ImportsGgmlQ4KWithoutLoss) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 21, k = 768;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  std::vector<std::uint8_t> blocks(
      static_cast<std::size_t>(n * Q::ggml_row_size(Q::GgmlType::Q4_K, k)));
  Q::ggml_quantize_rows(Q::GgmlType::Q4_K, w.data(), blocks.data(), n, k, nullptr);
  std::vector<float> theirs(static_cast<std::size_t>(n * k));
  Q::ggml_dequantize_rows(Q::GgmlType::Q4_K, blocks.data(), theirs.data(), n, k);
  const auto packed = Q::PackedWeightsLowBit::from_ggml(Q::GgmlType::Q4_K, blocks.data(), n, k);
  EXPECT_EQ(packed.format(), super6);
  const std::vector<float> ours = packed.decode();
  ASSERT_EQ(ours.size(), theirs.size());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    std::uint32_t a, b;
    std::memcpy(&a, &ours[i], 4);
    std::memcpy(&b, &theirs[i], 4);
    ASSERT_EQ(a, b) << i << ": " << ours[i] << " against ggml's " << theirs[i];
  }
  const std::vector<float> x = gaussian(static_cast<std::size_t>(3 * k), rng);
  EXPECT_EQ(run(Q::supported_isas().back(), 1, x, 3, packed, nullptr,
                Q::WeightOnlyActivations::int8_blocks),
            blocks_spec(x, 3, packed, nullptr));
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsLowBit::from_ggml(Q::GgmlType::Q4_0, blocks.data(), n, k),
                        "type = q4_0 (expected q4_K)");
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsLowBit::from_ggml(Q::GgmlType::Q4_K, blocks.data(), n, 320),
                        "k = 320 (expected a positive multiple of 256)");
  blocks[1] = 0x7c;  // row 0 block 0: d = +inf
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsLowBit::from_ggml(Q::GgmlType::Q4_K, blocks.data(), n, k),
                        "row 0 block 0: d or dmin is not finite");
}

}  // namespace
