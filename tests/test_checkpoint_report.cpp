// Tests of checkpoint_report.hpp (table, JSON, byte units) and of the streaming figures and
// memory use behind quantize_checkpoint.
#include "lucid/quantization/checkpoint_report.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "checkpoint_test_support.hpp"
#include "core/streaming_metrics.hpp"
#include "lucid/quantization/checkpoint.hpp"
#include "lucid/quantization/quantize.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::TempDir;

namespace {

TEST(FormatBytes, BinaryUnitsWithThreeDigits) {
  EXPECT_EQ(Q::format_bytes(0), "0 B");
  EXPECT_EQ(Q::format_bytes(1023), "1023 B");
  EXPECT_EQ(Q::format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(Q::format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(Q::format_bytes(10 * 1024 * 1024), "10.0 MiB");
  EXPECT_EQ(Q::format_bytes(std::uint64_t{300} << 20), "300 MiB");
  EXPECT_EQ(Q::format_bytes(std::uint64_t{3} << 30), "3.00 GiB");
}

// Two tensors: "w" quantized (with a zero row, exact) and "b" kept.
Q::CheckpointReport sample_report() {
  Q::CheckpointReport r;
  r.input = "in.safetensors";
  r.output = "out.safetensors";
  r.input_file_bytes = 4200;
  r.output_file_bytes = 1300;
  r.seconds = 0.25;
  Q::TensorReport w;
  w.name = "w";
  w.shape = {32, 32};
  w.dtype = Q::ScalarType::float32;
  w.settings = Q::QuantSettings{Q::per_channel_symmetric, Q::qint4, 1, 16};
  w.reason = "default";
  w.bytes_before = 4096;
  w.bytes_after = 1024;
  w.metrics.count = 1023;
  w.metrics.nonfinite_count = 1;
  w.metrics.mse = 1.25e-4;
  w.metrics.sqnr_db = 31.5;
  w.metrics.max_abs_error = 0.0625;
  w.metrics.fraction_saturated = 0.005;
  w.metrics.cosine_similarity = 0.999;
  Q::TensorReport z = w;
  z.name = "zeros";
  z.metrics = {};
  z.metrics.sqnr_db = std::numeric_limits<double>::infinity();
  Q::TensorReport b;
  b.name = "b";
  b.shape = {32};
  b.dtype = Q::ScalarType::bfloat16;
  b.reason = "1-D; default needs 2-D+";
  b.bytes_before = b.bytes_after = 64;
  b.metrics.nonfinite_count = 2;
  r.tensors = {w, z, b};
  return r;
}

TEST(CheckpointReport, Totals) {
  const Q::CheckpointReport r = sample_report();
  EXPECT_EQ(r.bytes_before(), 4096u + 4096 + 64);
  EXPECT_EQ(r.bytes_after(), 1024u + 1024 + 64);
  EXPECT_DOUBLE_EQ(r.compression_ratio(), 8256.0 / 2112.0);
  EXPECT_EQ(r.quantized_count(), 2u);
  EXPECT_EQ(r.nonfinite_count(), 3);
  EXPECT_EQ(Q::CheckpointReport{}.compression_ratio(), 1.0);
}

TEST(CheckpointReport, TableHasARowPerTensorAndTotals) {
  const std::string table = Q::format_report(sample_report());
  const char* expected[] = {
      "tensor  shape     scheme                            dtype           before     after"
      "        MSE  SQNR dB  max |err|  saturated  non-finite\n",
      "w       [32, 32]  per_channel_symmetric g16 axis 1  F32 -> qint4  4.00 KiB  1.00 KiB"
      "  1.250e-04    31.50  6.250e-02      0.50%           1\n",
      "zeros   [32, 32]  per_channel_symmetric g16 axis 1  F32 -> qint4  4.00 KiB  1.00 KiB"
      "  0.000e+00      inf  0.000e+00      0.00%           0\n",
      "b       [32]      kept: 1-D; default needs 2-D+     BF16              64 B      64 B"
      "                                                     2\n",
      "total             2 of 3 tensors quantized                        8.06 KiB  2.06 KiB"
      "                                                     3\n",
      "compression 3.91x  (files: 4.10 KiB -> 1.27 KiB, 0.25 s)\n",
  };
  for (const char* piece : expected) {
    EXPECT_NE(table.find(piece), std::string::npos) << "missing: " << piece << "\n" << table;
  }
}

TEST(CheckpointReport, JsonForMachines) {
  const auto json = nlohmann::json::parse(Q::report_to_json(sample_report()));
  EXPECT_EQ(json["lucidq_report"], 1);
  EXPECT_EQ(json["input"], "in.safetensors");
  ASSERT_EQ(json["tensors"].size(), 3u);
  const auto& w = json["tensors"][0];
  EXPECT_EQ(w["name"], "w");
  EXPECT_EQ(w["shape"], nlohmann::json::array({32, 32}));
  EXPECT_EQ(w["dtype"], "F32");
  EXPECT_EQ(w["action"], "quantized");
  EXPECT_EQ(w["scheme"], "per_channel_symmetric");
  EXPECT_EQ(w["qdtype"], "qint4");
  EXPECT_EQ(w["axis"], 1);
  EXPECT_EQ(w["group_size"], 16);
  EXPECT_EQ(w["bytes_after"], 1024);
  EXPECT_EQ(w["mse"], 1.25e-4);
  EXPECT_EQ(w["sqnr_db"], 31.5);
  EXPECT_EQ(w["fraction_saturated"], 0.005);
  EXPECT_EQ(w["nonfinite_count"], 1);
  EXPECT_TRUE(json["tensors"][1]["sqnr_db"].is_null());  // exact: infinite SQNR
  const auto& b = json["tensors"][2];
  EXPECT_EQ(b["action"], "kept");
  EXPECT_EQ(b["reason"], "1-D; default needs 2-D+");
  EXPECT_FALSE(b.contains("mse"));
  EXPECT_EQ(b["nonfinite_count"], 2);
  EXPECT_EQ(json["totals"]["quantized"], 2);
  EXPECT_EQ(json["totals"]["nonfinite_count"], 3);
  EXPECT_EQ(json["totals"]["bytes_before"], 8256);
  EXPECT_DOUBLE_EQ(json["totals"]["compression_ratio"].get<double>(), 8256.0 / 2112.0);
}

// The streamed figures equal the core's on a large tensor (many blocks, many threads) with
// non-finite values, saturated codes and every granularity.
TEST(CheckpointMetrics, StreamedFiguresMatchTheCoreOnLargeTensors) {
  const std::uint64_t seed = Q::testing::test_seed();
  std::mt19937_64 rng(seed);
  std::vector<float> values = Q::testing::weight_values(300, 1000, rng);
  values[17] = std::numeric_limits<float>::quiet_NaN();
  values[99'000] = std::numeric_limits<float>::infinity();
  values[250'001] = -std::numeric_limits<float>::infinity();
  const Q::Tensor x = Q::testing::make_tensor(Q::ScalarType::bfloat16, {300, 1000}, values);
  TempDir dir;
  Q::write_safetensors(dir / "in.safetensors", {{"x", x.view()}});
  for (const Q::QuantSettings s : {Q::QuantSettings{Q::per_channel_symmetric, Q::qint8, 0, 0},
                                   Q::QuantSettings{Q::per_channel_affine, Q::quint4, 1, 128},
                                   Q::QuantSettings{Q::per_channel_symmetric, Q::qint2, 0, 7},
                                   Q::QuantSettings{Q::per_channel_affine, Q::quint8, 1, 0},
                                   Q::QuantSettings{Q::per_tensor_affine, Q::qint16, 0, 0}}) {
    SCOPED_TRACE(Q::describe(s));
    Q::QuantizeCheckpointOptions options;
    options.recipe = Q::QuantRecipe{{Q::default_rule(s)}};
    options.overwrite = true;
    const Q::CheckpointReport report =
        Q::quantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors", options);
    const Q::QuantizedTensor q =
        s.group_size > 0 ? Q::quantize_per_group(x, s.qscheme, s.qdtype, s.axis, s.group_size)
                         : Q::quantize(x, s.qscheme, s.qdtype, s.axis);
    const Q::ErrorMetrics core = Q::error_metrics(x, q);
    const Q::ErrorMetrics& streamed = report.tensors[0].metrics;
    EXPECT_EQ(streamed.count, core.count);
    EXPECT_EQ(streamed.nonfinite_count, 3);
    EXPECT_EQ(streamed.nonfinite_count, core.nonfinite_count);
    EXPECT_EQ(streamed.max_abs_error, core.max_abs_error);
    EXPECT_EQ(streamed.fraction_saturated, core.fraction_saturated);
    // Symmetric grids clamp the largest |x| (|x| / s = half the grid, +0.5); affine ones
    // need not clamp anything.
    if (Q::is_symmetric(s.qscheme)) EXPECT_GT(streamed.fraction_saturated, 0.0);
    EXPECT_NEAR(streamed.mse, core.mse, 1e-12 * core.mse);  // summation order only
    EXPECT_NEAR(streamed.sqnr_db, core.sqnr_db, 1e-10);
    EXPECT_NEAR(streamed.cosine_similarity, core.cosine_similarity, 1e-12);
  }
}

// Saturation right at the rounding ties (x / s = m + 1/2) and beyond, for several grids and
// zero points, including non-finite values and a 32-bit grid: the streamed count equals the
// core's element-by-element one.
TEST(CheckpointMetrics, SaturationAtTiesMatchesTheCore) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x;
  for (float m = -140.5f; m <= 140.5f; m += 0.5f)
    x.push_back(m);  // every tie and integer
  for (const float v : {nan, inf, -inf, 1e30f, -1e30f, 7.5f, 8.5f, -8.5f, -9.5f, 15.5f, 16.5f})
    x.push_back(v);
  const Q::Tensor t = Q::Tensor::from_floats(x);
  for (const auto& [qdtype, zero_point] :
       {std::pair{Q::qint8, 0}, std::pair{Q::qint8, 3}, std::pair{Q::qint8, -4},
        std::pair{Q::quint8, 128}, std::pair{Q::quint8, 7}, std::pair{Q::qint4, 1},
        std::pair{Q::quint4, 8}, std::pair{Q::qint2, 0}, std::pair{Q::qint16, 5},
        std::pair{Q::qint32, 0}}) {
    SCOPED_TRACE(qdtype.name() + " z = " + std::to_string(zero_point));
    for (const float scale : {1.0f, 0.5f, 3.0f}) {
      const Q::QParams qp = Q::QParams::per_tensor(scale, zero_point, qdtype);
      const Q::QuantizedTensor q = Q::quantize(t, qp);
      const Q::ErrorMetrics core = Q::error_metrics(t, q);
      const Q::ErrorMetrics streamed = Q::detail::streaming_error_metrics(t, q);
      EXPECT_GT(core.fraction_saturated, 0.0);
      EXPECT_EQ(streamed.fraction_saturated, core.fraction_saturated) << "scale " << scale;
      EXPECT_EQ(streamed.nonfinite_count, 3);
      EXPECT_EQ(streamed.max_abs_error, core.max_abs_error);
    }
  }
}

#if defined(__SANITIZE_ADDRESS__)
#define LUCIDQ_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LUCIDQ_TEST_ASAN 1
#endif
#endif
#ifdef LUCIDQ_TEST_ASAN
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// Resident file-backed pages of this process, in bytes (RssFile in /proc/self/status).
std::int64_t resident_file_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssFile:", 0) == 0) return std::stoll(line.substr(8)) * 1024;
  }
  return -1;
}

TEST(SafetensorsReleasePages, PagesLeaveTheResidentSetAndTheDataStays) {
  TempDir dir;
  constexpr std::int64_t n = 8 << 20;  // 32 MiB of float32
  std::vector<float> values(n);
  for (std::int64_t i = 0; i < n; ++i)
    values[i] = static_cast<float>(i % 1000);
  Q::write_safetensors(dir / "big.safetensors",
                       {{"x", Q::TensorView(std::span<const float>(values), {n})}});
  values = {};
  const auto file = Q::SafetensorsFile::open(dir / "big.safetensors");
  const auto& entry = *file.find("x");
  auto checksum = [&] {
    const auto bytes = file.bytes(entry);
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < bytes.size(); i += 64)
      sum += static_cast<std::uint8_t>(bytes[i]);
    return sum;
  };
  const std::int64_t before = resident_file_bytes();
  ASSERT_GE(before, 0) << "no RssFile in /proc/self/status";
  const std::uint64_t first = checksum();
  const std::int64_t touched = resident_file_bytes();
  EXPECT_GT(touched - before, 30 << 20);
  file.release_pages(entry);
  EXPECT_LT(resident_file_bytes() - before, 2 << 20);
  EXPECT_EQ(checksum(), first);  // the bytes come back
}

std::int64_t peak_rss_bytes() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;
}

// Memory stays near one tensor's size whatever the file size: a 128 MiB file of 4 MiB tensors
// may raise the peak by 3 x 4 MiB plus a little, never by the file's size.
TEST(CheckpointStreaming, PeakMemoryFollowsTheLargestTensorNotTheFile) {
  if (kSanitized) GTEST_SKIP() << "AddressSanitizer keeps freed memory resident";
  TempDir dir;
  constexpr std::int64_t rows = 1024, cols = 2048;  // 4 MiB of bfloat16 per tensor
  constexpr int count = 32;
  {
    std::vector<Q::SafetensorsTensorSpec> specs;
    for (int t = 0; t < count; ++t)
      specs.push_back(
          {"layer" + std::to_string(t) + ".weight", Q::ScalarType::bfloat16, {rows, cols}});
    Q::SafetensorsWriter writer(dir / "in.safetensors", specs);
    std::vector<std::uint16_t> row(cols);
    for (int t = 0; t < count; ++t) {
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = 0; c < cols; ++c)
          row[c] = Q::float_to_bfloat16(std::sin(static_cast<float>(r * cols + c + t)));
        writer.append(std::as_bytes(std::span(row)));
      }
    }
    writer.commit();
  }
  const std::int64_t before = peak_rss_bytes();
  const Q::CheckpointReport report =
      Q::quantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors");
  const std::int64_t growth = peak_rss_bytes() - before;
  std::cout << "[ memory ] peak RSS grew by " << growth << " bytes for a file of "
            << count * rows * cols * 2 << "\n";
  EXPECT_EQ(report.quantized_count(), static_cast<std::size_t>(count));
  const std::int64_t tensor_bytes = rows * cols * 2;
  EXPECT_LT(growth, 3 * tensor_bytes + (8 << 20))
      << "peak RSS grew by " << growth << " bytes for a file of " << count * tensor_bytes;
}

}  // namespace
