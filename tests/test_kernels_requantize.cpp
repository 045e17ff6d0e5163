// requantize: int32 accumulators -> 8-bit codes in double (docs/numerics.md, "Requantization").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "lucid/quantization.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

namespace {

Q::TensorView int32_view(const std::vector<std::int32_t>& acc, Q::Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<std::int64_t>(acc.size())};
  return Q::TensorView(acc.data(), Q::ScalarType::int32, std::move(shape));
}

std::vector<std::int32_t> codes_of(const Q::Tensor& t) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = t.type() == Q::ScalarType::int8 ? t.data_as<std::int8_t>()[i]
                                             : t.data_as<std::uint8_t>()[i];
  }
  return out;
}

// Independent formula: the exact product acc * m (long double holds 64 bits of
// significand, enough for 31 + 24 bits) rounded half to even.
std::int32_t expected_code(std::int32_t acc, float m, std::int32_t z, const Q::QDtype& d) {
  const long double product = static_cast<long double>(acc) * static_cast<long double>(m);
  const long double rounded = std::nearbyint(product) + z;
  return static_cast<std::int32_t>(std::clamp<long double>(
      rounded, static_cast<long double>(d.quant_min()), static_cast<long double>(d.quant_max())));
}

}  // namespace

TEST(Requantize, TiesRoundToEvenAndSaturate) {
  const std::vector<std::int32_t> acc{1, 3, 5, -1, -3, -5, 1000, -1000, 254, 256};
  const Q::Tensor q = Q::requantize(int32_view(acc), 0.5f, 0, Q::qint8);
  EXPECT_EQ(q.type(), Q::ScalarType::int8);
  EXPECT_EQ(codes_of(q), (std::vector<std::int32_t>{0, 2, 2, 0, -2, -2, 127, -128, 127, 127}));
  const Q::Tensor u = Q::requantize(int32_view(acc), 0.5f, 10, Q::quint8);
  EXPECT_EQ(u.type(), Q::ScalarType::uint8);
  EXPECT_EQ(codes_of(u), (std::vector<std::int32_t>{10, 12, 12, 10, 8, 8, 255, 0, 137, 138}));
  const Q::Tensor narrow = Q::requantize(int32_view(acc), 1.0f, 0, Q::qint8.narrow_range());
  EXPECT_EQ(codes_of(narrow)[7], -127);
}

TEST(Requantize, UsesTheExactProductForLargeAccumulators) {
  // 2^24 + 1 is not a float32: a float computation would give 2^24 * m.
  const std::int32_t big = (1 << 24) + 1;
  const std::vector<std::int32_t> acc{big, -big, std::numeric_limits<std::int32_t>::min()};
  const float m = std::ldexp(1.0f, -17);  // big * m = 128 + 2^-17: rounds to 128, clamped
  EXPECT_EQ(codes_of(Q::requantize(int32_view(acc), m, -2, Q::qint8)),
            (std::vector<std::int32_t>{126 /* 128 - 2, inside */, -128, -128}));
  const std::vector<std::int32_t> half_step{(1 << 25) + 1};  // * 2^-26 = 0.5 + 2^-26 -> 1
  EXPECT_EQ(codes_of(Q::requantize(int32_view(half_step), std::ldexp(1.0f, -26), 0, Q::qint8)),
            (std::vector<std::int32_t>{1}));
}

TEST(Requantize, MatchesTheIndependentFormulaOnRandomInput) {
  std::mt19937_64 rng(Q::testing::test_seed());
  std::uniform_int_distribution<std::int32_t> acc_of(std::numeric_limits<std::int32_t>::min(),
                                                     std::numeric_limits<std::int32_t>::max());
  std::uniform_real_distribution<float> m_of(1e-9f, 1e-3f);
  for (const Q::QDtype& dtype : {Q::qint8, Q::quint8, Q::quint8.with_range(0, 100)}) {
    std::vector<std::int32_t> acc(1000);
    for (auto& a : acc)
      a = acc_of(rng) >> (rng() % 31);
    const float m = m_of(rng);
    const auto z = static_cast<std::int32_t>(dtype.quant_min() + 7);
    const std::vector<std::int32_t> codes = codes_of(Q::requantize(int32_view(acc), m, z, dtype));
    for (std::size_t i = 0; i < acc.size(); ++i)
      ASSERT_EQ(codes[i], expected_code(acc[i], m, z, dtype)) << "acc " << acc[i] << " m " << m;
  }
}

TEST(Requantize, PerChannelAlongInnerAndOuterAxes) {
  const std::vector<std::int32_t> acc{10, 20, 30, 40, 50, 60};  // shape [2, 3]
  const std::vector<float> row_m{0.1f, 1.0f};
  const std::vector<std::int32_t> row_z{0, 1};
  EXPECT_EQ(codes_of(Q::requantize(int32_view(acc, {2, 3}), row_m, row_z, 0, Q::qint8)),
            (std::vector<std::int32_t>{1, 2, 3, 41, 51, 61}));
  const std::vector<float> col_m{1.0f, 0.5f, 0.25f};
  const std::vector<std::int32_t> col_z{0, 0, -3};
  EXPECT_EQ(codes_of(Q::requantize(int32_view(acc, {2, 3}), col_m, col_z, -1, Q::qint8)),
            (std::vector<std::int32_t>{10, 10, 5, 40, 25, 12}));
}

TEST(Requantize, RowFunctionsWriteOnlyTheirRow) {
  const std::vector<std::int32_t> acc{4, 5, 6, 7};
  std::vector<std::uint8_t> out(6, 0xee);
  Q::requantize_row(acc.data(), 4, 0.5f, 1, Q::quint8, out.data() + 1);
  EXPECT_EQ(out, (std::vector<std::uint8_t>{0xee, 3, 3, 4, 5, 0xee}));
  const std::vector<float> m{1.0f, 1.0f, 2.0f, 2.0f};
  const std::vector<std::int32_t> z{0, -1, 0, 1};
  std::vector<std::int8_t> signed_out(4);
  Q::requantize_row(acc.data(), 4, m.data(), z.data(), Q::qint8, signed_out.data());
  EXPECT_EQ(signed_out, (std::vector<std::int8_t>{4, 4, 12, 15}));
  EXPECT_ERROR_CONTAINS(Q::requantize_row(acc.data(), 4, 1.0f, 0, Q::qint4, out.data()),
                        "requantize_row: qdtype = qint4");
}

TEST(Requantize, RejectsBadArguments) {
  const std::vector<std::int32_t> acc{1, 2};
  const std::vector<float> floats{1.0f, 2.0f};
  EXPECT_ERROR_CONTAINS(Q::requantize(Q::TensorView(floats), 1.0f, 0, Q::qint8),
                        "acc has element type float32 (expected int32)");
  EXPECT_ERROR_CONTAINS(Q::requantize(int32_view(acc), 1.0f, 0, Q::qint16), "8-bit grid");
  EXPECT_ERROR_CONTAINS(Q::requantize(int32_view(acc), 0.0f, 0, Q::qint8), "multiplier[0] = 0");
  EXPECT_ERROR_CONTAINS(Q::requantize(int32_view(acc), NAN, 0, Q::qint8), "finite value > 0");
  EXPECT_ERROR_CONTAINS(Q::requantize(int32_view(acc), 1.0f, 300, Q::quint8),
                        "zero_point[0] = 300 is outside quint8");
  const std::vector<float> one_m{1.0f};
  const std::vector<std::int32_t> one_z{0};
  EXPECT_ERROR_CONTAINS(Q::requantize(int32_view(acc), one_m, one_z, 0, Q::qint8),
                        "(expected 2 of each)");
  EXPECT_ERROR_CONTAINS(Q::requantize(int32_view(acc), one_m, one_z, 4, Q::qint8), "ch_axis = 4");
}
