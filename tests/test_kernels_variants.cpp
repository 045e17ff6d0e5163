// Kernel variants: each one this CPU has is pinned (set_isa, LUCIDQ_ISA), its table is checked to
// hold that variant's kernel of every family, and the API runs them against the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/streaming_metrics.hpp"
#include "kernels/dispatch.hpp"
#include "lucid/quantization.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
namespace K = lucid::quantization::kernels;
namespace W = lucid::quantization::weight_only;

namespace {

constexpr Q::KernelVariant all_variants[] = {
    Q::KernelVariant::reference, Q::KernelVariant::avx2_base, Q::KernelVariant::avx_vnni,
    Q::KernelVariant::avx512_bw, Q::KernelVariant::avx512_vnni};

// The variants this CPU has, detected independently of the library (GCC / Clang builtins).
std::vector<Q::KernelVariant> expected_variants() {
  std::vector<Q::KernelVariant> out{Q::KernelVariant::reference};
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  if (avx2) out.push_back(Q::KernelVariant::avx2_base);
  if (avx2 && __builtin_cpu_supports("avxvnni")) out.push_back(Q::KernelVariant::avx_vnni);
  if (avx512) out.push_back(Q::KernelVariant::avx512_bw);
  if (avx512 && __builtin_cpu_supports("avx512vnni")) out.push_back(Q::KernelVariant::avx512_vnni);
#endif
  return out;
}

bool expected_supported(Q::KernelVariant variant) {
  for (const Q::KernelVariant v : expected_variants()) {
    if (v == variant) return true;
  }
  return false;
}

// What each family of the active table must be for `variant`.
void expect_families(Q::KernelVariant variant) {
  const K::KernelTable& t = K::active();
  EXPECT_EQ(t.variant, variant);
  EXPECT_EQ(t.isa, Q::tier_of(variant));
  EXPECT_EQ(std::string(t.name), Q::to_string(variant));
  switch (variant) {
    case Q::KernelVariant::reference:
      EXPECT_EQ(t.gemm.run, &K::gemm_u8s8_i32_16c4__reference);
      EXPECT_EQ(t.gemm_requantize_row, &K::requantize_row_i32_u8__reference);
      EXPECT_EQ(t.weight_only_f32, &W::weight_only_f32_16c__reference);
      EXPECT_EQ(t.weight_only_u8_few_rows.run, &W::weight_only_u8_16c__reference);
      EXPECT_EQ(t.weight_only_u8_many_rows.run, &W::weight_only_u8_16c__reference);
      EXPECT_EQ(t.accumulate_errors, &K::accumulate_errors__reference);
      EXPECT_EQ(t.histc_indices, &K::histc_indices__reference);
      EXPECT_EQ(t.grid_indices, &K::grid_indices__reference);
      EXPECT_EQ(t.l2_norms, &K::l2_norms__reference);
      break;
#if defined(LUCIDQ_X86_KERNELS)
    case Q::KernelVariant::avx2_base:
    case Q::KernelVariant::avx_vnni:
      EXPECT_EQ(t.gemm.run, variant == Q::KernelVariant::avx_vnni ? &K::gemm_u8s8_i32_16c4__avx_vnni
                                                                  : &K::gemm_u8s8_i32_16c4__avx2);
      // Whole 3-panel slices in every small-M tile (no 1-vector edge tile).
      EXPECT_EQ(t.gemm.small_m_panels % 3, 0);
      EXPECT_EQ(t.gemm_requantize_row, &K::requantize_row_i32_u8__avx2);
      EXPECT_EQ(t.weight_only_f32, &W::weight_only_f32_16c__avx2);
      EXPECT_EQ(t.weight_only_u8_few_rows.run, &W::weight_only_u8_16c__avx2);
      EXPECT_EQ(t.weight_only_u8_many_rows.run, &W::weight_only_u8_16c__avx2);
      EXPECT_EQ(t.accumulate_errors, &K::accumulate_errors__avx2);
      EXPECT_EQ(t.histc_indices, &K::histc_indices__avx2);
      EXPECT_EQ(t.grid_indices, &K::grid_indices__avx2);
      EXPECT_EQ(t.l2_norms, &K::l2_norms__avx2);
      break;
    case Q::KernelVariant::avx512_bw:
    case Q::KernelVariant::avx512_vnni: {
      const bool vnni = variant == Q::KernelVariant::avx512_vnni;
      EXPECT_EQ(t.gemm.run,
                vnni ? &K::gemm_u8s8_i32_16c4__avx512_vnni : &K::gemm_u8s8_i32_16c4__avx512_bw);
      EXPECT_EQ(t.gemm_requantize_row, &K::requantize_row_i32_u8__avx512);
      EXPECT_EQ(t.weight_only_f32, &W::weight_only_f32_16c__avx512);
      EXPECT_EQ(t.weight_only_u8_few_rows.run,
                vnni ? &W::weight_only_u8_regs_64c__avx512_vnni : &W::weight_only_u8_16c__avx2);
      EXPECT_EQ(t.weight_only_u8_many_rows.run,
                vnni ? &W::weight_only_u8_tiles_48c__avx512_vnni : &W::weight_only_u8_16c__avx2);
      EXPECT_EQ(t.accumulate_errors, &K::accumulate_errors__avx512);
      EXPECT_EQ(t.histc_indices, &K::histc_indices__avx2);
      EXPECT_EQ(t.grid_indices, &K::grid_indices__avx2);
      EXPECT_EQ(t.l2_norms, &K::l2_norms__avx2);
      break;
    }
#endif
    default:
      ADD_FAILURE() << "no expectation for " << Q::to_string(variant);
  }
  EXPECT_STREQ(Q::igemm::gemm_kernel().name, t.name);
}

// Everything the variant's families compute through the API, for comparison across variants.
struct Results {
  std::vector<std::uint8_t> requantized;                    // gemm → requantized output
  std::vector<float> weight_only_f32, int4_few, int8_many;  // weight_only_gemm paths
  std::vector<float> histogram_qparams;                     // both binnings: scale, zero point
  Q::ErrorMetrics metrics;                                  // streaming error metrics
};

Results run_families(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Results r;
  // int8 GEMM with the requantized output stage (bias, an odd N for the row tails).
  const std::int64_t m = 19, n = 37, k = 75;
  std::vector<std::int8_t> w8(static_cast<std::size_t>(n * k));
  std::uniform_int_distribution<int> code(-128, 127);
  for (auto& v : w8)
    v = static_cast<std::int8_t>(code(rng));
  const float w_scale = 0.01f;
  const auto packed = Q::PackedWeightsInt8::pack(w8.data(), n, k, k, {&w_scale, 1});
  std::vector<std::uint8_t> a(static_cast<std::size_t>(m * k));
  for (auto& v : a)
    v = static_cast<std::uint8_t>(code(rng) + 128);
  std::vector<float> bias(static_cast<std::size_t>(n));
  for (auto& v : bias)
    v = normal(rng);
  Q::ActivationMatrix am{a.data(), Q::ScalarType::uint8, m, k, 0.02f, 120};
  r.requantized.assign(static_cast<std::size_t>(m * n), 0);
  Q::RequantizedOutput out;
  out.data = r.requantized.data();
  out.row_stride = n;
  out.scale = 0.5f;
  out.zero_point = 7;
  out.bias = bias.data();
  Q::gemm(am, packed, out);
  // Weight-only: float activations, int8 activations on int4 codes (few rows) and on int8
  // codes beyond 64 rows (many rows).
  const std::int64_t wn = 40, wk = 256;
  std::vector<float> wf(static_cast<std::size_t>(wn * wk));
  for (auto& v : wf)
    v = normal(rng);
  const auto w4 = Q::PackedWeightsLowBit::quantize(wf.data(), wn, wk, wk, {4, 64, false});
  const auto w8l = Q::PackedWeightsLowBit::quantize(wf.data(), wn, wk, wk, {8, 128, true});
  const std::int64_t rows = 70;
  std::vector<float> x(static_cast<std::size_t>(rows * wk));
  for (auto& v : x)
    v = normal(rng);
  auto product = [&](const Q::PackedWeightsLowBit& w, std::int64_t mr,
                     Q::WeightOnlyActivations path) {
    std::vector<float> y(static_cast<std::size_t>(mr * wn));
    Q::weight_only_gemm(x.data(), mr, wk, w, nullptr, y.data(), wn, {path});
    return y;
  };
  r.weight_only_f32 = product(w4, 5, Q::WeightOnlyActivations::float32);
  r.int4_few = product(w4, 3, Q::WeightOnlyActivations::int8_dynamic);
  r.int8_many = product(w8l, rows, Q::WeightOnlyActivations::int8_dynamic);
  // Histogram observers (histc + L2 search; dyadic grid indices).
  for (const Q::HistogramBinning binning :
       {Q::HistogramBinning::pytorch, Q::HistogramBinning::exact}) {
    Q::HistogramOptions options;
    options.binning = binning;
    Q::HistogramObserver observer({}, options);
    observer.observe(Q::TensorView(x));
    const Q::QParams qp = observer.calculate_qparams();
    r.histogram_qparams.push_back(qp.scale[0]);
    r.histogram_qparams.push_back(static_cast<float>(qp.zero_point[0]));
  }
  // Error sums.
  const Q::QuantizedTensor q =
      Q::quantize(Q::TensorView(x), Q::QParams::per_tensor(0.05f, 3, Q::qint8));
  r.metrics = Q::detail::streaming_error_metrics(Q::TensorView(x), q);
  return r;
}

class Variant : public ::testing::TestWithParam<Q::KernelVariant> {
 protected:
  void SetUp() override {
    if (!expected_supported(GetParam())) {
      GTEST_SKIP() << "variant " << Q::to_string(GetParam()) << " skipped: this CPU ("
                   << Q::cpu_features().describe() << ") does not support it";
    }
  }
  void TearDown() override { Q::set_isa(before_); }
  Q::KernelVariant before_ = Q::active_variant();
};

}  // namespace

TEST(Variants, SupportedVariantsAreTheCpusAndTheDefaultIsTheBest) {
  const std::vector<Q::KernelVariant> expected = expected_variants();
  EXPECT_EQ(Q::supported_variants(), expected) << "CPU features: " << Q::cpu_features().describe();
  const char* pinned = std::getenv("LUCIDQ_ISA");
  if (pinned == nullptr || *pinned == '\0') EXPECT_EQ(Q::active_variant(), expected.back());
  std::string skipped;
  for (const Q::KernelVariant v : all_variants) {
    if (!expected_supported(v)) skipped += (skipped.empty() ? "" : ", ") + Q::to_string(v);
  }
  std::cout << "[ variants ] skipped (unsupported by this CPU): "
            << (skipped.empty() ? "none" : skipped) << "\n";
}

TEST(Variants, NamesRoundTripAndUnknownNamesAreErrors) {
  for (const Q::KernelVariant v : all_variants)
    EXPECT_EQ(Q::kernel_variant_from_string(Q::to_string(v)), v);
  EXPECT_ERROR_CONTAINS(Q::kernel_variant_from_string("avx512"), "\"avx512\" is unknown");
  EXPECT_ERROR_CONTAINS(Q::kernel_variant_from_string("x"),
                        "expected one of reference, avx2_base, avx_vnni, avx512_bw, avx512_vnni");
  for (const Q::KernelVariant v : all_variants) {
    if (!expected_supported(v)) EXPECT_ERROR_CONTAINS(Q::set_isa(v), "not supported by this CPU");
  }
}

TEST_P(Variant, SetIsaPinsItsKernelsAndTheyMatchTheReference) {
  const std::uint64_t seed = Q::testing::test_seed();
  Q::set_isa(Q::KernelVariant::reference);
  const Results reference = run_families(seed);
  Q::set_isa(GetParam());
  EXPECT_EQ(Q::active_variant(), GetParam());
  expect_families(GetParam());
  const Results ours = run_families(seed);
  EXPECT_EQ(ours.requantized, reference.requantized);
  EXPECT_EQ(ours.weight_only_f32.size(), reference.weight_only_f32.size());
  // The float-activation weight-only path is exact only on the reference (docs/numerics.md):
  // the tiers agree within its error bound, far below 1e-3 here.
  for (std::size_t i = 0; i < ours.weight_only_f32.size(); ++i)
    EXPECT_NEAR(ours.weight_only_f32[i], reference.weight_only_f32[i], 1e-3f) << i;
  EXPECT_EQ(ours.int4_few, reference.int4_few);
  EXPECT_EQ(ours.int8_many, reference.int8_many);
  EXPECT_EQ(ours.histogram_qparams, reference.histogram_qparams);
  EXPECT_EQ(ours.metrics.count, reference.metrics.count);
  EXPECT_EQ(ours.metrics.max_abs_error, reference.metrics.max_abs_error);
  EXPECT_EQ(ours.metrics.fraction_saturated, reference.metrics.fraction_saturated);
  EXPECT_NEAR(ours.metrics.mse, reference.metrics.mse, 1e-12 * reference.metrics.mse);
}

INSTANTIATE_TEST_SUITE_P(All, Variant, ::testing::ValuesIn(all_variants),
                         [](const ::testing::TestParamInfo<Q::KernelVariant>& info) {
                           return Q::to_string(info.param);
                         });

// Run by ctest with LUCIDQ_ISA set to each tier and variant name (tests/CMakeLists.txt).
TEST(Environment, LucidqIsaPinsTheVariantAtFirstUse) {
  const char* env = std::getenv("LUCIDQ_ISA");
  if (env == nullptr || *env == '\0') GTEST_SKIP() << "LUCIDQ_ISA is not set";
  const std::string pinned = env;
  for (const Q::Isa tier : {Q::Isa::reference, Q::Isa::avx2, Q::Isa::avx512}) {
    if (pinned != Q::to_string(tier)) continue;
    Q::KernelVariant best = Q::KernelVariant::reference;
    bool has_tier = tier == Q::Isa::reference;
    for (const Q::KernelVariant v : expected_variants()) {
      if (Q::tier_of(v) != tier) continue;
      best = v;
      has_tier = true;
    }
    if (!has_tier) {
      std::cout << "[ variants ] LUCIDQ_ISA=" << pinned << " is beyond this CPU ("
                << Q::cpu_features().describe() << "): checking that it is refused\n";
      EXPECT_ERROR_CONTAINS(Q::active_variant(), "does not support it");
      return;
    }
    EXPECT_EQ(Q::active_variant(), best) << "a tier name pins the tier's best variant";
    expect_families(best);
    return;
  }
  const Q::KernelVariant variant = Q::kernel_variant_from_string(pinned);
  if (!expected_supported(variant)) {
    EXPECT_ERROR_CONTAINS(Q::active_variant(), "does not support it");
    return;
  }
  EXPECT_EQ(Q::active_variant(), variant);
  expect_families(variant);
  const std::uint64_t seed = Q::testing::test_seed();
  const Results ours = run_families(seed);
  Q::set_isa(Q::KernelVariant::reference);
  EXPECT_EQ(ours.requantized, run_families(seed).requantized);
}
