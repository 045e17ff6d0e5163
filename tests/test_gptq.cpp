// GPTQ: RTN's codes for H = c·I and as damping grows, the synthetic-layer gains (and no gain),
// thread-count independence, act-order, bad inputs.
#include "lucid/quantization/gptq.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>

#include "algorithm_test_data.hpp"
#include "lucid/quantization/runtime.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::activations;
using Q::testing::gaussian;
using Q::testing::hessian_of;
using Q::testing::relative_output_error;

namespace {

std::vector<double> scaled_identity(std::int64_t k, double c) {
  std::vector<double> h(static_cast<std::size_t>(k * k), 0.0);
  for (std::int64_t j = 0; j < k; ++j)
    h[j * k + j] = c;
  return h;
}

void expect_same_quantized(const Q::QuantizedTensor& a, const Q::QuantizedTensor& b) {
  EXPECT_EQ(a.int_repr(), b.int_repr());
  EXPECT_EQ(a.qparams().scale, b.qparams().scale);
  EXPECT_EQ(a.qparams().zero_point, b.qparams().zero_point);
  EXPECT_EQ(a.qparams().group_size, b.qparams().group_size);
  EXPECT_EQ(a.qparams().ch_axis, b.qparams().ch_axis);
}

}  // namespace

TEST(Gptq, ScaledIdentityHessianGivesRtnCodes) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 24;
  const std::int64_t k = 300;
  const auto w = gaussian(rng, n, k, 0.05f);
  const Q::TensorView view(w, {n, k});
  for (const Q::WeightGrid grid :
       {Q::WeightGrid{Q::qint4, true, 128}, Q::WeightGrid{Q::quint4, false, 32},
        Q::WeightGrid{Q::qint4, true, 0}, Q::WeightGrid{Q::quint4, false, 100},
        Q::WeightGrid{Q::qint8, true, 64}, Q::WeightGrid{Q::quint4, true, 128}}) {
    SCOPED_TRACE(grid.qdtype.name() + (grid.symmetric ? " symmetric g" : " affine g") +
                 std::to_string(grid.group_size));
    for (const bool act_order : {false, true}) {
      Q::GptqOptions options;
      options.grid = grid;
      options.act_order = act_order;
      options.block_size = 64;
      const auto result = Q::gptq_quantize(view, scaled_identity(k, 3.5), options);
      EXPECT_FALSE(result.fell_back_to_rtn);
      expect_same_quantized(result.quantized, Q::quantize_rtn(view, grid));
      // The loss report: ½ Σ (w − ŵ)² (c + λ) when U = (c + λ)^(−½) I.
      const float* d = result.dequantized.data_as<float>();
      double expected = 0;
      for (std::size_t i = 0; i < w.size(); ++i)
        expected += std::pow(double(w[i]) - d[i], 2);
      expected *= 0.5 * (3.5 * 1.01);
      EXPECT_NEAR(result.loss, expected, 1e-9 * expected);
    }
  }
}

TEST(Gptq, TendsToRtnAsDampingGrows) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 64;
  const std::int64_t k = 256;
  const auto w = gaussian(rng, n, k, 0.05f);
  const auto h = hessian_of(activations(rng, 1024, k, 0.9), k);
  const Q::TensorView view(w, {n, k});
  const Q::WeightGrid grid{Q::qint4, true, 128};
  const auto rtn = Q::quantize_rtn(view, grid).int_repr();
  std::int64_t previous = std::numeric_limits<std::int64_t>::max();
  for (const double damp : {0.01, 1.0, 100.0, 1e4, 1e6, 1e9}) {
    Q::GptqOptions options;
    options.grid = grid;
    options.percent_damp = damp;
    const auto codes = Q::gptq_quantize(view, h, options).quantized.int_repr();
    std::int64_t differing = 0;
    for (std::size_t i = 0; i < codes.size(); ++i)
      differing += codes[i] != rtn[i];
    std::cout << "[ gptq ] percent_damp " << damp << ": " << differing << " of " << codes.size()
              << " codes differ from RTN\n";
    EXPECT_LE(differing, previous) << "percent_damp " << damp;
    previous = differing;
  }
  EXPECT_EQ(previous, 0) << "at percent_damp 1e9 GPTQ should give RTN's codes";
}

// The §7.4 synthetic layer: N = 256, K = 512, 4096 calibration and 4096 held-out rows, int4 g128.
double held_out_ratio(double rho, const Q::GptqOptions& options, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::int64_t n = 256;
  const std::int64_t k = 512;
  const auto w = gaussian(rng, n, k, 0.05f);
  const auto h_cal = hessian_of(activations(rng, 4096, k, rho), k);
  const auto h_test = hessian_of(activations(rng, 4096, k, rho), k);
  const Q::TensorView view(w, {n, k});
  const auto gptq = Q::gptq_quantize(view, h_cal, options);
  const auto rtn = Q::dequantize(Q::quantize_rtn(view, options.grid));
  return relative_output_error(w, gptq.dequantized, k, h_test) /
         relative_output_error(w, rtn, k, h_test);
}

TEST(Gptq, CorrelatedInputsCutHeldOutErrorBelowThreeTenthsOfRtn) {
  const auto seed = Q::testing::test_seed();
  Q::GptqOptions options;
  options.grid = {Q::quint4, false, 128};
  const double ratio = held_out_ratio(0.9, options, seed);
  options.act_order = true;
  options.static_groups = true;
  const double ratio_act_order = held_out_ratio(0.9, options, seed);
  std::cout << "[ gptq ] correlated inputs, int4 g128: held-out error GPTQ / RTN = " << ratio
            << ", with act-order + static groups = " << ratio_act_order << "\n";
  EXPECT_LE(ratio, 0.3);
  EXPECT_LE(ratio_act_order, 0.3);
}

TEST(Gptq, IndependentInputsStayWithinRtnBand) {
  const auto seed = Q::testing::test_seed();
  Q::GptqOptions options;
  options.grid = {Q::quint4, false, 128};
  const double ratio = held_out_ratio(0.0, options, seed);
  std::cout << "[ gptq ] independent inputs, int4 g128: held-out error GPTQ / RTN = " << ratio
            << "\n";
  EXPECT_GE(ratio, 0.9);
  EXPECT_LE(ratio, 1.2);
}

TEST(Gptq, CodesAndLossDoNotDependOnTheThreadCount) {
  // The in-block updates run row by row over the threads: 160 x 640 is enough for 3 pieces.
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 160;
  const std::int64_t k = 640;
  const auto w = gaussian(rng, n, k, 0.05f);
  const auto h = hessian_of(activations(rng, 2 * k, k, 0.9), k);
  const Q::TensorView view(w, {n, k});
  const int threads = Q::num_threads();
  for (const bool act_order : {false, true}) {
    SCOPED_TRACE(act_order ? "act-order" : "in order");
    Q::GptqOptions options;
    options.grid = {Q::quint4, false, 32};
    options.block_size = 64;
    options.act_order = act_order;
    Q::set_num_threads(1);
    const auto one = Q::gptq_quantize(view, h, options);
    for (const int count : {2, 3}) {
      Q::set_num_threads(count);
      const auto many = Q::gptq_quantize(view, h, options);
      expect_same_quantized(many.quantized, one.quantized);
      EXPECT_EQ(many.loss, one.loss);
    }
  }
  Q::set_num_threads(threads);
}

TEST(Gptq, ActOrderGroupsCarryGIdxAndPermutedColumns) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 16;
  const std::int64_t k = 96;
  const auto w = gaussian(rng, n, k, 0.05f);
  const auto h = hessian_of(activations(rng, 512, k, 0.5), k);
  Q::GptqOptions options;
  options.grid = {Q::qint4, true, 32};
  options.act_order = true;
  const auto dynamic = Q::gptq_quantize(Q::TensorView(w, {n, k}), h, options);
  ASSERT_TRUE(dynamic.permuted_columns);
  const auto deq = Q::dequantize(dynamic.quantized);
  for (std::int64_t c = 0; c < k; ++c) {
    EXPECT_EQ(dynamic.g_idx[dynamic.permutation[c]], c / 32);
    for (std::int64_t r = 0; r < n; ++r) {
      ASSERT_EQ(deq.data_as<float>()[r * k + c],
                dynamic.dequantized.data_as<float>()[r * k + dynamic.permutation[c]]);
    }
  }
  for (std::int64_t c = 1; c < k; ++c) {
    EXPECT_GE(h[dynamic.permutation[c - 1] * (k + 1)], h[dynamic.permutation[c] * (k + 1)]);
  }
  options.static_groups = true;
  const auto fixed = Q::gptq_quantize(Q::TensorView(w, {n, k}), h, options);
  EXPECT_FALSE(fixed.permuted_columns);
  const auto fixed_deq = Q::dequantize(fixed.quantized);
  for (std::int64_t c = 0; c < k; ++c)
    EXPECT_EQ(fixed.g_idx[c], c / 32);
  for (std::int64_t i = 0; i < n * k; ++i) {
    ASSERT_EQ(fixed_deq.data_as<float>()[i], fixed.dequantized.data_as<float>()[i]);
  }
}

TEST(Gptq, DeadColumnsAreZeroed) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t k = 64;
  auto x = activations(rng, 256, k, 0.5, 0);
  for (std::int64_t r = 0; r < 256; ++r)
    x[r * k + 5] = 0;
  const auto w = gaussian(rng, 8, k, 0.05f);
  const auto result = Q::gptq_quantize(Q::TensorView(w, {8, k}), hessian_of(x, k));
  EXPECT_EQ(result.dead_columns, 1);
  for (std::int64_t r = 0; r < 8; ++r)
    EXPECT_EQ(result.dequantized.data_as<float>()[r * k + 5], 0.0f);
}

TEST(Gptq, FailedCholeskyFallsBackToRtnWithAWarning) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t k = 40;
  const auto w = gaussian(rng, 6, k, 0.05f);
  const std::vector<double> singular(static_cast<std::size_t>(k * k), 1.0);  // rank 1
  Q::GptqOptions options;
  options.percent_damp = 0;
  options.grid = {Q::qint4, true, 0};
  const auto result = Q::gptq_quantize(Q::TensorView(w, {6, k}), singular, options);
  EXPECT_TRUE(result.fell_back_to_rtn);
  EXPECT_NE(result.warning.find("fell back to RTN"), std::string::npos);
  expect_same_quantized(result.quantized, Q::quantize_rtn(Q::TensorView(w, {6, k}), options.grid));
}

TEST(Gptq, BadInputsAreNamed) {
  std::vector<float> w(8 * 4, 0.5f);
  const Q::TensorView view(w, {8, 4});
  EXPECT_ERROR_CONTAINS(Q::gptq_quantize(view, scaled_identity(5, 1)), "expected 4x4");
  auto h = scaled_identity(4, 1);
  h[1] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_ERROR_CONTAINS(Q::gptq_quantize(view, h), "not finite");
  Q::GptqOptions options;
  options.percent_damp = -1;
  EXPECT_ERROR_CONTAINS(Q::gptq_quantize(view, scaled_identity(4, 1), options), "percent_damp");
  w[3] = std::numeric_limits<float>::infinity();
  EXPECT_ERROR_CONTAINS(Q::gptq_quantize(view, scaled_identity(4, 1)), "element 3");
  std::vector<float> flat(4, 1.0f);
  EXPECT_ERROR_CONTAINS(Q::gptq_quantize(Q::TensorView(flat, {4}), scaled_identity(4, 1)),
                        "rank-2");
}
