// Tests for error metrics: definitions, edge cases, per-channel, per-group, non-finite input.
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

TEST(Metrics, PerGroupMatchesEachGroupAlone) {
  // [2, 8] cut along axis 1 into groups of 4: parameters [2, 2], slot = row · 2 + column / 4.
  const std::vector<float> x{0.1f, -0.2f, 0.3f, 0.4f, 1.0f, 2.0f,  -3.0f, 40.0f,
                             0.5f, NAN,   0.7f, 0.0f, 5.0f, -6.0f, 7.0f,  8.0f};
  const Q::TensorView view(x, {2, 8});
  const auto qp = Q::QParams::per_group({0.01f, 0.1f, 0.05f, 1.0f}, {0, 0, 0, 0}, 1, 4, Q::qint8);
  const auto q = Q::quantize(view, qp);
  const Q::Tensor y = Q::dequantize(q);
  const auto groups = Q::error_metrics_per_group(view, q);
  ASSERT_EQ(groups.size(), 4u);
  for (std::size_t s = 0; s < 4; ++s) {
    const std::size_t first = (s / 2) * 8 + (s % 2) * 4;
    const std::vector<float> xs(x.begin() + first, x.begin() + first + 4);
    const std::vector<float> ys(y.data_as<float>() + first, y.data_as<float>() + first + 4);
    const Q::ErrorMetrics alone = Q::error_metrics(Q::TensorView(xs), Q::TensorView(ys));
    EXPECT_EQ(groups[s].count, alone.count) << "group " << s;
    EXPECT_EQ(groups[s].nonfinite_count, alone.nonfinite_count) << "group " << s;
    EXPECT_DOUBLE_EQ(groups[s].mse, alone.mse) << "group " << s;
    EXPECT_DOUBLE_EQ(groups[s].max_abs_error, alone.max_abs_error) << "group " << s;
    EXPECT_DOUBLE_EQ(groups[s].sqnr_db, alone.sqnr_db) << "group " << s;
    EXPECT_DOUBLE_EQ(groups[s].cosine_similarity, alone.cosine_similarity) << "group " << s;
  }
  EXPECT_EQ(groups[2].nonfinite_count, 1);               // the NaN of row 1
  EXPECT_DOUBLE_EQ(groups[1].fraction_saturated, 0.25);  // 40 / 0.1 = 400 leaves qint8
  EXPECT_DOUBLE_EQ(groups[0].fraction_saturated, 0.0);
  EXPECT_ERROR_CONTAINS(Q::error_metrics_per_group(Q::TensorView(x), q), "differs");
}

TEST(Metrics, PerGroupOfPerTensorAndPerChannelParameters) {
  const std::vector<float> x{0.01f, -0.02f, 0.03f, 10.0f, -20.0f, 30.0f};
  const Q::TensorView view(x, {2, 3});
  const auto per_tensor = Q::quantize(view, Q::per_tensor_affine, Q::quint8);
  const auto one = Q::error_metrics_per_group(view, per_tensor);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_DOUBLE_EQ(one[0].mse, Q::error_metrics(view, per_tensor).mse);
  const auto per_channel = Q::quantize(view, Q::per_channel_symmetric, Q::qint8, 0);
  const auto rows = Q::error_metrics_per_group(view, per_channel);
  const auto channels = Q::error_metrics_per_channel(view, per_channel, 0);
  ASSERT_EQ(rows.size(), 2u);
  for (std::size_t c = 0; c < 2; ++c) {
    EXPECT_EQ(rows[c].count, channels[c].count);
    EXPECT_DOUBLE_EQ(rows[c].sqnr_db, channels[c].sqnr_db);
  }
}
