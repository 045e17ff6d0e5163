// Tests of include/lucid/quantization/weight_only.hpp: formats, packing round trips, accuracy,
// errors.
#include "lucid/quantization/weight_only.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "lucid/quantization/quantize.hpp"
#include "lucid/quantization/runtime.hpp"
#include "test_support.hpp"
#include "weight_only_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::exact_product;
using Q::testing::gaussian;
using Q::testing::PlainWeights;
using Q::testing::rounding_bound;

namespace {

using Q::testing::make_format;

std::vector<float> run(const std::vector<float>& x, std::int64_t m, const Q::PackedWeightsLowBit& w,
                       const float* bias,
                       Q::WeightOnlyActivations activations = Q::WeightOnlyActivations::float32) {
  std::vector<float> y(static_cast<std::size_t>(m * w.rows()), -1.0f);
  Q::weight_only_gemm(x.data(), m, w.columns(), w, bias, y.data(), w.rows(),
                      Q::WeightOnlyOptions{activations});
  return y;
}

TEST(WeightOnlyFormat, RejectsBadFields) {
  EXPECT_ERROR_CONTAINS(make_format(3, 128, true).validate(), "bits = 3");
  EXPECT_ERROR_CONTAINS(make_format(4, 48, true).validate(), "group_size = 48");
  EXPECT_NO_THROW(make_format(8, 0, false, Q::ScaleType::bf16).validate());
  EXPECT_EQ(make_format(4, 128, true).describe(), "int4 g128 symmetric f32-scales");
  EXPECT_EQ(make_format(8, 0, false, Q::ScaleType::bf16).describe(),
            "int8 per-channel affine bf16-scales");
}

// Bytes streamed per weight, per format: code bits + scale bits (16 or 32) + zero-point bits (8,
// affine) per group, exactly, with no padding (the dense records of docs/formats.md).
TEST(WeightOnlyPacking, BytesStreamedPerWeight) {
  const std::int64_t n = 32, k = 512;
  const std::vector<float> w(static_cast<std::size_t>(n * k), 0.25f);
  struct Case {
    int bits;
    std::int64_t group;
    bool sym;
    Q::ScaleType scales;
    double bits_per_weight;
  };
  const Case cases[] = {
      {4, 32, true, Q::ScaleType::f16, 4.5},      {4, 32, true, Q::ScaleType::bf16, 4.5},
      {4, 32, true, Q::ScaleType::f32, 5.0},      {4, 32, false, Q::ScaleType::f16, 4.75},
      {4, 64, true, Q::ScaleType::f16, 4.25},     {4, 128, true, Q::ScaleType::bf16, 4.125},
      {4, 128, true, Q::ScaleType::f32, 4.25},    {4, 128, false, Q::ScaleType::f32, 4.3125},
      {4, 256, true, Q::ScaleType::f16, 4.0625},  {8, 32, true, Q::ScaleType::f16, 8.5},
      {8, 32, true, Q::ScaleType::f32, 9.0},      {8, 32, false, Q::ScaleType::bf16, 8.75},
      {8, 128, true, Q::ScaleType::bf16, 8.125},  {8, 0, true, Q::ScaleType::f32, 8.0625},
      {4, 0, false, Q::ScaleType::f16, 4.046875},
  };
  for (const Case& c : cases) {
    const Q::WeightOnlyFormat f = make_format(c.bits, c.group, c.sym, c.scales);
    const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, f);
    EXPECT_EQ(f.bits_per_weight(k), c.bits_per_weight) << f.describe();
    EXPECT_EQ(packed.packed_bytes(), static_cast<std::size_t>(c.bits_per_weight * n * k / 8))
        << f.describe();
  }
}

// On the min_max grid, codes and scales equal the core's quantize_per_group / per-channel
// quantize exactly.
TEST(WeightOnlyPacking, MatchesCoreQuantization) {
  const auto min_max_format = [](int bits, std::int64_t g, bool sym) {
    return Q::testing::make_format(bits, g, sym, Q::ScaleType::f32, Q::WeightOnlyGrid::min_max);
  };
  std::mt19937_64 rng(Q::testing::test_seed());
  for (const std::int64_t k : {std::int64_t{64}, std::int64_t{200}, std::int64_t{37}}) {
    const std::int64_t n = 19;
    const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
    const Q::TensorView view(w.data(), Q::ScalarType::float32, {n, k});
    for (const int bits : {4, 8}) {
      for (const bool sym : {true, false}) {
        for (const std::int64_t g : {std::int64_t{0}, std::int64_t{32}, std::int64_t{64}}) {
          SCOPED_TRACE("k=" + std::to_string(k) + " " + min_max_format(bits, g, sym).describe());
          const auto packed =
              Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, min_max_format(bits, g, sym));
          const Q::QDtype qd = Q::QDtype::full_range(bits, sym);
          const Q::QScheme scheme =
              sym ? Q::QScheme::PER_CHANNEL_SYMMETRIC : Q::QScheme::PER_CHANNEL_AFFINE;
          const Q::QuantizedTensor core = g == 0 ? Q::quantize(view, scheme, qd, 0, 0)
                                                 : Q::quantize_per_group(view, scheme, qd, 1, g);
          EXPECT_EQ(packed.codes(), core.int_repr());
          EXPECT_TRUE(std::ranges::equal(packed.scales(), core.qparams().scale));
          EXPECT_TRUE(std::ranges::equal(packed.zero_points(), core.qparams().zero_point));
          // and back: to_quantized() then from_quantized() reproduces everything.
          const Q::QuantizedTensor back = packed.to_quantized();
          EXPECT_EQ(back.int_repr(), core.int_repr());
          EXPECT_EQ(back.qparams().group_size, core.qparams().group_size);
          const auto again = Q::PackedWeightsLowBit::from_quantized(core);
          Q::WeightOnlyFormat expected = packed.format();
          expected.grid = Q::WeightOnlyGrid::search;  // what from_quantized reports
          EXPECT_EQ(again.format(), expected);
          EXPECT_EQ(again.codes(), packed.codes());
          EXPECT_EQ(again.packed_bytes(), packed.packed_bytes());
          const Q::Tensor deq = Q::dequantize(core);
          const std::vector<float> decoded = packed.decode();
          ASSERT_EQ(decoded.size(), static_cast<std::size_t>(deq.numel()));
          for (std::size_t i = 0; i < decoded.size(); ++i)
            ASSERT_EQ(decoded[i], deq.floats()[i]) << i;
        }
      }
    }
  }
}

TEST(WeightOnlyPacking, Bf16ScalesAreRoundedBeforeCoding) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 5, k = 96;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  const auto packed = Q::PackedWeightsLowBit::quantize(
      w.data(), n, k, k, make_format(4, 32, true, Q::ScaleType::bf16));
  const PlainWeights p(packed);
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t c = 0; c < k; ++c) {
      const float s = p.s[p.group_index(r, c)];
      ASSERT_EQ(s, Q::bfloat16_to_float(Q::float_to_bfloat16(s)));
      // The code is the core's quantize_value with the rounded scale.
      EXPECT_EQ(p.q[static_cast<std::size_t>(r * k + c)],
                Q::quantize_value(w[static_cast<std::size_t>(r * k + c)], s, 0, Q::qint4));
    }
  }
}

// A QuantizedTensor on a signed grid with non-zero zero points packs as affine and round-trips.
TEST(WeightOnlyPacking, FromQuantizedSignedAffine) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 17, k = 70;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  const Q::TensorView view(w.data(), Q::ScalarType::float32, {n, k});
  const auto core = Q::quantize_per_group(view, Q::QScheme::PER_CHANNEL_AFFINE, Q::qint4, 1, 32);
  const auto packed = Q::PackedWeightsLowBit::from_quantized(core);
  EXPECT_FALSE(packed.format().symmetric);
  EXPECT_EQ(packed.codes(), core.int_repr());
  EXPECT_TRUE(std::ranges::equal(packed.zero_points(), core.qparams().zero_point));
  const Q::QuantizedTensor back = packed.to_quantized();
  EXPECT_EQ(back.qdtype(), Q::qint4);
  EXPECT_EQ(back.qparams().zero_point, core.qparams().zero_point);
  // The product follows the codes: reference tier output equals the exact product, rounded once.
  Q::set_isa(Q::Isa::reference);
  const std::int64_t m = 3;
  const std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
  const std::vector<float> y = run(x, m, packed, nullptr);
  const std::vector<double> exact = exact_product(x, m, PlainWeights(packed), nullptr);
  for (std::size_t i = 0; i < y.size(); ++i)
    EXPECT_EQ(y[i], static_cast<float>(exact[i])) << i;
  Q::set_isa(Q::supported_isas().back());
}

// Per-tensor parameters are replicated per output channel (reported back as per-channel).
// The search grid's negative scales survive to_quantized() (scale −s, codes −q − 1, zero
// point −1: positive QParams scales) and from_quantized() (back to symmetric, negative scales):
// the same codes, scales and product bits.
TEST(WeightOnlyPacking, NegativeScalesRoundTripThroughQuantizedTensor) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 21, k = 100;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  const std::vector<float> x = gaussian(static_cast<std::size_t>(3 * k), rng);
  for (const int bits : {4, 8}) {
    const auto packed = Q::PackedWeightsLowBit::quantize(
        w.data(), n, k, k, make_format(bits, 32, true, Q::ScaleType::f16));
    const std::vector<float> s = packed.scales();
    ASSERT_TRUE(std::any_of(s.begin(), s.end(), [](float v) { return v < 0; }));
    const Q::QuantizedTensor qt = packed.to_quantized();
    EXPECT_EQ(qt.qparams().qscheme, Q::QScheme::PER_CHANNEL_AFFINE);
    for (const float v : qt.qparams().scale)
      ASSERT_GT(v, 0.0f);
    for (const std::int32_t z : qt.qparams().zero_point)
      ASSERT_TRUE(z == 0 || z == -1);
    const Q::Tensor deq = Q::dequantize(qt);
    const std::vector<float> decoded = packed.decode();
    for (std::size_t i = 0; i < decoded.size(); ++i)
      ASSERT_EQ(decoded[i], deq.floats()[i]) << i;
    const auto back = Q::PackedWeightsLowBit::from_quantized(qt);
    EXPECT_TRUE(back.format().symmetric);
    EXPECT_EQ(back.codes(), packed.codes());
    EXPECT_EQ(back.scales(), packed.scales());
    for (const auto a : {Q::WeightOnlyActivations::float32, Q::WeightOnlyActivations::int8_blocks})
      EXPECT_EQ(run(x, 3, back, nullptr, a), run(x, 3, packed, nullptr, a));
  }
}

TEST(WeightOnlyPacking, FromQuantizedPerTensor) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 18, k = 45;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  const Q::TensorView view(w.data(), Q::ScalarType::float32, {n, k});
  const auto core = Q::quantize(view, Q::QScheme::PER_TENSOR_AFFINE, Q::quint8, 0, 0);
  const auto packed = Q::PackedWeightsLowBit::from_quantized(core);
  EXPECT_EQ(packed.format().group_size, 0);
  EXPECT_FALSE(packed.format().symmetric);
  EXPECT_EQ(packed.codes(), core.int_repr());
  EXPECT_EQ(packed.scales(),
            std::vector<float>(static_cast<std::size_t>(n), core.qparams().scale[0]));
  EXPECT_EQ(packed.zero_points(),
            std::vector<std::int32_t>(static_cast<std::size_t>(n), core.qparams().zero_point[0]));
  const Q::Tensor deq = Q::dequantize(core);
  const std::vector<float> decoded = packed.decode();
  for (std::size_t i = 0; i < decoded.size(); ++i)
    ASSERT_EQ(decoded[i], deq.floats()[i]) << i;
  EXPECT_EQ(packed.to_quantized().qparams().qscheme, Q::QScheme::PER_CHANNEL_AFFINE);
}

TEST(WeightOnlyPacking, FromQuantizedRejectsWhatDoesNotFit) {
  std::vector<float> w(4 * 40, 0.5f);
  const Q::TensorView view(w.data(), Q::ScalarType::float32, {4, 40});
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsLowBit::from_quantized(Q::quantize_per_group(
                            view, Q::QScheme::PER_CHANNEL_SYMMETRIC, Q::qint4, 1, 20)),
                        "group_size = 20");
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsLowBit::from_quantized(
                            Q::quantize(view, Q::QScheme::PER_CHANNEL_SYMMETRIC, Q::qint8, 1, 0)),
                        "ch_axis = 1");
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsLowBit::from_quantized(
                            Q::quantize(view, Q::QScheme::PER_CHANNEL_SYMMETRIC, Q::qint2, 0, 0)),
                        "qdtype = qint2");
  const Q::TensorView flat(w.data(), Q::ScalarType::float32, {160});
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsLowBit::from_quantized(
                            Q::quantize(flat, Q::QScheme::PER_TENSOR_SYMMETRIC, Q::qint8, 0, 0)),
                        "shape = [160]");
}

TEST(WeightOnlyQuantize, RejectsBadArguments) {
  std::vector<float> w(3 * 8, 1.0f);
  EXPECT_ERROR_CONTAINS(
      Q::PackedWeightsLowBit::quantize(nullptr, 3, 8, 8, make_format(4, 32, true)), "w is null");
  EXPECT_ERROR_CONTAINS(
      Q::PackedWeightsLowBit::quantize(w.data(), 0, 8, 8, make_format(4, 32, true)), "n = 0");
  EXPECT_ERROR_CONTAINS(
      Q::PackedWeightsLowBit::quantize(w.data(), 3, 8, 4, make_format(4, 32, true)),
      "row_stride = 4");
  w[13] = std::nanf("");
  EXPECT_ERROR_CONTAINS(
      Q::PackedWeightsLowBit::quantize(w.data(), 3, 8, 8, make_format(4, 32, true)), "w[1, 5]");
}

TEST(WeightOnlyGemm, RejectsBadArguments) {
  std::vector<float> w(16 * 32, 1.0f), x(2 * 32, 1.0f), y(2 * 16, 7.0f);
  const auto packed =
      Q::PackedWeightsLowBit::quantize(w.data(), 16, 32, 32, make_format(4, 32, true));
  EXPECT_ERROR_CONTAINS(Q::weight_only_gemm(x.data(), 2, 31, packed, nullptr, y.data(), 16),
                        "x_row_stride = 31");
  EXPECT_ERROR_CONTAINS(Q::weight_only_gemm(x.data(), 2, 32, packed, nullptr, y.data(), 15),
                        "y_row_stride = 15");
  EXPECT_ERROR_CONTAINS(Q::weight_only_gemm(x.data(), -1, 32, packed, nullptr, y.data(), 16),
                        "m = -1");
  EXPECT_ERROR_CONTAINS(
      Q::weight_only_gemm(static_cast<const float*>(nullptr), 2, 32, packed, nullptr, y.data(), 16),
      "x is null");
  EXPECT_ERROR_CONTAINS(
      Q::weight_only_gemm(x.data(), Q::ScalarType::float16, 2, 32, packed, nullptr, y.data(), 16),
      "x_type = float16");
  EXPECT_ERROR_CONTAINS(
      Q::weight_only_gemm(x.data(), 2, 32, Q::PackedWeightsLowBit(), nullptr, y.data(), 16),
      "empty");
  for (const float v : y)
    EXPECT_EQ(v, 7.0f);  // nothing written
  const Q::Tensor bad_x = Q::Tensor(Q::ScalarType::float32, {2, 31});
  EXPECT_ERROR_CONTAINS(Q::weight_only_linear(bad_x, packed), "x shape = [2, 31]");
  const Q::Tensor good_x = Q::Tensor(Q::ScalarType::float32, {2, 32});
  const Q::Tensor bad_bias = Q::Tensor(Q::ScalarType::float32, {15});
  const Q::TensorView bias_view = bad_bias.view();
  EXPECT_ERROR_CONTAINS(Q::weight_only_linear(good_x, packed, &bias_view), "bias = float32 [15]");
}

// Tensor form: leading dimensions kept, bf16 activations equal their float32 widening exactly.
TEST(WeightOnlyGemm, LinearShapesAndBf16Activations) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 40, k = 96;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  const std::vector<float> b = gaussian(static_cast<std::size_t>(n), rng);
  const auto packed =
      Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, make_format(4, 32, false));
  std::vector<std::uint16_t> xb(static_cast<std::size_t>(6 * k));
  std::vector<float> xf(xb.size());
  const std::vector<float> src = gaussian(xb.size(), rng);
  for (std::size_t i = 0; i < xb.size(); ++i) {
    xb[i] = Q::float_to_bfloat16(src[i]);
    xf[i] = Q::bfloat16_to_float(xb[i]);
  }
  const Q::TensorView bias(b.data(), Q::ScalarType::float32, {n});
  const Q::WeightOnlyOptions float_path{Q::WeightOnlyActivations::float32};
  const Q::Tensor yb = Q::weight_only_linear(
      Q::TensorView(xb.data(), Q::ScalarType::bfloat16, {2, 3, k}), packed, &bias, float_path);
  const Q::Tensor yf = Q::weight_only_linear(
      Q::TensorView(xf.data(), Q::ScalarType::float32, {2, 3, k}), packed, &bias, float_path);
  EXPECT_EQ(yb.shape(), (Q::Shape{2, 3, n}));
  for (std::int64_t i = 0; i < yb.numel(); ++i) {
    ASSERT_EQ(yb.floats()[static_cast<std::size_t>(i)], yf.floats()[static_cast<std::size_t>(i)])
        << i;
  }
  const std::vector<double> exact = exact_product(xf, 6, PlainWeights(packed), b.data());
  const PlainWeights p(packed);
  for (std::int64_t r = 0; r < 6; ++r) {
    for (std::int64_t c = 0; c < n; ++c) {
      const double e = exact[static_cast<std::size_t>(r * n + c)];
      EXPECT_NEAR(yf.floats()[static_cast<std::size_t>(r * n + c)], e,
                  rounding_bound(xf, r, p, c, e));
    }
  }
}

// Results never depend on the thread count (threads split N, never K).
TEST(WeightOnlyGemm, ThreadCountDoesNotChangeResults) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 1000, k = 1024;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  for (const std::int64_t m : {std::int64_t{1}, std::int64_t{19}}) {
    const std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
    const auto packed =
        Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, make_format(4, 128, false));
    const int before = Q::num_threads();
    Q::set_num_threads(1);
    const std::vector<float> one = run(x, m, packed, nullptr);
    Q::set_num_threads(3);
    const std::vector<float> three = run(x, m, packed, nullptr);
    Q::set_num_threads(before);
    EXPECT_EQ(one, three);
  }
}

// The float64 product x[m, k] · w[n, k]ᵀ of the unquantized operands.
std::vector<double> float_product(const std::vector<float>& x, const std::vector<float>& w,
                                  std::int64_t m, std::int64_t n, std::int64_t k) {
  std::vector<double> y(static_cast<std::size_t>(m * n));
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t c = 0; c < n; ++c) {
      double acc = 0.0;
      for (std::int64_t t = 0; t < k; ++t) {
        acc += double(x[static_cast<std::size_t>(r * k + t)]) *
               double(w[static_cast<std::size_t>(c * k + t)]);
      }
      y[static_cast<std::size_t>(r * n + c)] = acc;
    }
  }
  return y;
}

// Accuracy against the float product: measured SQNR within 1 dB of the uniform-noise prediction
// 10·log10(Σ y² / Σ_{m,n} Σ_k x[m,k]² · s[n,g(k)]² / 12) from the actual scales.
TEST(WeightOnlyAccuracy, SqnrMatchesTheQuantizationStep) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 256, k = 1024, m = 16;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  const std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
  const std::vector<double> y_true = float_product(x, w, m, n, k);
  struct Case {
    int bits;
    std::int64_t group;
    bool symmetric;
  };
  const Case cases[] = {{8, 0, true},    {8, 0, false},  {4, 32, true}, {4, 64, true},
                        {4, 128, true},  {4, 256, true}, {4, 0, true},  {4, 32, false},
                        {4, 128, false}, {8, 128, true}};
  for (const Case& cs : cases) {
    const Q::WeightOnlyFormat f = make_format(cs.bits, cs.group, cs.symmetric);
    const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, f);
    const PlainWeights p(packed);
    const std::vector<float> y = run(x, m, packed, nullptr);
    double signal = 0.0, noise = 0.0, predicted_noise = 0.0;
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t c = 0; c < n; ++c) {
        const auto i = static_cast<std::size_t>(r * n + c);
        signal += y_true[i] * y_true[i];
        noise += (double(y[i]) - y_true[i]) * (double(y[i]) - y_true[i]);
        for (std::int64_t t = 0; t < k; ++t) {
          const double xv = x[static_cast<std::size_t>(r * k + t)];
          const double s = p.s[p.group_index(c, t)];
          predicted_noise += xv * xv * s * s / 12.0;
        }
      }
    }
    const double measured = 10.0 * std::log10(signal / noise);
    const double predicted = 10.0 * std::log10(signal / predicted_noise);
    std::printf("[ sqnr ] %-36s measured %6.2f dB, predicted %6.2f dB (%s)\n", f.describe().c_str(),
                measured, predicted, Q::to_string(Q::active_isa()).c_str());
    EXPECT_NEAR(measured, predicted, 1.0) << f.describe();
  }
}

// The int8 path through the Tensor form: bf16 x (widened in the driver) and strided float x
// equal the specification, with bias.
TEST(WeightOnlyGemm, Int8PathLinearBf16AndStrides) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 40, k = 96, m = 20;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  const std::vector<float> b = gaussian(static_cast<std::size_t>(n), rng);
  const auto packed =
      Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, make_format(8, 32, false));
  std::vector<std::uint16_t> xb(static_cast<std::size_t>(m * k));
  std::vector<float> xf(xb.size());
  const std::vector<float> src = gaussian(xb.size(), rng);
  for (std::size_t i = 0; i < xb.size(); ++i) {
    xb[i] = Q::float_to_bfloat16(src[i]);
    xf[i] = Q::bfloat16_to_float(xb[i]);
  }
  const std::vector<float> expected = Q::testing::int8_path_spec(xf, m, packed, b.data());
  const Q::TensorView bias(b.data(), Q::ScalarType::float32, {n});
  const Q::WeightOnlyOptions int8{Q::WeightOnlyActivations::int8_dynamic};
  const Q::Tensor yb = Q::weight_only_linear(
      Q::TensorView(xb.data(), Q::ScalarType::bfloat16, {4, 5, k}), packed, &bias, int8);
  ASSERT_EQ(yb.shape(), (Q::Shape{4, 5, n}));
  EXPECT_EQ(std::vector<float>(yb.floats().begin(), yb.floats().end()), expected);
  // Strided x and y rows.
  const std::int64_t xs = k + 5, ys = n + 3;
  std::vector<float> xp(static_cast<std::size_t>(m * xs), 1e30f);
  for (std::int64_t r = 0; r < m; ++r)
    std::copy_n(xf.begin() + r * k, k, xp.begin() + r * xs);
  std::vector<float> yp(static_cast<std::size_t>(m * ys), -7.0f);
  Q::weight_only_gemm(xp.data(), m, xs, packed, b.data(), yp.data(), ys, int8);
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t c = 0; c < ys; ++c) {
      const float got = yp[static_cast<std::size_t>(r * ys + c)];
      if (c < n) {
        ASSERT_EQ(got, expected[static_cast<std::size_t>(r * n + c)]) << r << " " << c;
      } else {
        ASSERT_EQ(got, -7.0f) << "wrote past N at row " << r;
      }
    }
  }
}

TEST(WeightOnlyGemm, Int8PathThreadCountDoesNotChangeResults) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 1000, k = 1024;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  for (const bool sym : {true, false}) {
    for (const std::int64_t m : {std::int64_t{1}, std::int64_t{70}}) {
      const std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
      const auto packed =
          Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, make_format(4, 128, sym));
      const int before = Q::num_threads();
      Q::set_num_threads(1);
      const auto one = run(x, m, packed, nullptr, Q::WeightOnlyActivations::int8_dynamic);
      Q::set_num_threads(3);
      const auto three = run(x, m, packed, nullptr, Q::WeightOnlyActivations::int8_dynamic);
      Q::set_num_threads(before);
      EXPECT_EQ(one, three) << "m=" << m << " symmetric=" << sym;
    }
  }
}

// On the int8-activation path (automatic's choice on the AVX2 and AVX-512 tiers) each output row
// depends only on its own row of x: a batch gives the bits of its rows run one by one, whichever
// kernel (few-row or tile) the batch size picks, on every tier. (The float32 path is not: its
// kernels split K into more partial sums when there are fewer rows.)
TEST(WeightOnlyGemm, RowsAreBatchInvariant) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 70, k = 200, m = 40;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  const std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
  const Q::Isa before = Q::active_isa();
  for (const int bits : {4, 8}) {
    const auto packed =
        Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, make_format(bits, 64, false));
    for (const Q::Isa isa : Q::supported_isas()) {
      Q::set_isa(isa);
      {
        const auto path = Q::WeightOnlyActivations::int8_dynamic;
        SCOPED_TRACE(Q::to_string(isa) + " int" + std::to_string(bits) + " " + Q::to_string(path));
        const std::vector<float> batch = run(x, m, packed, nullptr, path);
        for (const std::int64_t r : {std::int64_t{0}, std::int64_t{5}, m - 1}) {
          const std::vector<float> row(x.begin() + r * k, x.begin() + (r + 1) * k);
          const std::vector<float> alone = run(row, 1, packed, nullptr, path);
          EXPECT_TRUE(std::equal(alone.begin(), alone.end(), batch.begin() + r * n)) << "row " << r;
        }
      }
    }
  }
  Q::set_isa(before);
}

// `automatic` takes int8_blocks for every M when the tier has a fast int8 kernel for the codes
// (AVX-512 with VNNI; AVX2, and AVX-512 without VNNI, through the AVX2 kernel; int4 and int8
// codes alike) and groups fit; float32 otherwise, and for non-finite x.
TEST(WeightOnlyGemm, AutomaticPicksTheDocumentedPath) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 40, k = 300;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  const Q::Isa before = Q::active_isa();
  for (const int bits : {4, 8}) {
    const auto packed =
        Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, make_format(bits, 64, true));
    for (const Q::Isa isa : Q::supported_isas()) {
      Q::set_isa(isa);
      // Both code widths: VNNI or AVX2 kernels; the reference tier has none.
      const bool fast = isa != Q::Isa::reference;
      for (const std::int64_t m : {std::int64_t{1}, std::int64_t{4}, std::int64_t{33}}) {
        SCOPED_TRACE(Q::to_string(isa) + " int" + std::to_string(bits) + " m=" + std::to_string(m));
        const auto path = Q::resolve_activations({}, m, packed);
        const auto want =
            fast ? Q::WeightOnlyActivations::int8_blocks : Q::WeightOnlyActivations::float32;
        EXPECT_EQ(path, want);
        for (const auto explicit_path :
             {Q::WeightOnlyActivations::float32, Q::WeightOnlyActivations::int8_dynamic,
              Q::WeightOnlyActivations::int8_blocks}) {
          EXPECT_EQ(Q::resolve_activations(Q::WeightOnlyOptions{explicit_path}, m, packed),
                    explicit_path);
        }
        const std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
        EXPECT_EQ(run(x, m, packed, nullptr, Q::WeightOnlyActivations::automatic),
                  run(x, m, packed, nullptr, want));
      }
      // Non-finite x: automatic falls back to float32 (NaN propagates), int8_dynamic throws.
      const std::int64_t m = 16;
      std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
      x[static_cast<std::size_t>(5 * k + 7)] = std::nanf("");
      const auto y = run(x, m, packed, nullptr, Q::WeightOnlyActivations::automatic);
      EXPECT_TRUE(std::isnan(y[static_cast<std::size_t>(5 * n)]));
      const auto y_float = run(x, m, packed, nullptr, Q::WeightOnlyActivations::float32);
      EXPECT_EQ(std::memcmp(y.data(), y_float.data(), y.size() * sizeof(float)), 0);  // NaN bits
      EXPECT_ERROR_CONTAINS(run(x, m, packed, nullptr, Q::WeightOnlyActivations::int8_dynamic),
                            "x[5, 7] = nan");
    }
  }
  Q::set_isa(before);
  EXPECT_EQ(Q::to_string(Q::WeightOnlyActivations::automatic), "automatic");
}

// Accuracy of the int8 path against the float product x · Wᵀ: the weight error (variance
// Σ_k x² s_w² / 12) plus the activation error (each code off by at most s_x / 2, variance
// s_x² / 12, multiplied by ŵ: Σ_k ŵ² s_x² / 12), independent to first order. Measured SQNR
// within 1 dB of that combined prediction.
TEST(WeightOnlyAccuracy, Int8PathSqnrMatchesTheCombinedPrediction) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 256, k = 1024, m = 64;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(n * k), rng);
  const std::vector<float> x = gaussian(static_cast<std::size_t>(m * k), rng);
  const std::vector<double> y_true = float_product(x, w, m, n, k);
  std::vector<double> sx2(static_cast<std::size_t>(m));  // s_x² per row
  for (std::int64_t r = 0; r < m; ++r) {
    const auto row = x.begin() + r * k;
    const auto [lo, hi] = std::minmax_element(row, row + k);
    const Q::QParams qp = Q::calculate_qparams(*lo, *hi, Q::QScheme::PER_TENSOR_AFFINE, Q::quint8);
    sx2[static_cast<std::size_t>(r)] = double(qp.scale[0]) * double(qp.scale[0]);
  }
  struct Case {
    int bits;
    std::int64_t group;
    bool symmetric;
  };
  const Case cases[] = {{8, 0, true}, {8, 0, false},  {4, 32, true},   {4, 128, true},
                        {4, 0, true}, {4, 32, false}, {4, 128, false}, {8, 128, true}};
  for (const Case& cs : cases) {
    const Q::WeightOnlyFormat f = make_format(cs.bits, cs.group, cs.symmetric);
    const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, f);
    const PlainWeights p(packed);
    const std::vector<float> w_hat = packed.decode();
    const std::vector<float> y8 =
        run(x, m, packed, nullptr, Q::WeightOnlyActivations::int8_dynamic);
    const std::vector<float> yf = run(x, m, packed, nullptr, Q::WeightOnlyActivations::float32);
    double signal = 0.0, noise8 = 0.0, noisef = 0.0, weight_noise = 0.0, act_noise = 0.0;
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t c = 0; c < n; ++c) {
        const auto i = static_cast<std::size_t>(r * n + c);
        signal += y_true[i] * y_true[i];
        noise8 += (double(y8[i]) - y_true[i]) * (double(y8[i]) - y_true[i]);
        noisef += (double(yf[i]) - y_true[i]) * (double(yf[i]) - y_true[i]);
        for (std::int64_t t = 0; t < k; ++t) {
          const double xv = x[static_cast<std::size_t>(r * k + t)];
          const double s = p.s[p.group_index(c, t)];
          const double wh = w_hat[static_cast<std::size_t>(c * k + t)];
          weight_noise += xv * xv * s * s / 12.0;
          act_noise += wh * wh * sx2[static_cast<std::size_t>(r)] / 12.0;
        }
      }
    }
    const double measured = 10.0 * std::log10(signal / noise8);
    const double predicted = 10.0 * std::log10(signal / (weight_noise + act_noise));
    const double float_path = 10.0 * std::log10(signal / noisef);
    std::printf(
        "[ sqnr int8 ] %-36s measured %6.2f dB, predicted %6.2f dB, float path %6.2f dB (%s)\n",
        f.describe().c_str(), measured, predicted, float_path,
        Q::to_string(Q::active_isa()).c_str());
    EXPECT_NEAR(measured, predicted, 1.0) << f.describe();
  }
}

}  // namespace
