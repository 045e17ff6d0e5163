// Run-time dispatch and threads: CPU detection, the best tier being the one in use and
// tested, pinning tiers (set_isa, LUCIDQ_ISA), thread counts (set_num_threads, LUCIDQ_NUM_THREADS).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "lucid/quantization.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

namespace {

// The best tier, detected independently of the library (GCC / Clang builtins).
Q::Isa expected_best_isa() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  if (avx512) return Q::Isa::avx512;
  if (avx2) return Q::Isa::avx2;
#endif
  return Q::Isa::reference;
}

bool env_set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

}  // namespace

// The kernel suites (test_kernels, test_kernels_api) run every tier in
// supported_isas(); this test fails when the best tier the CPU has is missing
// from that list, so it can never go untested, and reports the skipped tiers.
TEST(Dispatch, BestTierTheCpuSupportsIsSupportedAndDefault) {
  const std::vector<Q::Isa> supported = Q::supported_isas();
  ASSERT_FALSE(supported.empty());
  EXPECT_EQ(supported.front(), Q::Isa::reference);
  EXPECT_EQ(supported.back(), expected_best_isa())
      << "CPU features: " << Q::cpu_features().describe();
  if (!env_set("LUCIDQ_ISA")) EXPECT_EQ(Q::active_isa(), expected_best_isa());
  std::string skipped;
  for (const Q::Isa isa : {Q::Isa::avx2, Q::Isa::avx512}) {
    if (std::find(supported.begin(), supported.end(), isa) == supported.end())
      skipped += (skipped.empty() ? "" : ", ") + Q::to_string(isa);
  }
  std::cout << "[ tiers ] tested: reference";
  for (std::size_t i = 1; i < supported.size(); ++i)
    std::cout << ", " << Q::to_string(supported[i]);
  std::cout << "; skipped (unsupported by this CPU): " << (skipped.empty() ? "none" : skipped)
            << "\n";
  ::testing::Test::RecordProperty("skipped_tiers", skipped.empty() ? "none" : skipped);
}

TEST(Dispatch, FeaturesAreConsistent) {
  const Q::CpuFeatures f = Q::cpu_features();
  if (f.avx512bw || f.avx512vl || f.avx512vnni || f.avx512bf16 || f.avx512vbmi) {
    EXPECT_TRUE(f.avx512f);
  }
  const std::string text = f.describe();
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.find("avx512f") != std::string::npos, f.avx512f) << text;
  EXPECT_EQ(text.find("avx2") != std::string::npos, f.avx2) << text;
}

TEST(Dispatch, SetIsaPinsEverySupportedTier) {
  const Q::Isa before = Q::active_isa();
  for (const Q::Isa isa : Q::supported_isas()) {
    Q::set_isa(isa);
    EXPECT_EQ(Q::active_isa(), isa);
  }
  for (const Q::Isa isa : {Q::Isa::avx2, Q::Isa::avx512}) {
    const std::vector<Q::Isa> supported = Q::supported_isas();
    if (std::find(supported.begin(), supported.end(), isa) == supported.end()) {
      EXPECT_ERROR_CONTAINS(Q::set_isa(isa), "not supported by this CPU");
    }
  }
  Q::set_isa(before);
}

TEST(Dispatch, IsaNamesRoundTripAndUnknownNamesAreErrors) {
  for (const Q::Isa isa : {Q::Isa::reference, Q::Isa::avx2, Q::Isa::avx512})
    EXPECT_EQ(Q::isa_from_string(Q::to_string(isa)), isa);
  EXPECT_ERROR_CONTAINS(Q::isa_from_string("avx1024"), "\"avx1024\" is unknown");
  EXPECT_ERROR_CONTAINS(Q::isa_from_string(""), "expected one of reference, avx2, avx512");
}

TEST(Threads, SetNumThreadsValidatesAndApplies) {
  const int before = Q::num_threads();
  EXPECT_GE(before, 1);
  EXPECT_ERROR_CONTAINS(Q::set_num_threads(0), "set_num_threads: count = 0");
  EXPECT_ERROR_CONTAINS(Q::set_num_threads(-3), "expected >= 1");
  Q::set_num_threads(1);
  EXPECT_EQ(Q::num_threads(), 1);
  Q::set_num_threads(2);
  EXPECT_EQ(Q::num_threads(), LUCIDQ_TEST_WITH_OPENMP ? 2 : 1);
  Q::set_num_threads(before);
}

#ifndef LUCIDQ_TEST_WITH_OPENMP
#error "tests/CMakeLists.txt defines LUCIDQ_TEST_WITH_OPENMP (whether the library uses OpenMP)"
#endif

// Run by ctest with LUCIDQ_ISA / LUCIDQ_NUM_THREADS set (tests/CMakeLists.txt);
// skipped when the variables are absent.
TEST(Environment, LucidqIsaPinsTheTierAtFirstUse) {
  if (!env_set("LUCIDQ_ISA")) GTEST_SKIP() << "LUCIDQ_ISA is not set";
  const std::string pinned = std::getenv("LUCIDQ_ISA");
  if (pinned == "bogus") {
    EXPECT_ERROR_CONTAINS(Q::active_isa(), "LUCIDQ_ISA: kernel tier \"bogus\" is unknown");
    const std::vector<float> x{1.0f};
    EXPECT_ERROR_CONTAINS(Q::quantize(Q::TensorView(x), Q::QParams::per_tensor(1, 0, Q::qint8)),
                          "LUCIDQ_ISA");
    return;
  }
  // A tier this CPU lacks (detected independently of the library) must be refused with
  // the documented message, never silently replaced or crash.
  const Q::Isa wanted = Q::isa_from_string(pinned);
  if (wanted > expected_best_isa()) {
    std::cout << "[ tiers ] LUCIDQ_ISA=" << pinned << " is beyond this CPU (best tier "
              << Q::to_string(expected_best_isa()) << "): checking that it is refused\n";
    EXPECT_ERROR_CONTAINS(Q::active_isa(), "LUCIDQ_ISA = \"" + pinned + "\" but this CPU (");
    EXPECT_ERROR_CONTAINS(Q::active_isa(), "does not support it");
    return;
  }
  EXPECT_EQ(Q::to_string(Q::active_isa()), pinned);
}

TEST(Environment, LucidqNumThreadsSetsTheDefault) {
  if (!env_set("LUCIDQ_NUM_THREADS")) GTEST_SKIP() << "LUCIDQ_NUM_THREADS is not set";
  const std::string text = std::getenv("LUCIDQ_NUM_THREADS");
  if (text == "zero") {
    EXPECT_ERROR_CONTAINS(Q::num_threads(), "LUCIDQ_NUM_THREADS = \"zero\"");
    return;
  }
  EXPECT_EQ(Q::num_threads(), LUCIDQ_TEST_WITH_OPENMP ? std::stoi(text) : 1);
}
