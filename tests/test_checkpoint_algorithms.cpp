// Statistics files told apart by content, lucidq statistics as an importance matrix, and the
// --method quantizer fed by a llama.cpp importance matrix (weighted-rtn only, errors naming the
// tensor).
#include "lucid/quantization/checkpoint_algorithms.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "checkpoint_test_support.hpp"
#include "lucid/quantization/weighted_rtn.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::TempDir;
using Q::testing::write_bytes;

namespace {

// A legacy .dat with one entry `name` (ncall 1).
std::string legacy_imatrix(const std::string& name, const std::vector<float>& values) {
  std::string out;
  const auto put = [&](std::int32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); };
  put(1);
  put(static_cast<std::int32_t>(name.size()));
  out += name;
  put(1);
  put(static_cast<std::int32_t>(values.size()));
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return out;
}

Q::CalibrationStatistics one_tensor_statistics(const std::string& name,
                                               std::vector<double> square_sum, std::int64_t rows) {
  Q::TensorCalibration t;
  t.features = static_cast<std::int64_t>(square_sum.size());
  t.rows = rows;
  t.square_sum = std::move(square_sum);
  Q::CalibrationStatistics stats;
  stats.path = "stats.safetensors";
  stats.tensors.emplace(name, std::move(t));
  return stats;
}

}  // namespace

TEST(StatisticsFile, KindIsToldByContentNotByName) {
  TempDir dir;
  write_bytes(dir / "a.safetensors", std::string("GGUF\x03\0\0\0", 8));
  std::string safetensors(8, '\0');
  safetensors[0] = 2;
  safetensors += "{}";
  write_bytes(dir / "b.gguf", safetensors);
  write_bytes(dir / "c.safetensors", legacy_imatrix("w", {1.0f, 2.0f}));
  EXPECT_EQ(Q::statistics_file_kind(dir / "a.safetensors"), Q::StatisticsFileKind::gguf_imatrix);
  EXPECT_EQ(Q::statistics_file_kind(dir / "b.gguf"), Q::StatisticsFileKind::lucidq_calibration);
  EXPECT_EQ(Q::statistics_file_kind(dir / "c.safetensors"), Q::StatisticsFileKind::legacy_imatrix);
  EXPECT_ERROR_CONTAINS(Q::statistics_file_kind(dir / "missing"), "missing: cannot open");
  const Q::ImportanceMatrix legacy = Q::load_importance_matrix(dir / "c.safetensors");
  EXPECT_EQ(legacy.format, "legacy");  // whatever its name says
  ASSERT_NE(legacy.find("w"), nullptr);
  EXPECT_EQ(*legacy.find("w"), (std::vector<float>{1.0f, 2.0f}));
}

TEST(StatisticsFile, LucidqStatisticsAreMeanSquaresPerColumn) {
  const auto m = Q::importance_matrix_of(one_tensor_statistics("w", {4.0, 10.0, 0.0}, 4));
  ASSERT_NE(m.find("w"), nullptr);
  EXPECT_EQ(*m.find("w"), (std::vector<float>{1.0f, 2.5f, 0.0f}));
  EXPECT_EQ(m.format, "lucidq.calibration");
  EXPECT_EQ(m.path, "stats.safetensors");
}

TEST(StatisticsFile, WeightedRtnFromAnImatrixEqualsTheDirectCall) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::uniform_real_distribution<float> positive(0.1f, 4.0f);
  const std::int64_t n = 8;
  const std::int64_t k = 64;
  std::vector<float> w(static_cast<std::size_t>(n * k));
  for (float& v : w)
    v = normal(rng);
  std::vector<float> importance(static_cast<std::size_t>(k));
  for (float& v : importance)
    v = positive(rng);
  Q::ImportanceMatrix imatrix;
  imatrix.path = "imatrix.dat";
  imatrix.format = "legacy";
  imatrix.entries["w"] = importance;
  Q::WeightQuantizerOptions options;
  options.method = Q::WeightMethod::weighted_rtn;
  options.importance = imatrix;
  const Q::TensorQuantizer quantize = Q::make_weight_quantizer(options);
  Q::QuantSettings settings;
  settings.qscheme = Q::QScheme::PER_CHANNEL_SYMMETRIC;
  settings.qdtype = Q::qint4;
  settings.axis = 1;
  settings.group_size = 32;
  const Q::TensorView view(w, {n, k});
  const auto got = quantize("w", view, settings);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->method, "weighted-rtn");
  const std::vector<double> weights(importance.begin(), importance.end());
  const auto want = Q::quantize_weighted_rtn(view, weights, Q::WeightGrid{Q::qint4, true, 32});
  EXPECT_EQ(got->tensor.int_repr(), want.int_repr());
  EXPECT_EQ(got->tensor.qparams().scale, want.qparams().scale);

  EXPECT_ERROR_CONTAINS(quantize("v", view, settings),
                        "imatrix.dat (legacy imatrix, 1 entry, the first 'w') has no entry for "
                        "tensor v");
  const std::vector<float> narrow(static_cast<std::size_t>(n * 32), 0.0f);
  EXPECT_ERROR_CONTAINS(quantize("w", Q::TensorView(narrow, {n, 32}), settings),
                        "holds 64 values; expected 32, one per input column of its shape [8, 32]");
  for (const Q::WeightMethod method :
       {Q::WeightMethod::gptq, Q::WeightMethod::rtn, Q::WeightMethod::hqq}) {
    options.method = method;
    EXPECT_ERROR_CONTAINS(Q::make_weight_quantizer(options), "only --method weighted-rtn uses");
  }
  options.method = Q::WeightMethod::weighted_rtn;
  options.statistics = one_tensor_statistics("w", std::vector<double>(k, 1.0), 1);
  EXPECT_ERROR_CONTAINS(Q::make_weight_quantizer(options), "give one statistics file, not both");
}
