// AWQ and SmoothQuant: α = 0 is RTN bit for bit, the search never loses to it, and the folding
// rules are exact.
#include "lucid/quantization/awq.hpp"
#include "lucid/quantization/smooth_quant.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "algorithm_test_data.hpp"
#include "lucid/quantization/channel_stats.hpp"
#include "lucid/quantization/weight_grid.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::activations;
using Q::testing::gaussian;
using Q::testing::hessian_of;

namespace {

struct Layer {
  std::int64_t n = 64;
  std::int64_t k = 256;
  std::int64_t t = 1024;
  std::vector<float> w;
  std::vector<float> x;
  std::vector<double> h;
  std::vector<double> mean_abs;
};

Layer make_layer(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Layer layer;
  layer.w = gaussian(rng, layer.n, layer.k, 0.05f);
  layer.x = activations(rng, layer.t, layer.k, 0.3);
  layer.h = hessian_of(layer.x, layer.k);
  Q::ChannelStats stats(layer.k);
  stats.add_rows(Q::TensorView(layer.x, {layer.t, layer.k}));
  layer.mean_abs = stats.mean_abs();
  return layer;
}

// y = x Wᵀ for rows x [T, K] and W [N, K], in double.
std::vector<double> linear(const std::vector<float>& x, const std::vector<float>& w,
                           std::int64_t k) {
  const auto t = static_cast<std::int64_t>(x.size()) / k;
  const auto n = static_cast<std::int64_t>(w.size()) / k;
  std::vector<double> y(static_cast<std::size_t>(t * n), 0.0);
  for (std::int64_t r = 0; r < t; ++r) {
    for (std::int64_t o = 0; o < n; ++o) {
      double acc = 0;
      for (std::int64_t j = 0; j < k; ++j)
        acc += static_cast<double>(x[r * k + j]) * w[o * k + j];
      y[r * n + o] = acc;
    }
  }
  return y;
}

double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double scale = 0;
  double diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::abs(a[i]));
    diff = std::max(diff, std::abs(a[i] - b[i]));
  }
  return diff / scale;
}

}  // namespace

TEST(Awq, AlphaZeroIsRtnBitForBit) {
  const auto layer = make_layer(Q::testing::test_seed());
  for (const Q::WeightGrid grid :
       {Q::WeightGrid{Q::quint4, false, 128}, Q::WeightGrid{Q::qint4, true, 0},
        Q::WeightGrid{Q::quint4, false, 32}}) {
    Q::AwqOptions options;
    options.grid = grid;
    options.grid_points = 1;  // α = 0 only
    options.clip = false;
    const Q::TensorView view(layer.w, {layer.n, layer.k});
    const auto result = Q::awq_quantize(view, layer.h, layer.t, layer.mean_abs, options);
    const auto rtn = Q::quantize_rtn(view, grid);
    EXPECT_EQ(result.alpha, 0.0f);
    for (float s : result.scales)
      ASSERT_EQ(s, 1.0f);
    EXPECT_EQ(result.quantized.int_repr(), rtn.int_repr());
    EXPECT_EQ(result.quantized.qparams().scale, rtn.qparams().scale);
    EXPECT_EQ(result.quantized.qparams().zero_point, rtn.qparams().zero_point);
    // The reported loss is RTN's calibration output MSE.
    const double rtn_mse = Q::output_error_proxy(view, Q::dequantize(rtn), layer.h) /
                           (static_cast<double>(layer.t) * layer.n);
    EXPECT_NEAR(result.loss, rtn_mse, 1e-9 * rtn_mse);
  }
}

TEST(Awq, SearchedAlphaNeverLosesToRtnOnCalibration) {
  const auto layer = make_layer(Q::testing::test_seed());
  Q::AwqOptions options;
  options.grid = {Q::quint4, false, 128};
  const Q::TensorView view(layer.w, {layer.n, layer.k});
  options.clip = false;
  const auto scaled = Q::awq_quantize(view, layer.h, layer.t, layer.mean_abs, options);
  options.clip = true;
  const auto clipped = Q::awq_quantize(view, layer.h, layer.t, layer.mean_abs, options);
  ASSERT_EQ(scaled.loss_per_alpha.size(), 20u);
  for (double loss : scaled.loss_per_alpha)
    EXPECT_GE(loss, scaled.loss);
  EXPECT_LE(scaled.loss, scaled.loss_per_alpha[0]);
  std::cout << "[ awq ] calibration MSE: RTN " << scaled.loss_per_alpha[0] << ", AWQ alpha "
            << scaled.alpha << " " << scaled.loss << ", with clipping " << clipped.loss << "\n";
  EXPECT_LT(scaled.loss, scaled.loss_per_alpha[0]) << "outlier channels should make scaling pay";
  EXPECT_LE(clipped.loss, scaled.loss_per_alpha[0]);
  // The quantized weight, divided back by s, reproduces the reported loss on the raw rows.
  const auto deq = Q::dequantize(clipped.quantized);
  std::vector<float> effective(layer.w.size());
  for (std::size_t i = 0; i < effective.size(); ++i) {
    effective[i] = deq.data_as<float>()[i] / clipped.scales[i % layer.k];
  }
  const auto y = linear(layer.x, layer.w, layer.k);
  const auto y_hat = linear(layer.x, effective, layer.k);
  double mse = 0;
  for (std::size_t i = 0; i < y.size(); ++i)
    mse += (y[i] - y_hat[i]) * (y[i] - y_hat[i]);
  mse /= static_cast<double>(y.size());
  EXPECT_NEAR(mse, clipped.loss, 1e-4 * clipped.loss);
}

TEST(Awq, FoldingIntoNormAndPreviousLinearIsExact) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t k = 48;
  const std::int64_t n = 20;
  const std::int64_t t = 32;
  const auto x = gaussian(rng, t, k);
  auto gamma = gaussian(rng, 1, k);
  auto beta = gaussian(rng, 1, k);
  auto w = gaussian(rng, n, k, 0.1f);
  std::vector<float> s(static_cast<std::size_t>(k));
  std::uniform_real_distribution<float> uniform(0.25f, 4.0f);
  for (float& v : s)
    v = uniform(rng);
  // Norm → Linear: (γ ⊙ x + β) Wᵀ, against (γ/s ⊙ x + β/s)(W·s)ᵀ.
  const auto norm_out = [&](const std::vector<float>& g, const std::vector<float>& b) {
    std::vector<float> out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      out[i] = g[i % k] * x[i] + b[i % k];
    return out;
  };
  const auto reference = linear(norm_out(gamma, beta), w, k);
  Q::fold_scales_into_norm(gamma, beta, s);
  Q::scale_weight_columns(w, k, s);
  EXPECT_LE(max_relative_difference(reference, linear(norm_out(gamma, beta), w, k)), 1e-5);

  // Linear → Linear: W2 (W1 x + b1), W1's rows and b1 divided by s, W2's columns multiplied.
  auto w1 = gaussian(rng, k, k, 0.2f);
  auto b1 = gaussian(rng, 1, k);
  auto w2 = gaussian(rng, n, k, 0.1f);
  const auto hidden = [&](const std::vector<float>& a, const std::vector<float>& b) {
    const auto y = linear(x, a, k);
    std::vector<float> out(y.size());
    for (std::size_t i = 0; i < y.size(); ++i)
      out[i] = static_cast<float>(y[i]) + b[i % k];
    return out;
  };
  const auto reference2 = linear(hidden(w1, b1), w2, k);
  Q::fold_scales_into_previous_linear(w1, k, b1, s);
  Q::scale_weight_columns(w2, k, s);
  EXPECT_LE(max_relative_difference(reference2, linear(hidden(w1, b1), w2, k)), 1e-5);
}

TEST(SmoothQuant, ScalesFollowTheFormulaAndFoldExactly) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t k = 32;
  const std::int64_t n = 16;
  auto x = activations(rng, 64, k, 0.0, 4);
  Q::ChannelStats stats(k);
  stats.add_rows(Q::TensorView(x, {64, k}));
  auto w_q = gaussian(rng, n, k, 0.1f);
  auto w_k = gaussian(rng, n / 2, k, 0.1f);
  const std::vector<Q::TensorView> weights{Q::TensorView(w_q, {n, k}),
                                           Q::TensorView(w_k, {n / 2, k})};
  const auto s = Q::smooth_quant_scales(stats.abs_max(), weights, 0.5);
  for (std::int64_t j = 0; j < k; ++j) {
    double wmax = 0;
    for (std::int64_t r = 0; r < n; ++r)
      wmax = std::max(wmax, double(std::abs(w_q[r * k + j])));
    for (std::int64_t r = 0; r < n / 2; ++r)
      wmax = std::max(wmax, double(std::abs(w_k[r * k + j])));
    const double expected = std::sqrt(double(stats.abs_max()[j])) / std::sqrt(wmax);
    EXPECT_NEAR(s[j], expected, 1e-6 * expected) << "channel " << j;
  }
  // LayerNorm without affine shift (RMSNorm-like γ only) → both Linears.
  std::vector<float> gamma(static_cast<std::size_t>(k), 1.0f);
  const auto out = [&](const std::vector<float>& g, const std::vector<float>& w) {
    std::vector<float> xn(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      xn[i] = g[i % k] * x[i];
    return linear(xn, w, k);
  };
  const auto ref_q = out(gamma, w_q);
  const auto ref_k = out(gamma, w_k);
  Q::fold_scales_into_norm(gamma, {}, s);
  Q::scale_weight_columns(w_q, k, s);
  Q::scale_weight_columns(w_k, k, s);
  EXPECT_LE(max_relative_difference(ref_q, out(gamma, w_q)), 1e-5);
  EXPECT_LE(max_relative_difference(ref_k, out(gamma, w_k)), 1e-5);
  EXPECT_ERROR_CONTAINS(Q::smooth_quant_scales(stats.abs_max(), weights, 1.5), "alpha");
  std::vector<float> short_stats(5, 1.0f);
  EXPECT_ERROR_CONTAINS(Q::smooth_quant_scales(short_stats, weights, 0.5), "expected 5");
}

TEST(Awq, BadStatisticsAreNamed) {
  const auto layer = make_layer(Q::testing::test_seed());
  const Q::TensorView view(layer.w, {layer.n, layer.k});
  std::vector<double> short_mean(10, 1.0);
  EXPECT_ERROR_CONTAINS(Q::awq_quantize(view, layer.h, layer.t, short_mean), "awq mean_abs");
  EXPECT_ERROR_CONTAINS(Q::awq_quantize(view, std::vector<double>(9, 1.0), layer.t, layer.mean_abs),
                        "awq hessian");
  EXPECT_ERROR_CONTAINS(Q::awq_quantize(view, layer.h, 0, layer.mean_abs), "rows is 0");
}
