// Calibration quality: SQNR of each observer's qparams against MinMax on heavy-tailed data
// (the table in docs/calibration.md is this test's output).
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lucid/quantization.hpp"
#include "observer_test_data.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::Distribution;
using Q::testing::sample;
using Q::testing::view_of;

namespace {

constexpr std::size_t kSamples = std::size_t{1} << 20;

// N(0, 1) with 0.01 % of the values replaced by +-50 (outliers at 50 sigma).
std::vector<float> normal_with_outliers(std::mt19937_64& rng) {
  std::vector<float> x = sample(rng, Distribution::normal, kSamples);
  std::uniform_int_distribution<std::size_t> where(0, x.size() - 1);
  for (std::size_t k = 0; k < kSamples / 10000; ++k)
    x[where(rng)] = k % 2 ? 50.0f : -50.0f;
  return x;
}

double sqnr_db(const std::vector<float>& x, Q::Observer& observer) {
  const auto view = view_of(x);
  for (std::size_t start = 0; start < x.size(); start += x.size() / 4) {  // four batches
    observer.observe(Q::TensorView(x.data() + start, Q::ScalarType::float32,
                                   {static_cast<std::int64_t>(x.size() / 4)}));
  }
  return Q::error_metrics(view, Q::fake_quantize(view, observer.calculate_qparams())).sqnr_db;
}

struct Row {
  std::string data;
  std::string grid;
  double minmax;
  double histogram;
  double percentile;
  double entropy;
  double mse;
};

std::vector<Row> measure() {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::vector<std::pair<std::string, std::vector<float>>> datasets = {
      {"Laplace(0, 1)", sample(rng, Distribution::laplace, kSamples)},
      {"Student-t(3)", sample(rng, Distribution::student_t3, kSamples)},
      {"N(0,1) + 0.01% at 50 sigma", normal_with_outliers(rng)},
  };
  const std::vector<std::pair<std::string, Q::QuantGrid>> grids = {
      {"quint8 affine", {.dtype = Q::quint8, .qscheme = Q::per_tensor_affine}},
      {"qint8 symmetric", {.dtype = Q::qint8, .qscheme = Q::per_tensor_symmetric}},
  };
  std::vector<Row> rows;
  for (const auto& [data_name, x] : datasets) {
    for (const auto& [grid_name, grid] : grids) {
      Q::MinMaxObserver minmax(grid);
      Q::HistogramObserver histogram(grid);
      Q::PercentileObserver percentile(grid);
      Q::EntropyObserver entropy(grid);
      Q::MseObserver mse(grid);
      rows.push_back({data_name, grid_name, sqnr_db(x, minmax), sqnr_db(x, histogram),
                      sqnr_db(x, percentile), sqnr_db(x, entropy), sqnr_db(x, mse)});
    }
  }
  std::printf("| data | grid | MinMax | Histogram | Percentile 99.99 | Entropy | MSE |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    std::printf("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", r.data.c_str(), r.grid.c_str(),
                r.minmax, r.histogram, r.percentile, r.entropy, r.mse);
  }
  return rows;
}

const std::vector<Row>& rows() {
  static const std::vector<Row> measured = measure();
  return measured;
}

}  // namespace

TEST(ObserverQuality, LaplaceEveryCalibratorBeatsMinMax) {
  for (const Row& r : rows()) {
    if (r.data != "Laplace(0, 1)") continue;
    SCOPED_TRACE(r.grid);
    EXPECT_GT(r.histogram, r.minmax);
    EXPECT_GT(r.percentile, r.minmax);
    EXPECT_GT(r.entropy, r.minmax);
    EXPECT_GT(r.mse, r.minmax);
  }
}

TEST(ObserverQuality, StudentTHistogramAndMseBeatMinMax) {
  // The percentile and entropy observers usually beat MinMax here too, but not for every
  // sample: when the sample's extremes are modest, clipping at P(99.99) or at the KL
  // threshold costs more than it saves (docs/calibration.md, several seeds).
  for (const Row& r : rows()) {
    if (r.data != "Student-t(3)") continue;
    SCOPED_TRACE(r.grid);
    EXPECT_GT(r.histogram, r.minmax);
    EXPECT_GT(r.mse, r.minmax);
  }
}

TEST(ObserverQuality, FarOutliersOnlyMseGains) {
  // 0.01 % of the values at +-50 sigma: clipping them costs about 100 * 46^2 of squared error
  // per million values, keeping them only 1e6 * (100 / 255)^2 / 12. So the MSE search keeps
  // (almost) the whole range and gains a little, the histogram's L2 search stops after one
  // bin, and the percentile (affine) and entropy observers, which clip them by design, lose
  // (docs/calibration.md).
  for (const Row& r : rows()) {
    if (r.data.find("50 sigma") == std::string::npos) continue;
    SCOPED_TRACE(r.grid);
    EXPECT_GT(r.mse, r.minmax);
    EXPECT_GE(r.histogram, r.minmax);
    EXPECT_LT(r.entropy, r.minmax - 10.0);
    if (r.grid == "quint8 affine") EXPECT_LT(r.percentile, r.minmax - 10.0);
  }
}
