// Tests for ScalarType names and the float16 / bfloat16 conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "lucid/quantization/scalar_type.hpp"
#include "lucid/quantization/tensor.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

namespace {
std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float float_of(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
}  // namespace

TEST(ScalarType, NamesAndSizes) {
  EXPECT_EQ(Q::element_size(Q::ScalarType::bfloat16), 2u);
  EXPECT_EQ(Q::element_size(Q::ScalarType::uint64), 8u);
  EXPECT_EQ(Q::to_string(Q::ScalarType::float16), "float16");
  EXPECT_EQ(Q::scalar_type_from_string("bf16"), Q::ScalarType::bfloat16);
  EXPECT_TRUE(Q::is_floating_point(Q::ScalarType::float64));
  EXPECT_FALSE(Q::is_floating_point(Q::ScalarType::int32));
  EXPECT_ERROR_CONTAINS(Q::scalar_type_from_string("f8"), "\"f8\"");
}

TEST(Float16, EveryHalfRoundTripsThroughFloat) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = Q::float16_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Q::float16_to_float(Q::float_to_float16(f)))) << h;
      continue;
    }
    ASSERT_EQ(Q::float_to_float16(f), h) << "half bits " << h;
  }
}

TEST(Float16, KnownValues) {
  EXPECT_EQ(Q::float16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(Q::float16_to_float(0xc000), -2.0f);
  EXPECT_EQ(Q::float16_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(Q::float16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(Q::float16_to_float(0x7c00)));
  EXPECT_EQ(Q::float_to_float16(65519.0f), 0x7bff);                      // rounds down to max
  EXPECT_EQ(Q::float_to_float16(65520.0f), 0x7c00);                      // ties to even -> Inf
  EXPECT_EQ(Q::float_to_float16(std::ldexp(1.0f, -25)), 0x0000);         // tie to even 0
  EXPECT_EQ(Q::float_to_float16(std::ldexp(1.5f, -25)), 0x0001);         // above the tie
  EXPECT_EQ(Q::float_to_float16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even
  EXPECT_EQ(Q::float_to_float16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(Float16, RoundingMatchesNearestEvenOnRandomFloats) {
  const auto seed = Q::testing::test_seed();
  std::mt19937_64 rng(seed);
  for (int n = 0; n < 200000; ++n) {
    // Random finite floats in the half range, compared with a double-based reference.
    const float f = float_of(static_cast<std::uint32_t>(rng()) & 0xc7ffffffu);
    if (!std::isfinite(f) || std::fabs(f) >= 65504.0f) continue;
    const std::uint16_t h = Q::float_to_float16(f);
    const double got = Q::float16_to_float(h);
    const double next = Q::float16_to_float(static_cast<std::uint16_t>(h + 1));
    const double prev = Q::float16_to_float(static_cast<std::uint16_t>(h - 1));
    const double error = std::fabs(got - f);
    // Nearest: no neighbour is strictly closer (neighbours in the same sign direction).
    if ((h & 0x7fff) != 0x7bff) ASSERT_LE(error, std::fabs(next - f)) << f;
    if ((h & 0x7fff) != 0) ASSERT_LE(error, std::fabs(prev - f)) << f;
  }
}

TEST(BFloat16, RoundsToNearestEvenAndKeepsNaN) {
  EXPECT_EQ(Q::float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(Q::float_to_bfloat16(float_of(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(Q::float_to_bfloat16(float_of(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(Q::float_to_bfloat16(float_of(0x3f808001u)), 0x3f81);
  EXPECT_TRUE(std::isnan(Q::bfloat16_to_float(Q::float_to_bfloat16(NAN))));
  EXPECT_TRUE(std::isnan(Q::bfloat16_to_float(Q::float_to_bfloat16(float_of(0x7f800001u)))));
  EXPECT_EQ(Q::bfloat16_to_float(0x4040), 3.0f);
  EXPECT_EQ(bits_of(Q::bfloat16_to_float(Q::float_to_bfloat16(-0.0f))), 0x80000000u);
}

TEST(Tensor, ShapesAndAxes) {
  EXPECT_EQ(Q::shape_numel({}), 1);
  EXPECT_EQ(Q::shape_numel({2, 0, 3}), 0);
  EXPECT_ERROR_CONTAINS(Q::shape_numel({2, -1}), "dimension 1 = -1");
  EXPECT_ERROR_CONTAINS(Q::shape_numel({1LL << 40, 1LL << 40}), "overflows");
  EXPECT_EQ(Q::shape_numel({1LL << 31, 1LL << 31}), 1LL << 62);
  EXPECT_ERROR_CONTAINS(Q::shape_numel({1LL << 62, 2}), "overflows");
  EXPECT_EQ(Q::shape_numel({0, 1LL << 62, 1LL << 62}), 0);
  EXPECT_EQ(Q::normalize_axis(-1, 4, "axis"), 3);
  EXPECT_ERROR_CONTAINS(Q::normalize_axis(4, 4, "ch_axis"), "ch_axis = 4");
  EXPECT_ERROR_CONTAINS(Q::normalize_axis(-5, 4, "ch_axis"), "-4 <= axis < 4");
  EXPECT_ERROR_CONTAINS(Q::Tensor::from_floats({1, 2, 3}, {2, 2}), "holds 4 elements but 3");
}

TEST(Tensor, ToFloat32ConvertsEachFloatTypeAndRejectsIntegers) {
  const std::uint16_t halves[] = {0x3c00, 0xc000};
  EXPECT_EQ(Q::to_float32(Q::TensorView(halves, Q::ScalarType::float16, {2}), "x"),
            (std::vector<float>{1.0f, -2.0f}));
  const std::uint16_t bf[] = {0x3f80, 0x4040};
  EXPECT_EQ(Q::to_float32(Q::TensorView(bf, Q::ScalarType::bfloat16, {2}), "x"),
            (std::vector<float>{1.0f, 3.0f}));
  const double wide[] = {0.5, -4.0};
  EXPECT_EQ(Q::to_float32(Q::TensorView(wide, Q::ScalarType::float64, {2}), "x"),
            (std::vector<float>{0.5f, -4.0f}));
  const std::int32_t ints[] = {1};
  EXPECT_ERROR_CONTAINS(Q::to_float32(Q::TensorView(ints, Q::ScalarType::int32, {1}), "weights"),
                        "weights: element type int32");
}
