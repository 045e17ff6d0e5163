// HessianAccumulator and ChannelStats: streaming and merging equal the one-shot sums; bad
// calibration data is named.
#include "lucid/quantization/channel_stats.hpp"
#include "lucid/quantization/hessian.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "algorithm_test_data.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::gaussian;

TEST(Hessian, StreamedAndMergedEqualTheDirectSum) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t k = 37;
  const std::int64_t t = 101;
  const auto x = gaussian(rng, t, k);
  std::vector<double> direct(static_cast<std::size_t>(k * k), 0.0);
  for (std::int64_t r = 0; r < t; ++r) {
    for (std::int64_t a = 0; a < k; ++a) {
      for (std::int64_t b = 0; b < k; ++b) {
        direct[a * k + b] += static_cast<double>(x[r * k + a]) * x[r * k + b];
      }
    }
  }
  Q::HessianAccumulator first(k);
  Q::HessianAccumulator second(k);
  first.add_rows(Q::TensorView(x.data(), Q::ScalarType::float32, {40, k}));
  second.add_rows(Q::TensorView(x.data() + 40 * k, Q::ScalarType::float32, {1, k}));
  second.add_rows(Q::TensorView(x.data() + 41 * k, Q::ScalarType::float32, {t - 41, k}));
  first.merge(second);
  EXPECT_EQ(first.rows(), t);
  const auto sum = first.sum();
  for (std::size_t i = 0; i < sum.size(); ++i) {
    EXPECT_NEAR(sum[i], direct[i], 1e-12 * (1 + std::abs(direct[i]))) << "entry " << i;
  }
  const auto moments = first.second_moments();
  for (std::int64_t j = 0; j < k; ++j) {
    EXPECT_NEAR(moments[j], direct[j * k + j] / t, 1e-12 * (1 + direct[j * k + j]));
  }
}

TEST(Hessian, BadCalibrationDataIsNamed) {
  Q::HessianAccumulator acc(4);
  std::vector<float> x{1, 2, 3, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_ERROR_CONTAINS(acc.add_rows(Q::TensorView(x, {1, 4})), "calibration element 3");
  EXPECT_EQ(acc.rows(), 0);
  std::vector<float> wrong(6, 1.0f);
  EXPECT_ERROR_CONTAINS(acc.add_rows(Q::TensorView(wrong, {2, 3})), "expected the layer's 4");
  Q::HessianAccumulator other(5);
  EXPECT_ERROR_CONTAINS(acc.merge(other), "5 features, expected 4");
  EXPECT_ERROR_CONTAINS(Q::HessianAccumulator(2, {1, 2, 3, 1}, 1), "not symmetric");
  EXPECT_ERROR_CONTAINS(Q::HessianAccumulator(2, {1, 0, 0}, 1), "expected 2x2");
}

TEST(ChannelStats, StreamedAndMergedEqualTheDirectStatistics) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t k = 9;
  const auto x = gaussian(rng, 30, k);
  Q::ChannelStats a(k);
  Q::ChannelStats b(k);
  a.add_rows(Q::TensorView(x.data(), Q::ScalarType::float32, {12, k}));
  b.add_rows(Q::TensorView(x.data() + 12 * k, Q::ScalarType::float32, {18, k}));
  a.merge(b);
  ASSERT_EQ(a.rows(), 30);
  for (std::int64_t j = 0; j < k; ++j) {
    float amax = 0;
    double abs_sum = 0;
    double sq = 0;
    for (std::int64_t r = 0; r < 30; ++r) {
      const float v = x[r * k + j];
      amax = std::max(amax, std::abs(v));
      abs_sum += std::abs(v);
      sq += static_cast<double>(v) * v;
    }
    EXPECT_EQ(a.abs_max()[j], amax);
    EXPECT_NEAR(a.mean_abs()[j], abs_sum / 30, 1e-12);
    EXPECT_NEAR(a.second_moments()[j], sq / 30, 1e-12);
  }
  std::vector<float> bad{1, std::numeric_limits<float>::infinity(), 0, 0, 0, 0, 0, 0, 0};
  EXPECT_ERROR_CONTAINS(a.add_rows(Q::TensorView(bad, {1, 9})), "calibration element 1");
}
