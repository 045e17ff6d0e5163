// Golden tests: the worked numbers of seed 004 (the linear-quantization notes).
#include <gtest/gtest.h>

#include <cmath>

#include "lucid/quantization.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

namespace {
const std::vector<float> kNotesTensor{191.6f,  -13.5f, 728.6f, 92.14f, 295.5f,
                                      -184.0f, 0.0f,   684.6f, 245.5f};
}

TEST(SeedNotes, FixedScaleAndZeroPoint) {
  const Q::TensorView x(kNotesTensor, {3, 3});
  const Q::QParams qp = Q::QParams::per_tensor(3.5f, -70, Q::qint8);
  const Q::QuantizedTensor q = Q::quantize(x, qp);
  EXPECT_EQ(q.int_repr(), (std::vector<std::int32_t>{-15, -74, 127, -44, 14, -123, -70, 126, 0}));
  const Q::Tensor x_hat = Q::dequantize(q);
  const std::vector<float> expected{192.5f,  -14.0f, 689.5f, 91.0f, 294.0f,
                                    -185.5f, 0.0f,   686.0f, 245.0f};
  EXPECT_EQ(std::vector<float>(x_hat.floats().begin(), x_hat.floats().end()), expected);
  EXPECT_NEAR(Q::quantization_error(x, x_hat), 170.8753, 5e-5);
  const Q::ErrorMetrics m = Q::error_metrics(x, q);
  EXPECT_NEAR(m.max_abs_error, 39.1, 1e-4);  // the saturated 728.6 -> 127
  EXPECT_NEAR(m.fraction_saturated, 1.0 / 9.0, 1e-12);
}

TEST(SeedNotes, DerivedAffineQParams) {
  const Q::TensorView x(kNotesTensor, {3, 3});
  const Q::QParams qp = Q::choose_qparams(x, Q::per_tensor_affine, Q::qint8);
  EXPECT_NEAR(qp.scale[0], 3.578823433670343, 1e-6);
  EXPECT_EQ(qp.zero_point[0], -77);
  const Q::Tensor x_hat = Q::dequantize(Q::quantize(x, qp));
  EXPECT_NEAR(Q::quantization_error(x, x_hat), 1.5730, 5e-5);
}

TEST(SeedNotes, SymmetricScaleBothConventions) {
  const std::vector<float> t{-1.1284f, 2.3800f,  -2.2940f, 0.6971f, -0.4221f, -0.4675f,
                             -0.6180f, -1.4234f, 0.0705f,  1.3060f, -1.2461f, 0.2461f,
                             -2.6319f, 1.3008f,  0.9376f,  0.7069f};
  const Q::TensorView x(t, {4, 4});
  // The notes: r_max / q_max with q_max = 127, i.e. the narrow range [-127, 127].
  const Q::QParams narrow = Q::choose_qparams(x, Q::per_tensor_symmetric, Q::qint8.narrow_range());
  // The notes print the tensor to 4 decimals, so r_max is known to +-5e-5: scale to +-4e-7.
  EXPECT_NEAR(narrow.scale[0], 0.020723763413316623, 5e-7);
  // The seed API: max|x| / ((qmax - qmin) / 2) = max|x| / 127.5 on the full range.
  const Q::QParams full = Q::choose_qparams(x, Q::per_tensor_symmetric, Q::qint8);
  EXPECT_NEAR(full.scale[0], 2.6319 / 127.5, 1e-8);
  const auto codes = Q::quantize(x, narrow).int_repr();
  EXPECT_EQ(codes[12], -127);  // -2.6319 lands on the narrow grid's end
}
