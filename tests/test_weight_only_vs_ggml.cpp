// Weight-only formats against ggml's at equal bits per weight: lucidq's output error is at most
// Q4_0's and Q4_K's at 4.5 bits and Q8_0's at 8.5 bits (ggml's side from lucidq's byte-identical
// quantizers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "../bench/ggml_q8_k.hpp"
#include "lucid/quantization/ggml_quants.hpp"
#include "lucid/quantization/ggml_type.hpp"
#include "lucid/quantization/weight_only.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

namespace {

constexpr std::int64_t n = 512, k = 2048, m = 16;

// y[r, c] = Σ_t w[c, t] · x[r, t] in double.
std::vector<double> product(const std::vector<float>& w, const std::vector<float>& x) {
  std::vector<double> y(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t c = 0; c < n; ++c) {
      double acc = 0;
      for (std::int64_t t = 0; t < k; ++t)
        acc += double{w[static_cast<std::size_t>(c * k + t)]} *
               double{x[static_cast<std::size_t>(r * k + t)]};
      y[static_cast<std::size_t>(r * n + c)] = acc;
    }
  return y;
}

template <class Y>
double relative_error(const Y& y, const std::vector<double>& ref) {
  double e = 0, r = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    e += (double(y[i]) - ref[i]) * (double(y[i]) - ref[i]);
    r += ref[i] * ref[i];
  }
  return std::sqrt(e / r);
}

struct Errors {
  double float_x = 0, int8_x = 0;  ///< float activations; each side's int8 activation rule
};

// ggml: its decode times x, and times x rounded as its vec_dot partner (q8_K for Q4_K, q8_0 for
// Q4_0 and Q8_0).
Errors ggml_errors(Q::GgmlType type, const std::vector<float>& w, const std::vector<float>& x,
                   const std::vector<double>& ref) {
  const std::vector<float> decoded = Q::ggml_round_trip_rows(type, w.data(), n, k);
  const std::vector<float> xq = type == Q::GgmlType::Q4_K
                                    ? lucidq_bench::q8_k_round_trip(x)
                                    : Q::ggml_round_trip_rows(Q::GgmlType::Q8_0, x.data(), m, k);
  return {relative_error(product(decoded, x), ref), relative_error(product(decoded, xq), ref)};
}

// lucidq: float32 activations, and block-wise int8 activations (groups of 32, as q8_0).
Errors lucidq_errors(const Q::WeightOnlyFormat& f, const std::vector<float>& w,
                     const std::vector<float>& x, const std::vector<double>& ref) {
  const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, f);
  EXPECT_EQ(8.0 * static_cast<double>(packed.packed_bytes()) / static_cast<double>(n * k),
            f.bits_per_weight(k));
  std::vector<float> y(static_cast<std::size_t>(m * n));
  Errors e;
  Q::weight_only_gemm(x.data(), m, k, packed, nullptr, y.data(), n,
                      Q::WeightOnlyOptions{Q::WeightOnlyActivations::float32});
  e.float_x = relative_error(y, ref);
  Q::weight_only_gemm(x.data(), m, k, packed, nullptr, y.data(), n,
                      Q::WeightOnlyOptions{Q::WeightOnlyActivations::int8_blocks});
  e.int8_x = relative_error(y, ref);
  return e;
}

// int4 / int8 g32 symmetric f16 (the default grid: search), or int4 g32 affine super6.
Q::WeightOnlyFormat format(int bits, bool super6 = false) {
  Q::WeightOnlyFormat f;
  f.bits = bits;
  f.group_size = 32;
  f.symmetric = !super6;
  f.scale_type = super6 ? Q::ScaleType::super6 : Q::ScaleType::f16;
  return f;
}

void compare(bool student) {
  std::mt19937_64 rng(Q::testing::test_seed() + (student ? 1 : 0));
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::student_t_distribution<float> t3(3.0f);
  std::vector<float> w(static_cast<std::size_t>(n * k)), x(static_cast<std::size_t>(m * k));
  for (float& v : w)
    v = student ? t3(rng) : gauss(rng);
  for (float& v : x)
    v = gauss(rng);
  const std::vector<double> ref = product(w, x);
  const char* dist = student ? "student-t3" : "gaussian";
  struct Pair {
    Q::GgmlType type;
    const char* name;
    Q::WeightOnlyFormat ours;
  };
  for (const Pair& p : {Pair{Q::GgmlType::Q4_0, "Q4_0", format(4)},
                        Pair{Q::GgmlType::Q4_K, "Q4_K", format(4, true)},
                        Pair{Q::GgmlType::Q8_0, "Q8_0", format(8)}}) {
    const Q::WeightOnlyFormat& f = p.ours;
    ASSERT_EQ(8.0 * static_cast<double>(Q::ggml_row_size(p.type, k)) / k, f.bits_per_weight(k));
    const Errors theirs = ggml_errors(p.type, w, x, ref);
    const Errors ours = lucidq_errors(f, w, x, ref);
    std::printf(
        "[ error ] %s %.3f bits: ggml %s %.5f / %.5f, lucidq %s %.5f / %.5f "
        "(float x / int8 x)\n",
        dist, f.bits_per_weight(k), p.name, theirs.float_x, theirs.int8_x, f.describe().c_str(),
        ours.float_x, ours.int8_x);
    EXPECT_LE(ours.float_x, theirs.float_x) << dist << " " << p.name << " float x";
    EXPECT_LE(ours.int8_x, theirs.int8_x) << dist << " " << p.name << " int8 x";
  }
}

}  // namespace

TEST(WeightOnlyVsGgml, GaussianWeightsAtEqualBits) {
  compare(false);
}

TEST(WeightOnlyVsGgml, StudentT3WeightsAtEqualBits) {
  compare(true);
}
