// Tests of observer_minmax.hpp: MinMax / MovingAverage observers, per tensor and per channel.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "lucid/quantization/observer.hpp"
#include "lucid/quantization/observer_minmax.hpp"
#include "lucid/quantization/observer_passthrough.hpp"
#include "observer_test_data.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::Distribution;
using Q::testing::sample;
using Q::testing::view_of;

namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

void expect_same_qparams(const Q::QParams& a, const Q::QParams& b) {
  EXPECT_EQ(a.qscheme, b.qscheme);
  EXPECT_EQ(a.qdtype, b.qdtype);
  EXPECT_EQ(a.scale, b.scale);
  EXPECT_EQ(a.zero_point, b.zero_point);
  EXPECT_EQ(a.ch_axis, b.ch_axis);
}

}  // namespace

TEST(MinMaxObserver, TracksRunningMinMaxAndUsesCoreFormula) {
  Q::MinMaxObserver obs;
  const std::vector<float> a{0.5f, -1.25f, 3.0f};
  const std::vector<float> b{7.5f, 2.0f};
  obs.observe(view_of(a));
  obs.observe(view_of(b));
  EXPECT_EQ(obs.min_val(), std::vector<float>{-1.25f});
  EXPECT_EQ(obs.max_val(), std::vector<float>{7.5f});
  EXPECT_EQ(obs.count(), 5);
  expect_same_qparams(obs.calculate_qparams(),
                      Q::calculate_qparams(-1.25f, 7.5f, Q::per_tensor_affine, Q::quint8));
}

TEST(MinMaxObserver, SymmetricSignedGrid) {
  Q::MinMaxObserver obs({.dtype = Q::qint8, .qscheme = Q::per_tensor_symmetric});
  const std::vector<float> x{-2.54f, 1.0f};
  obs.observe(view_of(x));
  const Q::QParams q = obs.calculate_qparams();
  EXPECT_EQ(q.zero_point, Q::ParamArray<std::int32_t>{0});
  EXPECT_FLOAT_EQ(q.scale[0], 2.54f / 127.5f);
}

TEST(MinMaxObserver, ReduceRangeHalvesTheGrid) {
  EXPECT_EQ(Q::MinMaxObserver({.dtype = Q::qint8, .reduce_range = true}).qdtype(),
            Q::qint8.with_range(-64, 63));
  EXPECT_EQ(Q::MinMaxObserver({.dtype = Q::quint8, .reduce_range = true}).qdtype(),
            Q::quint8.with_range(0, 127));
  // Custom bounds are halved with floor division, as PyTorch's calculate_qmin_qmax does.
  EXPECT_EQ(Q::MinMaxObserver(
                {.dtype = Q::qint8, .reduce_range = true, .quant_min = -127, .quant_max = 127})
                .qdtype(),
            Q::qint8.with_range(-64, 63));
}

TEST(MinMaxObserver, QuantRangeOverride) {
  Q::MinMaxObserver obs({.dtype = Q::quint8, .quant_min = 0, .quant_max = 127});
  EXPECT_EQ(obs.qdtype(), Q::quint8.with_range(0, 127));
  const std::vector<float> x{-1.0f, 3.0f};
  obs.observe(view_of(x));
  EXPECT_FLOAT_EQ(obs.calculate_qparams().scale[0], 4.0f / 127.0f);
}

TEST(MinMaxObserver, RejectsBadConfigurations) {
  EXPECT_ERROR_CONTAINS(Q::MinMaxObserver({.qscheme = Q::per_channel_affine}),
                        "MinMaxObserver: qscheme = per_channel_affine");
  EXPECT_ERROR_CONTAINS(Q::MinMaxObserver({.quant_min = 0}), "quant_min and quant_max");
  EXPECT_ERROR_CONTAINS(
      Q::MinMaxObserver(
          {.dtype = Q::quint8, .qscheme = Q::per_tensor_symmetric, .reduce_range = true}),
      "reduce_range");
  EXPECT_ERROR_CONTAINS(Q::MinMaxObserver({.quant_min = 1, .quant_max = 10}), "MinMaxObserver:");
  EXPECT_ERROR_CONTAINS(Q::MinMaxObserver({.eps = 0.0f}), "eps");
}

TEST(MinMaxObserver, SkipsAndCountsNonFinite) {
  Q::MinMaxObserver obs;
  const std::vector<float> x{kNan, 1.0f, -kInf, -2.0f, kInf};
  obs.observe(view_of(x));
  EXPECT_EQ(obs.nonfinite_count(), 3);
  EXPECT_EQ(obs.count(), 2);
  EXPECT_EQ(obs.min_val(), std::vector<float>{-2.0f});
  EXPECT_EQ(obs.max_val(), std::vector<float>{1.0f});
}

TEST(MinMaxObserver, NoDataIsAClearError) {
  Q::MinMaxObserver obs;
  EXPECT_ERROR_CONTAINS(obs.calculate_qparams(), "no finite value observed yet");
  const std::vector<float> nans{kNan, kInf};
  obs.observe(view_of(nans));
  EXPECT_ERROR_CONTAINS(obs.calculate_qparams(), "2 non-finite skipped");
}

TEST(MinMaxObserver, EmptyBatchChangesNothing) {
  Q::MinMaxObserver obs;
  const std::vector<float> none;
  obs.observe(view_of(none));
  EXPECT_EQ(obs.count(), 0);
  EXPECT_TRUE(obs.min_val().empty());
  const std::vector<float> x{1.0f, 2.0f};
  obs.observe(view_of(x));
  const std::string before = obs.save_state();
  obs.observe(view_of(none));
  EXPECT_EQ(obs.save_state(), before);
}

TEST(MinMaxObserver, MergeEqualsSequentialObservation) {
  std::mt19937_64 rng(Q::testing::test_seed());
  Q::MinMaxObserver sequential({.dtype = Q::qint8});
  Q::MinMaxObserver shard_a({.dtype = Q::qint8});
  Q::MinMaxObserver shard_b({.dtype = Q::qint8});
  for (int i = 0; i < 6; ++i) {
    const auto batch = sample(rng, Distribution::normal, 500, 1.0 + i);
    sequential.observe(view_of(batch));
    (i % 2 ? shard_a : shard_b).observe(view_of(batch));
  }
  shard_a.merge(shard_b);
  EXPECT_EQ(shard_a.min_val(), sequential.min_val());
  EXPECT_EQ(shard_a.max_val(), sequential.max_val());
  EXPECT_EQ(shard_a.count(), sequential.count());
  expect_same_qparams(shard_a.calculate_qparams(), sequential.calculate_qparams());
}

TEST(MinMaxObserver, MergeChecksClassAndConfiguration) {
  Q::MinMaxObserver obs;
  EXPECT_ERROR_CONTAINS(obs.merge(Q::MinMaxObserver({.dtype = Q::qint8})), "configuration");
  EXPECT_ERROR_CONTAINS(obs.merge(Q::MovingAverageMinMaxObserver()),
                        "other is a MovingAverageMinMaxObserver");
  EXPECT_ERROR_CONTAINS(obs.merge(Q::NoopObserver()), "other is a NoopObserver");
}

TEST(MinMaxObserver, HalfAndBfloat16InputsWidenExactly) {
  const std::vector<float> values{-3.5f, 0.125f, 6.0f, 1.75f};
  std::vector<std::uint16_t> half;
  std::vector<std::uint16_t> brain;
  for (const float v : values) {
    half.push_back(Q::float_to_float16(v));
    brain.push_back(Q::float_to_bfloat16(v));
  }
  for (const auto& [bits, type] :
       {std::pair{&half, Q::ScalarType::float16}, std::pair{&brain, Q::ScalarType::bfloat16}}) {
    Q::MinMaxObserver obs;
    obs.observe(Q::TensorView(bits->data(), type, {2, 2}));
    EXPECT_EQ(obs.min_val(), std::vector<float>{-3.5f});
    EXPECT_EQ(obs.max_val(), std::vector<float>{6.0f});
  }
  const std::vector<std::int32_t> ints{1, 2};
  Q::MinMaxObserver obs;
  EXPECT_ERROR_CONTAINS(obs.observe(Q::TensorView(ints.data(), Q::ScalarType::int32, {2})),
                        "expected float32, float16, bfloat16 or float64");
}

TEST(MinMaxObserver, StateRoundTripGivesIdenticalQParams) {
  std::mt19937_64 rng(Q::testing::test_seed());
  Q::MinMaxObserver obs({.dtype = Q::qint8, .qscheme = Q::per_tensor_symmetric, .eps = 1e-6f});
  const auto batch = sample(rng, Distribution::student_t3, 1000, 0.37);
  obs.observe(view_of(batch));
  const std::string state = obs.save_state();
  Q::MinMaxObserver loaded;
  loaded.load_state(state);
  EXPECT_EQ(loaded.grid(), obs.grid());
  EXPECT_EQ(loaded.save_state(), state);
  expect_same_qparams(loaded.calculate_qparams(), obs.calculate_qparams());
  const auto rebuilt = Q::load_observer(state);
  EXPECT_EQ(rebuilt->name(), "MinMaxObserver");
  expect_same_qparams(rebuilt->calculate_qparams(), obs.calculate_qparams());
}

TEST(MinMaxObserver, LoadStateRejectsBadText) {
  Q::MinMaxObserver obs;
  EXPECT_ERROR_CONTAINS(obs.load_state("{not json"), "not a JSON object");
  EXPECT_ERROR_CONTAINS(obs.load_state(Q::MovingAverageMinMaxObserver().save_state()),
                        "expected a MinMaxObserver");
  std::string state = obs.save_state();
  state.replace(state.find("\"version\":1"), 11, "\"version\":9");
  EXPECT_ERROR_CONTAINS(obs.load_state(state), "version = 9");
  EXPECT_ERROR_CONTAINS(Q::load_observer(R"({"observer":"Bogus"})"), "observer = \"Bogus\"");
}

TEST(MovingAverageMinMaxObserver, FirstBatchSetsLaterOnesAverageInFloat32) {
  const float c = 0.01f;
  Q::MovingAverageMinMaxObserver obs({}, c);
  const std::vector<float> first{-1.0f, 2.0f};
  const std::vector<float> second{-5.0f, 10.0f};
  obs.observe(view_of(first));
  obs.observe(view_of(second));
  const float expected_min = -1.0f + c * (-5.0f - -1.0f);
  const float expected_max = 2.0f + c * (10.0f - 2.0f);
  EXPECT_EQ(obs.min_val(), std::vector<float>{expected_min});
  EXPECT_EQ(obs.max_val(), std::vector<float>{expected_max});
  EXPECT_EQ(obs.batch_count(), 2);
}

TEST(MovingAverageMinMaxObserver, BatchWithoutFiniteValuesIsSkipped) {
  Q::MovingAverageMinMaxObserver obs;
  const std::vector<float> x{1.0f, 3.0f};
  const std::vector<float> nans{kNan, kNan};
  obs.observe(view_of(x));
  obs.observe(view_of(nans));
  EXPECT_EQ(obs.batch_count(), 1);
  EXPECT_EQ(obs.max_val(), std::vector<float>{3.0f});
  EXPECT_EQ(obs.nonfinite_count(), 2);
}

TEST(MovingAverageMinMaxObserver, MergeTakesBatchWeightedMean) {
  Q::MovingAverageMinMaxObserver a;
  Q::MovingAverageMinMaxObserver b;
  const std::vector<float> x{-1.0f, 1.0f};
  const std::vector<float> y{-4.0f, 7.0f};
  a.observe(view_of(x));
  a.observe(view_of(x));
  a.observe(view_of(x));
  b.observe(view_of(y));
  a.merge(b);
  EXPECT_EQ(a.batch_count(), 4);
  EXPECT_FLOAT_EQ(a.min_val()[0], (3 * -1.0f + -4.0f) / 4);
  EXPECT_FLOAT_EQ(a.max_val()[0], (3 * 1.0f + 7.0f) / 4);
  EXPECT_ERROR_CONTAINS(a.merge(Q::MovingAverageMinMaxObserver({}, 0.5f)), "averaging_constant");
  EXPECT_ERROR_CONTAINS(Q::MovingAverageMinMaxObserver({}, 0.0f), "averaging_constant = 0");
}

TEST(MovingAverageMinMaxObserver, StateRoundTrip) {
  Q::MovingAverageMinMaxObserver obs({.dtype = Q::qint8}, 0.25f);
  const std::vector<float> x{-1.5f, 2.25f};
  const std::vector<float> y{-3.0f, 0.5f};
  obs.observe(view_of(x));
  obs.observe(view_of(y));
  const auto loaded = Q::load_observer(obs.save_state());
  const auto& typed = dynamic_cast<const Q::MovingAverageMinMaxObserver&>(*loaded);
  EXPECT_EQ(typed.averaging_constant(), 0.25f);
  EXPECT_EQ(typed.batch_count(), 2);
  expect_same_qparams(typed.calculate_qparams(), obs.calculate_qparams());
}

TEST(PerChannelMinMaxObserver, AnyAxisIncludingNegative) {
  // x[o][c][i] = 100 * c + 10 * o + i: channel c along axis 1 spans [100 c, 100 c + 13].
  std::vector<float> x(2 * 3 * 4);
  for (int o = 0; o < 2; ++o)
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 4; ++i)
        x[static_cast<std::size_t>((o * 3 + c) * 4 + i)] = static_cast<float>(100 * c + 10 * o + i);
  const Q::TensorView view(x.data(), Q::ScalarType::float32, {2, 3, 4});
  Q::PerChannelMinMaxObserver middle({.dtype = Q::qint8, .qscheme = Q::per_channel_symmetric}, 1);
  middle.observe(view);
  EXPECT_EQ(middle.min_val(), (std::vector<float>{0, 100, 200}));
  EXPECT_EQ(middle.max_val(), (std::vector<float>{13, 113, 213}));
  Q::PerChannelMinMaxObserver last({.qscheme = Q::per_channel_affine}, -1);
  last.observe(view);
  EXPECT_EQ(last.min_val(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(last.max_val(), (std::vector<float>{210, 211, 212, 213}));
  const Q::QParams q = middle.calculate_qparams();
  EXPECT_EQ(q.ch_axis, 1);
  EXPECT_EQ(q.scale.size(), 3u);
  EXPECT_FLOAT_EQ(q.scale[2], 213.0f / 127.5f);
}

TEST(PerChannelMinMaxObserver, ChannelCountIsFixedByTheFirstBatch) {
  Q::PerChannelMinMaxObserver obs;
  const std::vector<float> x(6, 1.0f);
  obs.observe(Q::TensorView(x.data(), Q::ScalarType::float32, {3, 2}));
  EXPECT_ERROR_CONTAINS(obs.observe(Q::TensorView(x.data(), Q::ScalarType::float32, {2, 3})),
                        "2 channels along ch_axis (expected 3");
  EXPECT_ERROR_CONTAINS(
      Q::PerChannelMinMaxObserver({.qscheme = Q::per_channel_affine}, 5).observe(view_of(x)),
      "ch_axis");
  EXPECT_ERROR_CONTAINS(Q::PerChannelMinMaxObserver({.qscheme = Q::per_tensor_affine}),
                        "expected per_channel_affine or per_channel_symmetric");
}

TEST(PerChannelMinMaxObserver, ChannelWithoutFiniteValuesGetsEps) {
  Q::PerChannelMinMaxObserver obs({.qscheme = Q::per_channel_affine}, 0);
  const std::vector<float> x{kNan, kInf, -1.0f, 2.0f};
  obs.observe(Q::TensorView(x.data(), Q::ScalarType::float32, {2, 2}));
  EXPECT_EQ(obs.nonfinite_count(), 2);
  const Q::QParams q = obs.calculate_qparams();
  EXPECT_EQ(q.scale[0], Q::default_eps);
  EXPECT_FLOAT_EQ(q.scale[1], 3.0f / 255.0f);
}

TEST(PerChannelMinMaxObserver, MergeEqualsSequentialObservation) {
  std::mt19937_64 rng(Q::testing::test_seed());
  Q::PerChannelMinMaxObserver sequential({.qscheme = Q::per_channel_affine}, 1);
  Q::PerChannelMinMaxObserver a({.qscheme = Q::per_channel_affine}, 1);
  Q::PerChannelMinMaxObserver b({.qscheme = Q::per_channel_affine}, 1);
  for (int i = 0; i < 5; ++i) {
    const auto batch = sample(rng, Distribution::laplace, 8 * 5, 1.0 + i);
    const Q::TensorView view(batch.data(), Q::ScalarType::float32, {8, 5});
    sequential.observe(view);
    (i < 2 ? a : b).observe(view);
  }
  a.merge(b);
  EXPECT_EQ(a.min_val(), sequential.min_val());
  EXPECT_EQ(a.max_val(), sequential.max_val());
  expect_same_qparams(a.calculate_qparams(), sequential.calculate_qparams());
  const auto loaded = Q::load_observer(a.save_state());
  expect_same_qparams(loaded->calculate_qparams(), sequential.calculate_qparams());
}

TEST(MovingAveragePerChannelMinMaxObserver, AveragesEachChannelInFloat32) {
  const float c = 0.125f;
  Q::MovingAveragePerChannelMinMaxObserver obs({.qscheme = Q::per_channel_affine}, 0, c);
  const std::vector<float> first{-1.0f, 1.0f, -2.0f, 2.0f};
  const std::vector<float> second{-3.0f, 5.0f, kNan, kNan};
  obs.observe(Q::TensorView(first.data(), Q::ScalarType::float32, {2, 2}));
  obs.observe(Q::TensorView(second.data(), Q::ScalarType::float32, {2, 2}));
  EXPECT_EQ(obs.min_val()[0], -1.0f + c * (-3.0f - -1.0f));
  EXPECT_EQ(obs.max_val()[0], 1.0f + c * (5.0f - 1.0f));
  EXPECT_EQ(obs.min_val()[1], -2.0f);  // no finite value in the second batch: kept
  EXPECT_EQ(obs.batch_counts(), (std::vector<std::int64_t>{2, 1}));
  const auto loaded = Q::load_observer(obs.save_state());
  expect_same_qparams(loaded->calculate_qparams(), obs.calculate_qparams());
}

TEST(MovingAveragePerChannelMinMaxObserver, MergeWeightsEachChannelByItsBatches) {
  Q::MovingAveragePerChannelMinMaxObserver a({.qscheme = Q::per_channel_affine}, 0);
  Q::MovingAveragePerChannelMinMaxObserver b({.qscheme = Q::per_channel_affine}, 0);
  const std::vector<float> x{-1.0f, 1.0f, -2.0f, 2.0f};
  const std::vector<float> y{-5.0f, 3.0f, kNan, kNan};
  a.observe(Q::TensorView(x.data(), Q::ScalarType::float32, {2, 2}));
  b.observe(Q::TensorView(y.data(), Q::ScalarType::float32, {2, 2}));
  a.merge(b);
  EXPECT_FLOAT_EQ(a.min_val()[0], -3.0f);
  EXPECT_FLOAT_EQ(a.max_val()[0], 2.0f);
  EXPECT_EQ(a.min_val()[1], -2.0f);
  EXPECT_EQ(a.batch_counts(), (std::vector<std::int64_t>{2, 1}));
}
