// Tests of observer_histogram.hpp: HistogramObserver with PyTorch and exact binning.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "lucid/quantization/observer_histogram.hpp"
#include "lucid/quantization/observer_minmax.hpp"
#include "observer_test_data.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::Distribution;
using Q::testing::sample;
using Q::testing::view_of;

namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

Q::HistogramObserver exact_observer(const Q::QuantGrid& grid = {}) {
  return Q::HistogramObserver(grid, {.binning = Q::HistogramBinning::exact});
}

double total(const std::vector<float>& histogram) {
  return std::accumulate(histogram.begin(), histogram.end(), 0.0);
}

// Batches whose range grows: scales 1, 2, ... and a shifted one.
std::vector<std::vector<float>> growing_batches(std::mt19937_64& rng) {
  std::vector<std::vector<float>> batches;
  for (int i = 0; i < 6; ++i) {
    batches.push_back(sample(rng, i % 2 ? Distribution::laplace : Distribution::relu,
                             3000 + 500 * static_cast<std::size_t>(i), 0.5 + i));
  }
  return batches;
}

}  // namespace

TEST(HistogramObserver, PytorchBinningDropsValuesBeyondTheTruncatedRange) {
  // PyTorch 1.13 bins the first batch with torch.histc over [int(min), int(max)] = [0, 3]:
  // 0.5 -> bin 0, 1.5 -> bin 2, 2.5 -> bin 3, and 3.5 falls outside and is dropped.
  Q::HistogramObserver obs({}, {.bins = 4});
  const std::vector<float> x{0.5f, 1.5f, 2.5f, 3.5f};
  obs.observe(view_of(x));
  EXPECT_EQ(obs.histogram(), (std::vector<float>{1, 0, 1, 1}));
  EXPECT_EQ(obs.histogram_min(), 0.5);
  EXPECT_EQ(obs.histogram_max(), 3.5);
  EXPECT_EQ(obs.count(), 4);
}

TEST(HistogramObserver, ExactBinningKeepsEveryCount) {
  Q::HistogramObserver obs({}, {.bins = 4, .binning = Q::HistogramBinning::exact});
  const std::vector<float> x{0.5f, 1.5f, 2.5f, 3.5f};
  obs.observe(view_of(x));
  EXPECT_EQ(total(obs.histogram()), 4.0);
  EXPECT_LE(obs.histogram_min(), 0.5);
  EXPECT_GE(obs.histogram_max(), 3.5);
}

TEST(HistogramObserver, ExactBinningDoesNotDependOnBatchOrder) {
  std::mt19937_64 rng(Q::testing::test_seed());
  auto batches = growing_batches(rng);
  Q::HistogramObserver forward = exact_observer();
  for (const auto& b : batches)
    forward.observe(view_of(b));
  std::reverse(batches.begin(), batches.end());
  Q::HistogramObserver backward = exact_observer();
  for (const auto& b : batches)
    backward.observe(view_of(b));
  EXPECT_EQ(forward.histogram(), backward.histogram());
  EXPECT_EQ(forward.histogram_min(), backward.histogram_min());
  EXPECT_EQ(forward.calculate_qparams().scale, backward.calculate_qparams().scale);
  EXPECT_EQ(forward.calculate_qparams().zero_point, backward.calculate_qparams().zero_point);
}

TEST(HistogramObserver, ExactBinningMergeEqualsSequentialObservation) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const auto batches = growing_batches(rng);
  Q::HistogramObserver sequential = exact_observer({.dtype = Q::qint8});
  std::vector<Q::HistogramObserver> shards(3, exact_observer({.dtype = Q::qint8}));
  for (std::size_t i = 0; i < batches.size(); ++i) {
    sequential.observe(view_of(batches[i]));
    shards[i % 3].observe(view_of(batches[i]));
  }
  shards[2].merge(shards[0]);
  shards[2].merge(shards[1]);
  EXPECT_EQ(shards[2].histogram(), sequential.histogram());
  EXPECT_EQ(shards[2].count(), sequential.count());
  EXPECT_EQ(shards[2].min_val(), sequential.min_val());
  EXPECT_EQ(shards[2].max_val(), sequential.max_val());
  EXPECT_EQ(shards[2].calculate_qparams().scale, sequential.calculate_qparams().scale);
  EXPECT_EQ(shards[2].calculate_qparams().zero_point, sequential.calculate_qparams().zero_point);
}

TEST(HistogramObserver, PytorchBinningMergeConservesCountsAndRange) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const auto batches = growing_batches(rng);
  Q::HistogramObserver a;
  Q::HistogramObserver b;
  for (std::size_t i = 0; i < batches.size(); ++i)
    (i % 2 ? a : b).observe(view_of(batches[i]));
  const double mass = total(a.histogram()) + total(b.histogram());
  const float data_min = std::min(a.min_val()[0], b.min_val()[0]);
  const float data_max = std::max(a.max_val()[0], b.max_val()[0]);
  a.merge(b);
  EXPECT_NEAR(total(a.histogram()), mass, 1e-5 * mass);
  EXPECT_EQ(a.min_val()[0], data_min);
  EXPECT_GE(a.max_val()[0], data_max);  // PyTorch's grid relaxes the max to a whole bin
  EXPECT_EQ(a.count(), 6 * 3000 + 500 * 15);
}

TEST(HistogramObserver, SingleValueAndNonFinite) {
  for (const auto binning : {Q::HistogramBinning::pytorch, Q::HistogramBinning::exact}) {
    Q::HistogramObserver obs({}, {.binning = binning});
    const std::vector<float> nans{kNan, kNan};
    obs.observe(view_of(nans));
    EXPECT_ERROR_CONTAINS(obs.calculate_qparams(), "no finite value");
    const std::vector<float> constant(100, 2.5f);
    obs.observe(view_of(constant));
    EXPECT_EQ(obs.nonfinite_count(), 2);
    const Q::ClipRange range = obs.clipping_range();
    EXPECT_EQ(range.min, std::vector<float>{2.5f});
    EXPECT_EQ(range.max, std::vector<float>{2.5f});
    const Q::QParams q = obs.calculate_qparams();
    EXPECT_FLOAT_EQ(q.scale[0], 2.5f / 255.0f);
  }
}

TEST(HistogramObserver, StateRoundTripBothBinnings) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const auto batches = growing_batches(rng);
  for (const auto binning : {Q::HistogramBinning::pytorch, Q::HistogramBinning::exact}) {
    Q::HistogramObserver obs({.dtype = Q::qint8, .qscheme = Q::per_tensor_symmetric},
                             {.bins = 512, .binning = binning});
    for (const auto& b : batches)
      obs.observe(view_of(b));
    const std::string state = obs.save_state();
    const auto loaded = Q::load_observer(state);
    const auto& typed = dynamic_cast<const Q::HistogramObserver&>(*loaded);
    EXPECT_EQ(typed.options(), obs.options());
    EXPECT_EQ(typed.histogram(), obs.histogram());
    EXPECT_EQ(typed.save_state(), state);
    EXPECT_EQ(typed.calculate_qparams().scale, obs.calculate_qparams().scale);
    // Merging into the loaded copy keeps working (the state is complete).
    Q::HistogramObserver again = typed;
    again.merge(obs);
    EXPECT_EQ(again.count(), 2 * obs.count());
  }
}

TEST(HistogramObserver, RejectsBadOptionsAndCorruptState) {
  EXPECT_ERROR_CONTAINS(Q::HistogramObserver({}, {.bins = 0}), "bins = 0");
  EXPECT_ERROR_CONTAINS(Q::HistogramObserver({}, {.upsample_rate = 0}), "upsample_rate = 0");
  EXPECT_ERROR_CONTAINS(Q::HistogramObserver({.qscheme = Q::per_channel_affine}),
                        "HistogramObserver: qscheme = per_channel_affine");
  EXPECT_ERROR_CONTAINS(Q::histogram_binning_from_string("fast"), "\"fast\"");
  Q::HistogramObserver obs = exact_observer();
  const std::vector<float> x{1.0f, 2.0f, 3.0f};
  obs.observe(view_of(x));
  std::string state = obs.save_state();
  state.replace(state.find("\"total\":3"), 9, "\"total\":4");
  EXPECT_ERROR_CONTAINS(obs.load_state(state), "load_state");
  EXPECT_ERROR_CONTAINS(obs.merge(Q::HistogramObserver()), "bins / upsample_rate / binning");
}

TEST(HistogramObserver, ClipsHeavyTailsMoreThanMinMax) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const auto x = sample(rng, Distribution::student_t3, 20000);
  Q::HistogramObserver histogram;
  Q::MinMaxObserver minmax;
  histogram.observe(view_of(x));
  minmax.observe(view_of(x));
  EXPECT_LT(histogram.calculate_qparams().scale[0], minmax.calculate_qparams().scale[0]);
}

TEST(HistogramObserver, ExtremeValuesStayInsideTheGrid) {
  // Huge, tiny, subnormal and signed-zero values: every count lands in a bin (checked by the
  // totals here and by the sanitizer build for the memory side), and the qparams stay finite.
  const float big = std::numeric_limits<float>::max();
  const float tiny = std::numeric_limits<float>::denorm_min();
  const std::vector<std::vector<float>> batches = {
      {big, -big, 0.0f, -0.0f, tiny, -tiny},
      {1e-30f, -1e-30f, 3.0f, -1e-38f},
      {1e30f, 1e30f},
      {-tiny, tiny},
  };
  for (const auto binning : {Q::HistogramBinning::pytorch, Q::HistogramBinning::exact}) {
    for (std::size_t first = 0; first < batches.size(); ++first) {
      Q::HistogramObserver obs({}, {.binning = binning});
      for (std::size_t k = 0; k < batches.size(); ++k)
        obs.observe(view_of(batches[(first + k) % batches.size()]));
      EXPECT_EQ(obs.count(), 14);
      if (binning == Q::HistogramBinning::exact) EXPECT_EQ(total(obs.histogram()), 14.0);
      const Q::QParams q = obs.calculate_qparams();
      EXPECT_TRUE(std::isfinite(q.scale[0]) && q.scale[0] > 0.0f);
    }
  }
}
