// Tests of observer_calibrators.hpp: percentile, entropy and MSE observers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "lucid/quantization/metrics.hpp"
#include "lucid/quantization/observer_calibrators.hpp"
#include "lucid/quantization/observer_minmax.hpp"
#include "lucid/quantization/quantize.hpp"
#include "observer_test_data.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::Distribution;
using Q::testing::sample;
using Q::testing::view_of;

namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

std::vector<float> ramp(int n) {  // 0, 1, ..., n - 1
  std::vector<float> x(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    x[static_cast<std::size_t>(i)] = static_cast<float>(i);
  return x;
}

template <class Observer, class Options>
void expect_merge_equals_sequential(const Q::QuantGrid& grid, const Options& options) {
  std::mt19937_64 rng(Q::testing::test_seed());
  Observer sequential(grid, options);
  Observer a(grid, options);
  Observer b(grid, options);
  for (int i = 0; i < 6; ++i) {
    const auto batch =
        sample(rng, i % 2 ? Distribution::laplace : Distribution::normal, 2000, 1.0 + 0.7 * i);
    sequential.observe(view_of(batch));
    (i % 3 == 0 ? a : b).observe(view_of(batch));
  }
  a.merge(b);
  EXPECT_EQ(a.save_state(), sequential.save_state());
  EXPECT_EQ(a.calculate_qparams().scale, sequential.calculate_qparams().scale);
  const auto loaded = Q::load_observer(a.save_state());
  EXPECT_EQ(loaded->calculate_qparams().scale, sequential.calculate_qparams().scale);
  EXPECT_EQ(loaded->calculate_qparams().zero_point, sequential.calculate_qparams().zero_point);
}

}  // namespace

TEST(PercentileObserver, HundredPercentIsMinMax) {
  Q::PercentileObserver obs({}, {.percentile = 100.0});
  const std::vector<float> x{-3.25f, 0.5f, 7.75f, 1.0f};
  obs.observe(view_of(x));
  const Q::ClipRange r = obs.clipping_range();
  EXPECT_EQ(r.min, std::vector<float>{-3.25f});
  EXPECT_EQ(r.max, std::vector<float>{7.75f});
}

TEST(PercentileObserver, ReadsPercentilesOffTheHistogram) {
  // 0 .. 9999 on a dyadic grid of 2048 bins (width 8): P(99) = 9900, P(1) = 100 up to a bin.
  Q::PercentileObserver obs({}, {.percentile = 99.0});
  const auto x = ramp(10000);
  obs.observe(view_of(x));
  const Q::ClipRange r = obs.clipping_range();
  EXPECT_NEAR(r.min[0], 100.0f, 8.0f);
  EXPECT_NEAR(r.max[0], 9900.0f, 8.0f);
  // Symmetric: the 99th percentile of |x|, on both sides.
  Q::PercentileObserver symmetric({.dtype = Q::qint8, .qscheme = Q::per_tensor_symmetric},
                                  {.percentile = 99.0});
  std::vector<float> both = x;
  for (float& v : both)
    v = -v;
  symmetric.observe(view_of(both));
  const Q::ClipRange s = symmetric.clipping_range();
  EXPECT_NEAR(s.max[0], 9900.0f, 8.0f);
  EXPECT_EQ(s.min[0], -s.max[0]);
}

TEST(PercentileObserver, PerChannel) {
  // Channel c holds c * (0 .. 999): its 90th percentile is about 900 c.
  std::vector<float> x;
  for (int i = 0; i < 1000; ++i)
    for (int c = 1; c <= 3; ++c)
      x.push_back(static_cast<float>(c * i));
  Q::PercentileObserver obs({.qscheme = Q::per_channel_affine}, {.percentile = 90.0, .ch_axis = 1});
  obs.observe(Q::TensorView(x.data(), Q::ScalarType::float32, {1000, 3}));
  const Q::ClipRange r = obs.clipping_range();
  ASSERT_EQ(r.max.size(), 3u);
  for (int c = 1; c <= 3; ++c)
    EXPECT_NEAR(r.max[static_cast<std::size_t>(c - 1)], 899.0f * c, 2.0f * c);
  EXPECT_EQ(obs.calculate_qparams().scale.size(), 3u);
}

TEST(PercentileObserver, RejectsBadPercentile) {
  EXPECT_ERROR_CONTAINS(Q::PercentileObserver({}, {.percentile = 40.0}), "percentile = 40");
  EXPECT_ERROR_CONTAINS(Q::PercentileObserver({}, {.percentile = 100.5}), "percentile");
  EXPECT_ERROR_CONTAINS(Q::PercentileObserver({}, {.bins = 1}), "bins = 1");
}

TEST(PercentileObserver, MergeEqualsSequentialObservation) {
  expect_merge_equals_sequential<Q::PercentileObserver>({}, Q::PercentileOptions{});
  expect_merge_equals_sequential<Q::PercentileObserver>(
      {.dtype = Q::qint8, .qscheme = Q::per_tensor_symmetric}, Q::PercentileOptions{.bins = 300});
}

TEST(EntropyObserver, ThresholdInsideTheRangeAndPerTensorOnly) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const auto x = sample(rng, Distribution::laplace, 50000);
  Q::EntropyObserver obs({.dtype = Q::qint8, .qscheme = Q::per_tensor_symmetric});
  obs.observe(view_of(x));
  const Q::ClipRange r = obs.clipping_range();
  const float amax = std::max(-obs.min_val()[0], obs.max_val()[0]);
  EXPECT_GT(r.max[0], 0.0f);
  EXPECT_LT(r.max[0], amax);  // heavy tails are clipped
  EXPECT_EQ(r.min[0], -r.max[0]);
  EXPECT_ERROR_CONTAINS(Q::EntropyObserver({.qscheme = Q::per_channel_symmetric}),
                        "EntropyObserver: qscheme = per_channel_symmetric");
}

TEST(EntropyObserver, AffineRangeStaysInsideTheData) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const auto x = sample(rng, Distribution::relu, 50000);
  Q::EntropyObserver obs;
  obs.observe(view_of(x));
  const Q::ClipRange r = obs.clipping_range();
  EXPECT_EQ(r.min[0], 0.0f);
  EXPECT_GT(r.max[0], 0.0f);
  EXPECT_LE(r.max[0], obs.max_val()[0]);
}

TEST(EntropyObserver, MergeEqualsSequentialObservation) {
  expect_merge_equals_sequential<Q::EntropyObserver>(
      {.dtype = Q::qint8, .qscheme = Q::per_tensor_symmetric}, Q::EntropyOptions{});
}

TEST(MseObserver, BeatsMinMaxOnHeavyTails) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const auto x = sample(rng, Distribution::student_t3, 50000);
  for (const auto scheme : {Q::per_tensor_affine, Q::per_tensor_symmetric}) {
    Q::MseObserver mse({.dtype = Q::qint8, .qscheme = scheme});
    Q::MinMaxObserver minmax({.dtype = Q::qint8, .qscheme = scheme});
    mse.observe(view_of(x));
    minmax.observe(view_of(x));
    const auto view = view_of(x);
    const double mse_error =
        Q::quantization_error(view, Q::fake_quantize(view, mse.calculate_qparams()));
    const double minmax_error =
        Q::quantization_error(view, Q::fake_quantize(view, minmax.calculate_qparams()));
    EXPECT_LT(mse_error, minmax_error) << Q::to_string(scheme);
  }
}

TEST(MseObserver, UniformDataKeepsNearlyTheWholeRange) {
  // On uniform data clipping only adds error: the search stays within a step of min / max.
  std::mt19937_64 rng(Q::testing::test_seed());
  const auto x = sample(rng, Distribution::uniform, 50000);
  Q::MseObserver obs;
  obs.observe(view_of(x));
  const Q::ClipRange r = obs.clipping_range();
  EXPECT_NEAR(r.max[0], obs.max_val()[0], 0.02f);
  EXPECT_NEAR(r.min[0], obs.min_val()[0], 0.02f);
}

TEST(MseObserver, PerChannelAndMerge) {
  std::vector<float> x;
  std::mt19937_64 rng(Q::testing::test_seed());
  for (int c = 0; c < 4; ++c) {
    const auto channel = sample(rng, Distribution::laplace, 3000, 1.0 + c);
    x.insert(x.end(), channel.begin(), channel.end());
  }
  Q::MseObserver obs({.dtype = Q::qint8, .qscheme = Q::per_channel_symmetric}, {.ch_axis = 0});
  obs.observe(Q::TensorView(x.data(), Q::ScalarType::float32, {4, 3000}));
  const Q::QParams q = obs.calculate_qparams();
  ASSERT_EQ(q.scale.size(), 4u);
  EXPECT_LT(q.scale[0], q.scale[3]);
  expect_merge_equals_sequential<Q::MseObserver>({}, Q::MseOptions{.bins = 1024});
}

TEST(HistogramCalibrators, NonFiniteEmptyAndNoData) {
  Q::MseObserver obs;
  EXPECT_ERROR_CONTAINS(obs.calculate_qparams(), "MseObserver.calculate_qparams: no finite value");
  const std::vector<float> none;
  obs.observe(view_of(none));
  const std::vector<float> x{kNan, 1.0f, -2.0f, kNan};
  obs.observe(view_of(x));
  EXPECT_EQ(obs.nonfinite_count(), 2);
  EXPECT_EQ(obs.count(), 2);
  const std::string state = obs.save_state();
  obs.observe(view_of(none));
  EXPECT_EQ(obs.save_state(), state);
  obs.reset();
  EXPECT_EQ(obs.count(), 0);
  EXPECT_ERROR_CONTAINS(obs.calculate_qparams(), "no finite value");
}

TEST(HistogramCalibrators, ExtremeValuesStayInsideTheGrid) {
  const float big = std::numeric_limits<float>::max();
  const float tiny = std::numeric_limits<float>::denorm_min();
  const std::vector<std::vector<float>> batches = {
      {-tiny, tiny, -0.0f},
      {1e-30f, -1e-30f, 3.0f},
      {big, -big},
  };
  Q::PercentileObserver percentile;
  Q::EntropyObserver entropy;
  Q::MseObserver mse({.dtype = Q::qint8, .qscheme = Q::per_tensor_symmetric});
  for (const auto& b : batches) {
    for (Q::Observer* obs : std::initializer_list<Q::Observer*>{&percentile, &entropy, &mse}) {
      obs->observe(view_of(b));
      const Q::QParams q = obs->calculate_qparams();
      EXPECT_TRUE(std::isfinite(q.scale[0]) && q.scale[0] > 0.0f) << obs->name();
    }
  }
  EXPECT_EQ(mse.count(), 8);
}
