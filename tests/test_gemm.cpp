// The public int8 GEMM (gemm.hpp) on every supported tier against independent int64 / double
// computations: output stages, extremes, threads, dynamic quantization, packing and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "lucid/quantization/gemm.hpp"
#include "lucid/quantization/quantize.hpp"
#include "lucid/quantization/runtime.hpp"
#include "lucid/quantization/stage_checks.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

namespace {

// Restores the tier and thread count a test changed.
class GemmTest : public ::testing::Test {
 protected:
  void TearDown() override {
    Q::set_isa(isa_);
    Q::set_num_threads(threads_);
  }
  Q::Isa isa_ = Q::active_isa();
  int threads_ = Q::num_threads();
};

struct Problem {
  std::int64_t m, n, k, a_stride;
  Q::ScalarType type;
  std::int32_t a_zero;
  std::vector<std::uint8_t> a;  // m × a_stride bytes (uint8 or int8 codes)
  std::vector<std::int8_t> w;   // n × k
  std::vector<float> w_scales;  // n
  Q::PackedWeightsInt8 packed;

  Q::ActivationMatrix activations(float scale = 0.05f) const {
    return {a.data(), type, m, a_stride, scale, a_zero};
  }
  std::int64_t code(std::int64_t row, std::int64_t col) const {
    const std::uint8_t b = a[static_cast<std::size_t>(row * a_stride + col)];
    return type == Q::ScalarType::int8 ? std::int64_t{static_cast<std::int8_t>(b)} : b;
  }
  // Σ_k (A − z) · W, independently of the packed layout.
  std::int64_t acc(std::int64_t row, std::int64_t col) const {
    std::int64_t sum = 0;
    for (std::int64_t j = 0; j < k; ++j)
      sum += (code(row, j) - a_zero) * w[static_cast<std::size_t>(col * k + j)];
    return sum;
  }
};

Problem random_problem(std::mt19937_64& rng, std::int64_t m, std::int64_t n, std::int64_t k,
                       Q::ScalarType type, std::int32_t a_zero) {
  Problem p{m, n, k, k + 3, type, a_zero, {}, {}, {}, {}};
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.1f);
  p.a.resize(static_cast<std::size_t>(m * p.a_stride));
  for (auto& v : p.a)
    v = static_cast<std::uint8_t>(byte(rng));
  p.w.resize(static_cast<std::size_t>(n * k));
  for (auto& v : p.w)
    v = static_cast<std::int8_t>(byte(rng) - 128);
  for (std::int64_t i = 0; i < n; ++i)
    p.w_scales.push_back(scale(rng));
  p.packed = Q::PackedWeightsInt8::pack(p.w.data(), n, k, k, p.w_scales);
  return p;
}

// The float stage exactly as gemm.hpp states it.
float float_stage(std::int64_t acc, float a_scale, float w_scale, const float* bias,
                  std::int64_t n) {
  const float product = a_scale * w_scale;
  const float scaled = static_cast<float>(acc) * product;
  return bias != nullptr ? scaled + bias[n] : scaled;
}

// The requantize stage exactly as gemm.hpp states it (std::nearbyint: ties to even).
std::int32_t requantize_stage(std::int64_t acc, float a_scale, float w_scale,
                              const Q::RequantizedOutput& c, std::int64_t n) {
  const double m = double(a_scale) * double(w_scale) / double(c.scale);
  const double o = c.bias != nullptr ? double(c.bias[n]) / double(c.scale) : 0.0;
  const std::int64_t sum = acc + (c.bias_int32 != nullptr ? c.bias_int32[n] : 0);
  const double q = std::nearbyint(double(sum) * m + o) + c.zero_point;
  const double low = c.relu ? std::max<double>(double(c.qdtype.quant_min()), c.zero_point)
                            : double(c.qdtype.quant_min());
  return static_cast<std::int32_t>(std::clamp(q, low, double(c.qdtype.quant_max())));
}

TEST_F(GemmTest, AllStagesMatchIndependentComputationOnEveryTier) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t shapes[][3] = {
      {1, 1, 1},    {1, 4096 / 64, 255}, {2, 17, 5},    {3, 33, 7},   {8, 48, 64},
      {9, 49, 127}, {16, 31, 9},         {17, 64, 257}, {65, 47, 33}, {127, 16, 4},
      {5, 257, 15}, {12, 328, 260}};  // small-M tiles of 8 or 9 panels, a partial one
  for (const Q::Isa isa : Q::supported_isas()) {
    Q::set_isa(isa);
    for (const auto& s : shapes) {
      for (const auto type : {Q::ScalarType::uint8, Q::ScalarType::int8}) {
        const std::int32_t low = type == Q::ScalarType::int8 ? -128 : 0;
        for (const std::int32_t z : {low, low + 255, low + 100}) {
          const Problem p = random_problem(rng, s[0], s[1], s[2], type, z);
          const std::string where = Q::to_string(isa) + " M=" + std::to_string(p.m) +
                                    " N=" + std::to_string(p.n) + " K=" + std::to_string(p.k) +
                                    " z=" + std::to_string(z);
          const std::int64_t ld = p.n + 5;
          const auto count = static_cast<std::size_t>(p.m * ld);
          std::vector<std::int32_t> c32(count, -7);
          Q::gemm(p.activations(), p.packed, Q::Int32Output{c32.data(), ld});
          std::vector<float> bias(static_cast<std::size_t>(p.n));
          for (auto& b : bias)
            b = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
          std::vector<float> cf(count, -7.0f);
          Q::gemm(p.activations(0.03f), p.packed, Q::FloatOutput{cf.data(), ld, bias.data()});
          std::vector<std::int8_t> cq(count, 99);
          Q::RequantizedOutput rq{cq.data(), ld, 0.7f, -3, Q::qint8, bias.data(), nullptr, false};
          Q::gemm(p.activations(0.03f), p.packed, rq);
          for (std::int64_t r = 0; r < p.m; ++r) {
            for (std::int64_t col = 0; col < ld; ++col) {
              const auto i = static_cast<std::size_t>(r * ld + col);
              if (col >= p.n) {  // padding between rows is untouched
                ASSERT_EQ(c32[i], -7) << where;
                ASSERT_EQ(cf[i], -7.0f) << where;
                ASSERT_EQ(cq[i], 99) << where;
                continue;
              }
              const std::int64_t acc = p.acc(r, col);
              const float ws = p.w_scales[static_cast<std::size_t>(col)];
              ASSERT_EQ(c32[i], acc) << where << " [" << r << ", " << col << "]";
              ASSERT_EQ(cf[i], float_stage(acc, 0.03f, ws, bias.data(), col)) << where;
              ASSERT_EQ(cq[i], requantize_stage(acc, 0.03f, ws, rq, col)) << where;
            }
          }
        }
      }
    }
  }
}

TEST_F(GemmTest, ExtremesAtMaximumDepthAreExact) {
  const std::int64_t k = Q::max_gemm_depth;
  for (const Q::Isa isa : Q::supported_isas()) {
    Q::set_isa(isa);
    for (const std::int8_t code : {std::int8_t{-128}, std::int8_t{127}}) {
      const std::vector<std::int8_t> w(static_cast<std::size_t>(3 * k), code);
      const float scale = 1.0f;
      const auto packed = Q::PackedWeightsInt8::pack(w.data(), 3, k, k, {&scale, 1});
      // uint8: a = 255 with z = 0 and a = 0 with z = 255; int8: a = 127 / −128, z = −128 / 127.
      for (const auto type : {Q::ScalarType::uint8, Q::ScalarType::int8}) {
        const bool is_int8 = type == Q::ScalarType::int8;
        for (const int sign : {1, -1}) {
          const int a_code = is_int8 ? (sign > 0 ? 127 : -128) : (sign > 0 ? 255 : 0);
          const std::int32_t z = is_int8 ? (sign > 0 ? -128 : 127) : (sign > 0 ? 0 : 255);
          const std::vector<std::uint8_t> a(static_cast<std::size_t>(k),
                                            static_cast<std::uint8_t>(a_code));
          std::vector<std::int32_t> c(3, 0);
          Q::gemm({a.data(), type, 1, k, 1.0f, z}, packed, Q::Int32Output{c.data(), 3});
          const std::int64_t expected = std::int64_t{sign} * 255 * code * k;  // closed form
          for (const std::int32_t v : c)
            EXPECT_EQ(v, expected) << Q::to_string(isa) << " code " << int(code);
        }
      }
    }
  }
  std::vector<std::int8_t> w(static_cast<std::size_t>(k + 1), 1);
  const float scale = 1.0f;
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsInt8::pack(w.data(), 1, k + 1, k + 1, {&scale, 1}),
                        "max_gemm_depth");
}

TEST_F(GemmTest, FloatOutputWithinDerivedToleranceOfFloat64) {
  // C = float(acc) · float(s_A · s_W) + bias: float(acc) errs by ≤ |acc| · u (u = 2^-24),
  // the scale product by ≤ s_A s_W · u, the multiply by another u, the add by
  // u · |C|. So |C − C_exact| ≤ |acc| s_A s_W · 3u + |C| u + (higher order), with
  // |acc| ≤ K · 255 · 128. We check 4u · (|acc| s_A s_W + |C|), which bounds it.
  std::mt19937_64 rng(Q::testing::test_seed());
  const Problem p = random_problem(rng, 7, 40, 300, Q::ScalarType::uint8, 131);
  std::vector<float> bias(40, 0.25f);
  std::vector<float> c(static_cast<std::size_t>(7 * 40));
  Q::gemm(p.activations(0.0123f), p.packed, Q::FloatOutput{c.data(), 40, bias.data()});
  const double u = std::ldexp(1.0, -24);
  for (std::int64_t r = 0; r < 7; ++r) {
    for (std::int64_t n = 0; n < 40; ++n) {
      const double acc = double(p.acc(r, n));
      const double exact = acc * 0.0123 * double(p.w_scales[n]) + 0.25;
      const double bound = 4 * u * (std::abs(acc) * 0.0123 * p.w_scales[n] + std::abs(exact));
      EXPECT_NEAR(c[static_cast<std::size_t>(r * 40 + n)], exact, bound);
    }
  }
}

TEST_F(GemmTest, RequantizeTiesSaturationReluRangesAndBiases) {
  // K = 1, W = 1, s_W = 1, s_A = 1: acc = a − z, so C = clamp(nearbyint((a − z + b) / s_out) +
  // z_out).
  const std::int8_t one = 1;
  const float w_scale = 1.0f;
  const auto w = Q::PackedWeightsInt8::pack(&one, 1, 1, 1, {&w_scale, 1});
  auto run = [&](std::uint8_t a, Q::RequantizedOutput c) {
    std::uint8_t out = 0xee;
    c.data = &out;
    c.row_stride = 1;
    Q::gemm({&a, Q::ScalarType::uint8, 1, 1, 1.0f, 0}, w, c);
    return out;
  };
  Q::RequantizedOutput c;
  c.scale = 2.0f;
  EXPECT_EQ(run(5, c), 2);      // 2.5 → 2 (ties to even)
  EXPECT_EQ(run(7, c), 4);      // 3.5 → 4
  EXPECT_EQ(run(255, c), 128);  // 127.5 → 128
  c.scale = 0.5f;
  EXPECT_EQ(run(200, c), 255);  // 400 saturates
  c.zero_point = 10;
  c.scale = 1.0f;
  const float minus_50 = -50.0f;
  c.bias = &minus_50;
  EXPECT_EQ(run(20, c), 0);  // 20 − 50 + 10 < 0 → clamps to 0
  c.relu = true;
  EXPECT_EQ(run(20, c), 10);  // ReLU clamps to the zero point
  c.relu = false;
  c.qdtype = Q::quint8.with_range(0, 100);
  EXPECT_EQ(run(250, c), 100);  // 250 − 50 + 10 = 210 → 100
  c.qdtype = Q::qint8.with_range(-20, 20);
  c.zero_point = 0;
  EXPECT_EQ(static_cast<std::int8_t>(run(20, c)), -20);  // 20 − 50 = −30 → −20
  c.zero_point = 10;
  c.qdtype = Q::quint8;
  c.bias = nullptr;
  const std::int32_t minus_40 = -40;
  c.bias_int32 = &minus_40;
  EXPECT_EQ(run(60, c), 30);  // 60 − 40 + 10
  c.qdtype = Q::qint8;
  c.zero_point = 0;
  c.bias_int32 = nullptr;
  EXPECT_EQ(static_cast<std::int8_t>(run(0, c)), 0);
  EXPECT_EQ(static_cast<std::int8_t>(run(255, c)), 127);
  // int32 bias in accumulator units equals a float bias of bias · s_A · s_W / s_out units... both
  // exact here.
  c.scale = 4.0f;
  const std::int32_t b32 = 6;
  const float bf = 6.0f;
  c.bias_int32 = &b32;
  const auto with_int = run(4, c);  // (4 + 6) / 4 = 2.5 → 2
  c.bias_int32 = nullptr;
  c.bias = &bf;
  EXPECT_EQ(with_int, 2);
  EXPECT_EQ(run(4, c), 2);  // 1 + 1.5 = 2.5 → 2
}

TEST_F(GemmTest, ThreadCountDoesNotChangeBytes) {
  std::mt19937_64 rng(Q::testing::test_seed());
  for (const std::int64_t m : {1, 5, 300}) {
    const Problem p = random_problem(rng, m, 700, 513, Q::ScalarType::int8, 17);
    std::vector<float> x(static_cast<std::size_t>(m * 513));
    for (auto& v : x)
      v = std::uniform_real_distribution<float>(-4.0f, 4.0f)(rng);
    std::vector<std::vector<std::uint8_t>> outputs;
    for (const int threads : {1, 2, 3}) {
      Q::set_num_threads(threads);
      const auto count = static_cast<std::size_t>(m * 700);
      std::vector<float> cf(count), cd(count);
      std::vector<std::uint8_t> bytes(count);
      Q::gemm(p.activations(), p.packed, Q::FloatOutput{cf.data(), 700, nullptr});
      Q::gemm(p.activations(), p.packed, Q::RequantizedOutput{bytes.data(), 700, 0.5f, 3});
      Q::gemm_dynamic(x.data(), m, 513, p.packed, nullptr, cd.data(), 700);
      bytes.resize(count * 9);
      std::memcpy(bytes.data() + count, cf.data(), count * 4);
      std::memcpy(bytes.data() + 5 * count, cd.data(), count * 4);
      outputs.push_back(bytes);
    }
    EXPECT_EQ(outputs[0], outputs[1]) << "M=" << m << ": 1 vs 2 threads";
    EXPECT_EQ(outputs[0], outputs[2]) << "M=" << m << ": 1 vs 3 threads";
  }
}

TEST_F(GemmTest, DynamicMatchesQuantizeThenGemm) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::normal_distribution<float> normal(0.3f, 2.0f);
  const std::int64_t m = 11, k = 67, n = 35;
  std::vector<float> x(static_cast<std::size_t>(m * k)), wf(static_cast<std::size_t>(n * k));
  for (auto& v : x)
    v = normal(rng);
  for (auto& v : wf)
    v = normal(rng);
  const auto w = Q::PackedWeightsInt8::quantize(wf.data(), n, k, k);
  std::vector<float> bias(static_cast<std::size_t>(n), 0.5f);
  for (const Q::Isa isa : Q::supported_isas()) {
    Q::set_isa(isa);
    for (const bool per_row : {true, false}) {
      for (const Q::QDtype qdtype : {Q::quint8, Q::qint8}) {
        std::vector<float> c(static_cast<std::size_t>(m * n));
        Q::gemm_dynamic(x.data(), m, k, w, bias.data(), c.data(), n, {per_row, qdtype});
        for (std::int64_t r = 0; r < m; ++r) {
          const Q::TensorView row(per_row ? x.data() + r * k : x.data(), Q::ScalarType::float32,
                                  {per_row ? k : m * k});
          const Q::QuantizedTensor q = Q::quantize(row, Q::QScheme::PER_TENSOR_AFFINE, qdtype);
          const auto codes = q.int_repr();
          const float s = q.qparams().scale[0];
          const std::int32_t z = q.qparams().zero_point[0];
          const std::size_t base = per_row ? 0 : static_cast<std::size_t>(r * k);
          for (std::int64_t col = 0; col < n; ++col) {
            std::int64_t acc = 0;
            const auto wc = w.unpack();
            for (std::int64_t j = 0; j < k; ++j)
              acc += (codes[base + j] - z) * wc[static_cast<std::size_t>(col * k + j)];
            EXPECT_EQ(c[static_cast<std::size_t>(r * n + col)],
                      float_stage(acc, s, w.scales()[col], bias.data(), col))
                << Q::to_string(isa) << " row " << r << " col " << col;
          }
        }
      }
    }
  }
  const Q::Tensor y =
      Q::linear_dynamic(Q::TensorView(x.data(), Q::ScalarType::float32, {1, m, k}), w);
  EXPECT_EQ(y.shape(), (Q::Shape{1, m, n}));
  std::vector<float> c(static_cast<std::size_t>(m * n));
  Q::gemm_dynamic(x.data(), m, k, w, nullptr, c.data(), n);
  EXPECT_EQ(0, std::memcmp(c.data(), y.data(), c.size() * 4));
  x[static_cast<std::size_t>(4 * k + 9)] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> untouched(c.size(), 1.5f);
  EXPECT_ERROR_CONTAINS(Q::gemm_dynamic(x.data(), m, k, w, nullptr, untouched.data(), n),
                        "a[4, 9]");
  EXPECT_EQ(untouched, std::vector<float>(c.size(), 1.5f));
}

TEST_F(GemmTest, PackingRoundTrips) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const Problem p = random_problem(rng, 1, 37, 13, Q::ScalarType::uint8, 0);
  EXPECT_EQ(p.packed.unpack(), p.w);
  EXPECT_EQ(p.packed.rows(), 37);
  EXPECT_EQ(p.packed.columns(), 13);
  EXPECT_TRUE(p.packed.per_channel());
  EXPECT_EQ(p.packed.packed_bytes(), std::size_t{3 * 4 * 64});  // 3 panels × 4 groups
  for (std::int64_t n = 0; n < 37; ++n) {
    std::int32_t sum = 0;
    for (std::int64_t j = 0; j < 13; ++j)
      sum += p.w[static_cast<std::size_t>(n * 13 + j)];
    EXPECT_EQ(p.packed.column_sums()[n], sum);
  }
  const Q::QuantizedTensor q = p.packed.to_quantized();
  EXPECT_EQ(q.shape(), (Q::Shape{37, 13}));
  const auto back = Q::PackedWeightsInt8::from_quantized(q);
  EXPECT_EQ(back.unpack(), p.w);
  EXPECT_EQ(std::vector<float>(back.scales().begin(), back.scales().end()), p.w_scales);
  // Per-tensor, and quantize() of floats equals quantize() per channel.
  const float s = 0.5f;
  const auto t = Q::PackedWeightsInt8::pack(p.w.data(), 37, 13, 13, {&s, 1});
  EXPECT_FALSE(t.per_channel());
  EXPECT_EQ(Q::PackedWeightsInt8::from_quantized(t.to_quantized()).scales()[36], 0.5f);
  std::vector<float> wf(37 * 13);
  for (auto& v : wf)
    v = std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng);
  const auto qw =
      Q::PackedWeightsInt8::quantize(wf.data(), 37, 13, 13, true, Q::qint8.narrow_range());
  const auto expected = Q::quantize(Q::TensorView(wf.data(), Q::ScalarType::float32, {37, 13}),
                                    Q::QScheme::PER_CHANNEL_SYMMETRIC, Q::qint8.narrow_range(), 0);
  const auto codes = expected.int_repr();
  const auto got = qw.unpack();
  for (std::size_t i = 0; i < codes.size(); ++i)
    ASSERT_EQ(got[i], codes[i]) << i;
  EXPECT_EQ(qw.scales()[5], expected.qparams().scale[5]);
  // to_quantized reports the grid the codes were made on (qint8 for pack()).
  EXPECT_EQ(qw.to_quantized().qparams().qdtype, Q::qint8.narrow_range());
  EXPECT_EQ(Q::PackedWeightsInt8::from_quantized(qw.to_quantized()).to_quantized().qparams().qdtype,
            Q::qint8.narrow_range());
  EXPECT_EQ(p.packed.to_quantized().qparams().qdtype, Q::qint8);
}

TEST_F(GemmTest, ErrorsNameTheArgumentAndWriteNothing) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const Problem p = random_problem(rng, 2, 4, 8, Q::ScalarType::uint8, 3);
  std::vector<std::int32_t> c(8, 42);
  const Q::Int32Output out{c.data(), 4};
  auto a = p.activations();
  a.data = nullptr;
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, out), "a.data is null");
  a = p.activations();
  a.type = Q::ScalarType::float32;
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, out), "a.type = float32");
  a = p.activations();
  a.row_stride = 7;
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, out), "a.row_stride = 7 (expected >= K = 8)");
  a = p.activations();
  a.zero_point = 256;
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, out), "a.zero_point = 256");
  a.type = Q::ScalarType::int8;
  a.zero_point = 128;
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, out), "a.zero_point = 128");
  a = p.activations();
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, Q::Int32Output{nullptr, 4}), "c.data is null");
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, Q::Int32Output{c.data(), 3}), "c.row_stride = 3");
  std::vector<float> cf(8, 42.0f);
  a.scale = -1.0f;
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, Q::FloatOutput{cf.data(), 4, nullptr}),
                        "a.scale = -1");
  a.scale = std::numeric_limits<float>::infinity();
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, Q::FloatOutput{cf.data(), 4, nullptr}), "a.scale");
  a = p.activations();
  std::vector<std::uint8_t> cq(8, 42);
  Q::RequantizedOutput rq{cq.data(), 4};
  const std::vector<float> fb(4, 0.0f);
  const std::vector<std::int32_t> ib(4, 0);
  rq.bias = fb.data();
  rq.bias_int32 = ib.data();
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, rq), "both c.bias and c.bias_int32");
  rq.bias_int32 = nullptr;
  rq.qdtype = Q::quint4;
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, rq), "c.qdtype = quint4");
  rq.qdtype = Q::quint8;
  rq.zero_point = -1;
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, rq), "c.zero_point = -1");
  rq.zero_point = 0;
  rq.scale = 0.0f;
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, rq), "c.scale = 0");
  EXPECT_EQ(c, std::vector<std::int32_t>(8, 42));
  EXPECT_EQ(cf, std::vector<float>(8, 42.0f));
  EXPECT_EQ(cq, std::vector<std::uint8_t>(8, 42));
  EXPECT_ERROR_CONTAINS(Q::gemm(a, Q::PackedWeightsInt8(), out), "empty");

  const float bad_scales[] = {1.0f, 0.0f, 1.0f, 1.0f};
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsInt8::pack(p.w.data(), 4, 8, 8, bad_scales),
                        "scales[1] = 0");
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsInt8::pack(p.w.data(), 4, 8, 8, {bad_scales, 2}),
                        "2 scales (expected 1 or n = 4)");
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsInt8::pack(nullptr, 4, 8, 8, {bad_scales, 1}), "w is null");
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsInt8::pack(p.w.data(), 4, 8, 7, {bad_scales, 1}),
                        "row_stride = 7");
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsInt8::pack(p.w.data(), 0, 8, 8, {bad_scales, 1}), "n = 0");
  std::vector<float> wf(32, 1.0f);
  wf[13] = INFINITY;
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsInt8::quantize(wf.data(), 4, 8, 8), "w[1, 5]");
  wf[13] = 1.0f;
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsInt8::quantize(wf.data(), 4, 8, 8, true, Q::quint8),
                        "qdtype = quint8");
  const Q::QuantizedTensor asym =
      Q::quantize(Q::TensorView(wf.data(), Q::ScalarType::float32, {4, 8}),
                  Q::QScheme::PER_TENSOR_AFFINE, Q::qint8);
  EXPECT_ERROR_CONTAINS(Q::PackedWeightsInt8::from_quantized(asym), "zero_point[0]");
  std::vector<float> x(16, 1.0f);
  EXPECT_ERROR_CONTAINS(Q::gemm_dynamic(x.data(), 2, 7, p.packed, nullptr, cf.data(), 4),
                        "a_row_stride = 7");
  EXPECT_ERROR_CONTAINS(
      Q::linear_dynamic(Q::TensorView(x.data(), Q::ScalarType::float32, {2, 4, 2}), p.packed),
      "expected [..., K = 8]");
  EXPECT_ERROR_CONTAINS(Q::gemm_dynamic(x.data(), -1, 8, p.packed, nullptr, cf.data(), 4),
                        "m = -1 (expected >= 0)");
  a = p.activations();
  a.rows = -1;
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, out), "a.rows = -1 (expected >= 0)");
  for (const std::int32_t value : c)
    EXPECT_EQ(value, 42);
}

// An empty batch (M = 0) is valid: arguments are still checked, nothing is written, and
// null data pointers are allowed (an empty vector's data()).
TEST_F(GemmTest, EmptyBatchWritesNothing) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const Problem p = random_problem(rng, 2, 4, 8, Q::ScalarType::uint8, 3);
  auto a = p.activations();
  a.rows = 0;
  a.data = nullptr;
  EXPECT_NO_THROW(Q::gemm(a, p.packed, Q::Int32Output{nullptr, 4}));
  EXPECT_NO_THROW(Q::gemm(a, p.packed, Q::FloatOutput{nullptr, 4, nullptr}));
  EXPECT_ERROR_CONTAINS(Q::gemm(a, p.packed, Q::Int32Output{nullptr, 3}), "c.row_stride = 3");
  for (const bool per_row : {true, false}) {
    EXPECT_NO_THROW(Q::gemm_dynamic(nullptr, 0, 8, p.packed, nullptr, nullptr, 4,
                                    Q::DynamicQuantization{per_row, Q::quint8}));
  }
  std::vector<float> none;
  const Q::Tensor y =
      Q::linear_dynamic(Q::TensorView(none.data(), Q::ScalarType::float32, {0, 8}), p.packed);
  EXPECT_EQ(y.shape(), (Q::Shape{0, 4}));
}

// The stage checks name what the caller names (the Python module passes its keyword arguments)
// and print scales as Python does.
TEST(StageChecks, NameTheCallersArguments) {
  EXPECT_NO_THROW(Q::check_scale("f", "s", 0.5f));
  EXPECT_ERROR_CONTAINS(Q::check_scale("f", "x_scale", 0.0f),
                        "f: x_scale = 0.0 (expected a finite scale > 0)");
  EXPECT_ERROR_CONTAINS(Q::check_scale("f", "s", -0.1f), "f: s = -0.1 (expected");
  EXPECT_ERROR_CONTAINS(Q::check_scale("f", "s", std::numeric_limits<float>::infinity()),
                        "f: s = inf (expected");
  EXPECT_NO_THROW(Q::check_activation_zero_point("f", "z", Q::ScalarType::int8, -128, "x"));
  EXPECT_ERROR_CONTAINS(
      Q::check_activation_zero_point("f", "x_zero_point", Q::ScalarType::int8, 128, "x"),
      "f: x_zero_point = 128 (expected an integer in [-128, 127] for int8 x)");
  EXPECT_ERROR_CONTAINS(
      Q::check_activation_zero_point("f", "z", Q::ScalarType::uint8, std::int64_t{1} << 40, "a"),
      "f: z = 1099511627776 (expected an integer in [0, 255] for uint8 a)");
  EXPECT_ERROR_CONTAINS(Q::check_output_qdtype("f", "out_qdtype", Q::qint4),
                        "f: out_qdtype = qint4 (expected an 8-bit grid");
  EXPECT_ERROR_CONTAINS(Q::check_output_zero_point("f", "out_zero_point", Q::qint8, -129),
                        "f: out_zero_point = -129 (expected an integer in [-128, 127] for qint8)");
  EXPECT_NO_THROW(Q::check_one_bias("f", "b", "b32", true, false));
  EXPECT_ERROR_CONTAINS(Q::check_one_bias("f", "bias", "bias_int32", true, true),
                        "f: both bias and bias_int32 are given (expected at most one)");
}

}  // namespace
