// HQQ never ends above its min-max start; importance-weighted RTN never above RTN's weighted error.
#include "lucid/quantization/hqq.hpp"
#include "lucid/quantization/weighted_rtn.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>

#include "algorithm_test_data.hpp"
#include "lucid/quantization/weight_grid.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::gaussian;

namespace {

// Heavy-tailed weights: Gaussian with 1 % of entries ×8.
std::vector<float> heavy_tailed(std::mt19937_64& rng, std::int64_t n, std::int64_t k) {
  auto w = gaussian(rng, n, k, 0.02f);
  std::uniform_real_distribution<float> u(0, 1);
  for (float& v : w) {
    if (u(rng) < 0.01f) v *= 8;
  }
  return w;
}

double mean_abs_error(const std::vector<float>& w, const Q::QuantizedTensor& q) {
  const auto d = Q::dequantize(q);
  double e = 0;
  for (std::size_t i = 0; i < w.size(); ++i)
    e += std::abs(double(w[i]) - d.data_as<float>()[i]);
  return e / static_cast<double>(w.size());
}

}  // namespace

TEST(Hqq, NeverEndsAboveItsMinMaxStart) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 64;
  const std::int64_t k = 256;
  const auto w = heavy_tailed(rng, n, k);
  const Q::TensorView view(w, {n, k});
  for (const Q::WeightGrid grid :
       {Q::WeightGrid{Q::quint4, false, 64}, Q::WeightGrid{Q::quint4, false, 128},
        Q::WeightGrid{Q::quint2, false, 32}, Q::WeightGrid{Q::quint4, false, 0},
        Q::WeightGrid{Q::quint8, false, 64}}) {
    Q::HqqOptions options;
    options.grid = grid;
    const auto result = Q::hqq_quantize(view, options);
    const double rtn = mean_abs_error(w, Q::quantize_rtn(view, grid));
    std::cout << "[ hqq ] " << grid.qdtype.name() << " g" << grid.group_size
              << ": mean |W - W_hat| RTN " << rtn << ", HQQ " << result.final_abs_error << "\n";
    EXPECT_NEAR(result.start_abs_error, rtn, 1e-12);
    EXPECT_LE(result.final_abs_error, result.start_abs_error);
    EXPECT_NEAR(mean_abs_error(w, result.quantized), result.final_abs_error, 1e-12);
    // Same scales as the start: without the scale search HQQ only moves zero points.
    EXPECT_EQ(result.quantized.qparams().scale, Q::quantize_rtn(view, grid).qparams().scale);
  }
  Q::HqqOptions symmetric;
  symmetric.grid = {Q::qint4, true, 64};
  EXPECT_ERROR_CONTAINS(Q::hqq_quantize(view, symmetric), "expected an affine grid");
}

TEST(Hqq, ScaleSearchImprovesHeavyTailedFourBitGroups) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const auto w = heavy_tailed(rng, 128, 256);
  const auto published = Q::hqq_quantize(Q::TensorView(w, {128, 256}));
  Q::HqqOptions options;
  options.scale_search_steps = 5;
  const auto searched = Q::hqq_quantize(Q::TensorView(w, {128, 256}), options);
  std::cout << "[ hqq ] quint4 g64 heavy-tailed: mean |W - W_hat| min-max "
            << published.start_abs_error << ", HQQ (published defaults) "
            << published.final_abs_error << ", with scale search " << searched.final_abs_error
            << "\n";
  EXPECT_LE(searched.final_abs_error, published.final_abs_error);
  EXPECT_LT(searched.final_abs_error, 0.99 * searched.start_abs_error);
}

TEST(WeightedRtn, NeverAboveRtnsWeightedError) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t n = 32;
  const std::int64_t k = 192;
  const auto w = heavy_tailed(rng, n, k);
  std::vector<double> importance(static_cast<std::size_t>(k));
  std::exponential_distribution<double> expo(1.0);
  for (double& v : importance)
    v = expo(rng);
  importance[3] = 0;  // a channel that never fires
  const Q::TensorView view(w, {n, k});
  const auto weighted_error = [&](const Q::QuantizedTensor& q) {
    const auto d = Q::dequantize(q);
    double e = 0;
    for (std::int64_t i = 0; i < n * k; ++i) {
      e += importance[i % k] * std::pow(double(w[i]) - d.data_as<float>()[i], 2);
    }
    return e;
  };
  for (const Q::WeightGrid grid :
       {Q::WeightGrid{Q::qint4, true, 32}, Q::WeightGrid{Q::quint4, false, 64},
        Q::WeightGrid{Q::qint4, true, 0}}) {
    const double rtn = weighted_error(Q::quantize_rtn(view, grid));
    const double ours = weighted_error(Q::quantize_weighted_rtn(view, importance, grid));
    std::cout << "[ weighted rtn ] " << grid.qdtype.name() << " g" << grid.group_size
              << ": weighted error RTN " << rtn << ", importance-weighted " << ours << "\n";
    EXPECT_LE(ours, rtn * (1 + 1e-12));
    EXPECT_LT(ours, rtn);
  }
  std::vector<double> negative(importance);
  negative[0] = -1;
  EXPECT_ERROR_CONTAINS(Q::quantize_weighted_rtn(view, negative, {}), "entry 0");
  EXPECT_ERROR_CONTAINS(Q::quantize_weighted_rtn(view, std::vector<double>(5, 1.0), {}),
                        "expected 192");
}
