// Tests for quantize / dequantize / fake_quantize: rounding, saturation,
// granularities, input types, non-finite input, errors, and the s/2 property.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "lucid/quantization.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

namespace {

std::vector<float> floats_of(const Q::Tensor& t) {
  return {t.floats().begin(), t.floats().end()};
}

// An independent per-element reference: code = clamp(rint(x * (1/s)) + z).
std::int32_t reference_code(float x, float s, std::int32_t z, const Q::QDtype& d) {
  if (std::isnan(x)) return z;
  const float r = std::rint(x * (1.0f / s));
  const double v = static_cast<double>(r) + z;
  if (v < static_cast<double>(d.quant_min())) return static_cast<std::int32_t>(d.quant_min());
  if (v > static_cast<double>(d.quant_max())) return static_cast<std::int32_t>(d.quant_max());
  return static_cast<std::int32_t>(v);
}

}  // namespace

TEST(Quantize, TiesRoundHalfToEven) {
  // x / s = k + 0.5 exactly (s = 1, and s = 0.5 whose reciprocal is exact).
  const std::vector<float> x{0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.5f};
  const auto q = Q::quantize(Q::TensorView(x), Q::QParams::per_tensor(1.0f, 0, Q::qint8));
  EXPECT_EQ(q.int_repr(), (std::vector<std::int32_t>{0, 2, 2, 0, -2, -2, 4}));
  const std::vector<float> halves{0.25f, 0.75f, 1.25f};
  const auto h = Q::quantize(Q::TensorView(halves), Q::QParams::per_tensor(0.5f, 10, Q::quint8));
  EXPECT_EQ(h.int_repr(), (std::vector<std::int32_t>{10, 12, 12}));
}

TEST(Quantize, SaturatesAtBothEnds) {
  const std::vector<float> x{-1000.0f, 1000.0f, -129.0f, 128.0f, -128.0f, 127.0f};
  EXPECT_EQ(Q::quantize(Q::TensorView(x), Q::QParams::per_tensor(1.0f, 0, Q::qint8)).int_repr(),
            (std::vector<std::int32_t>{-128, 127, -128, 127, -128, 127}));
  EXPECT_EQ(Q::quantize(Q::TensorView(x), Q::QParams::per_tensor(1.0f, 0, Q::qint4)).int_repr(),
            (std::vector<std::int32_t>{-8, 7, -8, 7, -8, 7}));
  EXPECT_EQ(Q::quantize(Q::TensorView(x), Q::QParams::per_tensor(1.0f, 0, Q::qint8.narrow_range()))
                .int_repr(),
            (std::vector<std::int32_t>{-127, 127, -127, 127, -127, 127}));
}

TEST(Quantize, NonFiniteInputSaturatesOrMapsToZeroPoint) {
  const std::vector<float> x{NAN, INFINITY, -INFINITY, 1e38f, -1e38f};
  const auto q = Q::quantize(Q::TensorView(x), Q::QParams::per_tensor(1e-30f, 100, Q::quint8));
  EXPECT_EQ(q.int_repr(), (std::vector<std::int32_t>{100, 255, 0, 255, 0}));
  const auto q32 = Q::quantize(Q::TensorView(x), Q::QParams::per_tensor(1e-30f, 0, Q::qint32));
  EXPECT_EQ(q32.int_repr(), (std::vector<std::int32_t>{0, 2147483647, -2147483647 - 1, 2147483647,
                                                       -2147483647 - 1}));
  const auto fq =
      Q::fake_quantize_with_mask(Q::TensorView(x), Q::QParams::per_tensor(1.0f, 0, Q::qint8));
  const auto out = floats_of(fq.output);
  EXPECT_EQ(out, (std::vector<float>{0.0f, 127.0f, -128.0f, 127.0f, -128.0f}));
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(fq.mask.data_as<std::uint8_t>()[i], 0) << i;
}

TEST(Quantize, PerChannelOnEveryAxisOf4D) {
  const auto seed = Q::testing::test_seed();
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const Q::Shape shape{2, 3, 4, 5};
  std::vector<float> x(120);
  for (float& v : x)
    v = normal(rng);
  const Q::TensorView view(x, shape);
  for (int axis : {0, 1, -1, 2, -4}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    const Q::QParams qp = Q::choose_qparams(view, Q::per_channel_affine, Q::quint8, axis);
    const int a = axis < 0 ? axis + 4 : axis;
    ASSERT_EQ(qp.scale.size(), static_cast<std::size_t>(shape[a]));
    const auto codes = Q::quantize(view, qp).int_repr();
    // Walk the indices explicitly to find each element's channel.
    std::int64_t flat = 0;
    for (int i0 = 0; i0 < 2; ++i0)
      for (int i1 = 0; i1 < 3; ++i1)
        for (int i2 = 0; i2 < 4; ++i2)
          for (int i3 = 0; i3 < 5; ++i3, ++flat) {
            const int idx[4] = {i0, i1, i2, i3};
            const auto c = static_cast<std::size_t>(idx[a]);
            ASSERT_EQ(codes[flat],
                      reference_code(x[flat], qp.scale[c], qp.zero_point[c], Q::quint8));
          }
  }
}

TEST(Quantize, PerGroupWithRaggedLastGroup) {
  // x[2, 5], groups of 2 along axis 1 -> groups {0,1}, {2,3}, {4}: parameters [2, 3].
  const std::vector<float> x{1.0f, -2.0f, 10.0f, 20.0f, 0.5f, -100.0f, 50.0f, 3.0f, -3.0f, 7.0f};
  const Q::TensorView view(x, {2, 5});
  const Q::QParams qp = Q::choose_qparams(view, Q::per_channel_symmetric, Q::qint4, 1, 2);
  ASSERT_EQ(qp.scale.size(), 6u);
  EXPECT_EQ(qp.scale[0], 2.0f / 7.5f);
  EXPECT_EQ(qp.scale[1], 20.0f / 7.5f);
  EXPECT_EQ(qp.scale[2], 0.5f / 7.5f);  // the ragged group holds one element
  EXPECT_EQ(qp.scale[3], 100.0f / 7.5f);
  EXPECT_EQ(qp.scale[5], 7.0f / 7.5f);
  const auto q = Q::quantize(view, qp);
  const auto codes = q.int_repr();
  const int slot_of[10] = {0, 0, 1, 1, 2, 3, 3, 4, 4, 5};
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(codes[i], reference_code(x[i], qp.scale[slot_of[i]], 0, Q::qint4)) << i;
  }
  EXPECT_EQ(codes[4], 7);             // 0.5 / (0.5/7.5) = 7.5 -> 8 -> saturates to 7
  EXPECT_EQ(q.storage().size(), 5u);  // ten 4-bit codes packed two per byte
}

TEST(Quantize, HalfAndBFloat16InputsMatchFloat32) {
  const std::vector<float> x{-3.0f, -1.25f, 0.0f, 0.5f, 2.0f, 1000.0f};
  std::vector<std::uint16_t> half(x.size()), bf(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    half[i] = Q::float_to_float16(x[i]);
    bf[i] = Q::float_to_bfloat16(x[i]);
  }
  const Q::QParams qp = Q::QParams::per_tensor(0.25f, 3, Q::qint8);
  const auto want = Q::quantize(Q::TensorView(x), qp).int_repr();
  EXPECT_EQ(Q::quantize(Q::TensorView(half.data(), Q::ScalarType::float16, {6}), qp).int_repr(),
            want);
  EXPECT_EQ(Q::quantize(Q::TensorView(bf.data(), Q::ScalarType::bfloat16, {6}), qp).int_repr(),
            want);
}

TEST(Quantize, EmptyTensorsWork) {
  const std::vector<float> none;
  for (const Q::Shape& shape : {Q::Shape{0}, Q::Shape{0, 4}, Q::Shape{3, 0}}) {
    const Q::TensorView view(none.data(), Q::ScalarType::float32, shape);
    const auto q = Q::quantize(view, Q::per_channel_symmetric, Q::qint4, -1);
    EXPECT_EQ(q.numel(), 0);
    EXPECT_EQ(Q::dequantize(q).numel(), 0);
    EXPECT_EQ(Q::quantize(view, Q::per_tensor_affine, Q::quint8).storage().size(), 0u);
  }
}

TEST(Quantize, BadInputIsAClearError) {
  const std::vector<float> x(6, 1.0f);
  const Q::TensorView view(x, {2, 3});
  EXPECT_ERROR_CONTAINS(Q::quantize(view, Q::QParams::per_channel({1, 1}, {0, 0}, 5, Q::qint8)),
                        "ch_axis = 5 is out of range for a 2-D tensor");
  EXPECT_ERROR_CONTAINS(Q::quantize(view, Q::QParams::per_channel({1, 1}, {0, 0}, 1, Q::qint8)),
                        "2 scales for input shape [2, 3]");
  EXPECT_ERROR_CONTAINS(Q::quantize(view, Q::per_tensor_affine, Q::qint8, 0, 3), "group_size = 3");
  Q::QParams tampered = Q::QParams::per_tensor(1.0f, 0, Q::qint8);
  tampered.scale[0] = -2.0f;
  EXPECT_ERROR_CONTAINS(Q::quantize(view, tampered), "scale[0] = -2");
  const std::int32_t ints[] = {1, 2};
  EXPECT_ERROR_CONTAINS(Q::quantize(Q::TensorView(ints, Q::ScalarType::int32, {2}),
                                    Q::QParams::per_tensor(1.0f, 0, Q::qint8)),
                        "element type int32");
  EXPECT_ERROR_CONTAINS(Q::QuantizedTensor({3}, Q::QParams::per_tensor(1.0f, 0, Q::qint4), {0}),
                        "storage holds 1 bytes but shape [3] of qint4 needs 2");
  EXPECT_ERROR_CONTAINS(
      Q::QuantizedTensor({1}, Q::QParams::per_tensor(1.0f, 0, Q::qint8.narrow_range()), {0x80}),
      "code[0] = -128 is outside qint8[-127,127]");
}

// The constructor for parameters known valid (quantize_per_group's, quantize's) skips the per-entry
// pass but still checks their layout and the storage.
TEST(QuantizedTensor, ValidParamsStillHaveTheirLayoutChecked) {
  const Q::detail::ValidParams valid;
  const auto bytes = [](std::size_t n) { return Q::ByteBuffer::zeroed(n); };
  const Q::QParams groups = Q::QParams::per_group({0.5f, 0.25f}, {0, 0}, 1, 2, Q::qint4);
  const Q::QuantizedTensor ok({1, 4}, groups, bytes(2), valid);
  EXPECT_EQ(ok.qparams().scale.size(), 2u);
  EXPECT_ERROR_CONTAINS(Q::QuantizedTensor({1, 6}, groups, bytes(3), valid),
                        "2 scales for input shape [1, 6]");
  EXPECT_ERROR_CONTAINS(Q::QuantizedTensor({1, 4}, groups, bytes(3), valid),
                        "storage holds 3 bytes but shape [1, 4] of qint4 needs 2");
  Q::QParams uneven = groups;
  uneven.zero_point.push_back(0);
  EXPECT_ERROR_CONTAINS(Q::QuantizedTensor({1, 4}, uneven, bytes(2), valid),
                        "scale has 2 entries but zero_point has 3");
  Q::QParams bad_entry = groups;
  bad_entry.scale[1] = -1.0f;
  // The public constructor checks every entry.
  EXPECT_ERROR_CONTAINS(Q::QuantizedTensor({1, 4}, bad_entry, bytes(2)), "scale[1] = -1");
}

TEST(FakeQuantize, EqualsDequantizeOfQuantizeAndMasksClampedValues) {
  const std::vector<float> x{-200.0f, -1.4f, 0.0f, 0.26f, 126.9f, 127.6f, 300.0f};
  const Q::QParams qp = Q::QParams::per_tensor(1.0f, 0, Q::qint8);
  const auto fq = Q::fake_quantize_with_mask(Q::TensorView(x), qp);
  EXPECT_EQ(floats_of(fq.output), floats_of(Q::dequantize(Q::quantize(Q::TensorView(x), qp))));
  const auto* mask = fq.mask.data_as<std::uint8_t>();
  EXPECT_EQ(std::vector<std::uint8_t>(mask, mask + 7),
            (std::vector<std::uint8_t>{0, 1, 1, 1, 1, 0, 0}));  // 127.6 rounds to 128: clamped
  EXPECT_EQ(floats_of(Q::fake_quantize(Q::TensorView(x), qp)), floats_of(fq.output));
  const std::vector<float> grad{1, 2, 3, 4, 5, 6, NAN};
  const auto g = Q::fake_quantize_backward(Q::TensorView(grad), fq.mask);
  const auto gv = floats_of(g);
  EXPECT_EQ(std::vector<float>(gv.begin(), gv.end() - 1), (std::vector<float>{0, 2, 3, 4, 5, 0}));
  EXPECT_TRUE(std::isnan(gv[6]));  // NaN * 0 stays NaN, as in PyTorch
  EXPECT_ERROR_CONTAINS(Q::fake_quantize_backward(Q::TensorView(grad), Q::TensorView(grad)),
                        "mask has element type float32");
  const std::vector<float> short_grad{1};
  EXPECT_ERROR_CONTAINS(Q::fake_quantize_backward(Q::TensorView(short_grad), fq.mask),
                        "grad_out shape [1] differs from mask shape [7]");
}

// Property: inside the representable range the error is at most s/2 (plus float rounding),
// for every scheme, dtype and granularity.
TEST(Quantize, RoundTripErrorIsAtMostHalfAStep) {
  const auto seed = Q::testing::test_seed();
  std::mt19937_64 rng(seed);
  const Q::QDtype dtypes[] = {Q::qint8,  Q::quint8, Q::qint4,
                              Q::quint4, Q::qint2,  Q::quint2,
                              Q::qint16, Q::qint32, Q::qint8.narrow_range()};
  const Q::QScheme schemes[] = {Q::per_tensor_affine, Q::per_tensor_symmetric,
                                Q::per_channel_affine, Q::per_channel_symmetric};
  for (const Q::QDtype& dtype : dtypes) {
    for (Q::QScheme scheme : schemes) {
      for (std::int64_t group : {std::int64_t{0}, std::int64_t{3}}) {
        if (group && !Q::is_per_channel(scheme)) continue;
        SCOPED_TRACE(dtype.name() + " " + Q::to_string(scheme) + " group " + std::to_string(group));
        std::uniform_real_distribution<float> magnitude(-3.0f, 3.0f);
        std::vector<float> x(4 * 7);
        for (std::size_t i = 0; i < x.size(); ++i)
          x[i] = magnitude(rng) * std::pow(4.0f, float(i / 7));
        const Q::TensorView view(x, {4, 7});
        const Q::QParams qp = Q::choose_qparams(view, scheme, dtype, group ? 1 : 0, group);
        const auto x_hat = floats_of(Q::dequantize(Q::quantize(view, qp)));
        const auto layout_slot = [&](std::size_t i) -> std::size_t {
          if (!Q::is_per_channel(scheme)) return 0;
          if (!group) return i / 7;
          return (i / 7) * 3 + (i % 7) / 3;
        };
        for (std::size_t i = 0; i < x.size(); ++i) {
          const std::size_t s = layout_slot(i);
          const double step = qp.scale[s];
          const double lo = step * (static_cast<double>(dtype.quant_min()) - qp.zero_point[s]);
          const double hi = step * (static_cast<double>(dtype.quant_max()) - qp.zero_point[s]);
          if (x[i] < lo || x[i] > hi) continue;  // outside the grid: saturation, not rounding
          const double slack = 4 * std::numeric_limits<float>::epsilon() * (std::fabs(x[i]) + step);
          ASSERT_LE(std::fabs(static_cast<double>(x_hat[i]) - x[i]), step / 2 + slack)
              << "x=" << x[i] << " scale=" << step << " i=" << i;
        }
      }
    }
  }
}
