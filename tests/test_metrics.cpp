// Tests for error metrics: definitions, edge cases, per-channel, non-finite input.
#include <gtest/gtest.h>

#include <cmath>

#include "lucid/quantization.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

TEST(Metrics, Definitions) {
  const std::vector<float> x{1.0f, -2.0f, 3.0f, 0.0f};
  const std::vector<float> y{1.5f, -2.0f, 2.0f, 0.0f};
  const Q::ErrorMetrics m = Q::error_metrics(Q::TensorView(x), Q::TensorView(y));
  EXPECT_EQ(m.count, 4);
  EXPECT_DOUBLE_EQ(m.mse, (0.25 + 0 + 1) / 4);
  EXPECT_DOUBLE_EQ(m.rmse, std::sqrt(1.25 / 4));
  EXPECT_DOUBLE_EQ(m.max_abs_error, 1.0);
  EXPECT_DOUBLE_EQ(m.sqnr_db, 10 * std::log10(14.0 / 1.25));
  EXPECT_DOUBLE_EQ(m.cosine_similarity, (1.5 + 4 + 6) / std::sqrt(14.0 * (2.25 + 4 + 4)));
  EXPECT_DOUBLE_EQ(Q::quantization_error(Q::TensorView(x), Q::TensorView(y)), 1.25 / 4);
}

TEST(Metrics, EdgeCases) {
  const std::vector<float> zeros(3, 0.0f);
  const Q::ErrorMetrics same = Q::error_metrics(Q::TensorView(zeros), Q::TensorView(zeros));
  EXPECT_TRUE(std::isinf(same.sqnr_db));
  EXPECT_EQ(same.cosine_similarity, 1.0);
  const std::vector<float> ones(3, 1.0f);
  EXPECT_EQ(Q::error_metrics(Q::TensorView(ones), Q::TensorView(zeros)).cosine_similarity, 0.0);
  const std::vector<float> none;
  const Q::ErrorMetrics empty =
      Q::error_metrics(Q::TensorView(none.data(), Q::ScalarType::float32, {0}),
                       Q::TensorView(none.data(), Q::ScalarType::float32, {0}));
  EXPECT_EQ(empty.count, 0);
  EXPECT_EQ(empty.mse, 0.0);
  EXPECT_ERROR_CONTAINS(Q::error_metrics(Q::TensorView(ones),
                                         Q::TensorView(none.data(), Q::ScalarType::float32, {0})),
                        "original shape [3] differs");
}

TEST(Metrics, NonFiniteOriginalsAreCountedAndLeftOut) {
  const std::vector<float> x{1.0f, NAN, INFINITY, 2.0f};
  const auto q = Q::quantize(Q::TensorView(x), Q::per_tensor_affine, Q::quint8);
  const Q::ErrorMetrics m = Q::error_metrics(Q::TensorView(x), q);
  EXPECT_EQ(m.count, 2);
  EXPECT_EQ(m.nonfinite_count, 2);
  EXPECT_TRUE(std::isfinite(m.mse));
  EXPECT_LT(m.max_abs_error, q.qparams().scale[0]);
}

TEST(Metrics, PerChannelSeparatesChannels) {
  // Row 0 is small, row 1 large: per-tensor quantization hurts row 0 far more.
  const std::vector<float> x{0.01f, -0.02f, 0.03f, 10.0f, -20.0f, 30.0f};
  const Q::TensorView view(x, {2, 3});
  const auto per_tensor = Q::quantize(view, Q::per_tensor_symmetric, Q::qint8);
  const auto per_channel = Q::quantize(view, Q::per_channel_symmetric, Q::qint8, 0);
  const auto a = Q::error_metrics_per_channel(view, per_tensor, 0);
  const auto b = Q::error_metrics_per_channel(view, per_channel, 0);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].count, 3);
  EXPECT_GT(b[0].sqnr_db, a[0].sqnr_db + 20);
  EXPECT_EQ(Q::error_metrics_per_channel(view, per_channel, 1).size(), 3u);
  EXPECT_ERROR_CONTAINS(Q::error_metrics_per_channel(view, per_channel, 2), "axis = 2");
}

TEST(Metrics, FractionSaturatedCountsClampedCodes) {
  const std::vector<float> x{-300.0f, 0.0f, 1.0f, 300.0f};
  const auto q = Q::quantize(Q::TensorView(x), Q::QParams::per_tensor(1.0f, 0, Q::qint8));
  EXPECT_DOUBLE_EQ(Q::error_metrics(Q::TensorView(x), q).fraction_saturated, 0.5);
}
