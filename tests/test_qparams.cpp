// Tests for QParams, calculate_qparams, observe_range and choose_qparams.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "lucid/quantization/qparams.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

TEST(CalculateQParams, AffineFormulaInFloat32) {
  const Q::QParams q = Q::calculate_qparams(-184.0f, 728.6f, Q::per_tensor_affine, Q::qint8);
  const float expected_scale = (728.6f - (-184.0f)) / 255.0f;
  EXPECT_EQ(q.scale[0], expected_scale);
  EXPECT_EQ(q.zero_point[0], -77);
  EXPECT_EQ(q.qscheme, Q::per_tensor_affine);
  EXPECT_EQ(q.qdtype, Q::qint8);
}

TEST(CalculateQParams, RangeIsWidenedToIncludeZero) {
  const Q::QParams positive = Q::calculate_qparams(2.0f, 6.0f, Q::per_tensor_affine, Q::quint8);
  EXPECT_EQ(positive.scale[0], 6.0f / 255.0f);
  EXPECT_EQ(positive.zero_point[0], 0);
  const Q::QParams negative = Q::calculate_qparams(-6.0f, -2.0f, Q::per_tensor_affine, Q::quint8);
  EXPECT_EQ(negative.scale[0], 6.0f / 255.0f);
  EXPECT_EQ(negative.zero_point[0], 255);
}

TEST(CalculateQParams, SymmetricSignedAndUnsigned) {
  const Q::QParams s8 = Q::calculate_qparams(-2.0f, 1.0f, Q::per_tensor_symmetric, Q::qint8);
  EXPECT_EQ(s8.scale[0], 2.0f / 127.5f);
  EXPECT_EQ(s8.zero_point[0], 0);
  const Q::QParams u8 = Q::calculate_qparams(-2.0f, 1.0f, Q::per_tensor_symmetric, Q::quint8);
  EXPECT_EQ(u8.scale[0], 2.0f / 127.5f);
  EXPECT_EQ(u8.zero_point[0], 128);
  const Q::QParams narrow =
      Q::calculate_qparams(-2.0f, 1.0f, Q::per_tensor_symmetric, Q::qint8.narrow_range());
  EXPECT_EQ(narrow.scale[0], 2.0f / 127.0f);
  EXPECT_EQ(narrow.zero_point[0], 0);
  const Q::QParams u4 = Q::calculate_qparams(0.0f, 3.0f, Q::per_tensor_symmetric, Q::quint4);
  EXPECT_EQ(u4.scale[0], 3.0f / 7.5f);
  EXPECT_EQ(u4.zero_point[0], 8);
}

TEST(CalculateQParams, ScaleIsFlooredAtEps) {
  const Q::QParams zero = Q::calculate_qparams(0.0f, 0.0f, Q::per_tensor_affine, Q::quint8);
  EXPECT_EQ(zero.scale[0], FLT_EPSILON);
  EXPECT_EQ(zero.zero_point[0], 0);
  const Q::QParams tiny = Q::calculate_qparams(-1e-30f, 1e-30f, Q::per_tensor_symmetric, Q::qint8);
  EXPECT_EQ(tiny.scale[0], FLT_EPSILON);
  const Q::QParams custom = Q::calculate_qparams(0.0f, 0.0f, Q::per_tensor_affine, Q::quint8, 0.5f);
  EXPECT_EQ(custom.scale[0], 0.5f);
}

TEST(CalculateQParams, ExtremeRangesGiveFiniteScales) {
  const Q::QParams q = Q::calculate_qparams(-FLT_MAX, FLT_MAX, Q::per_tensor_affine, Q::quint8);
  EXPECT_TRUE(std::isfinite(q.scale[0]));
  EXPECT_GT(q.scale[0], 0.0f);
  EXPECT_NEAR(q.scale[0], 2.0 * FLT_MAX / 255.0, 1e-6 * FLT_MAX);
  EXPECT_EQ(q.zero_point[0], 128);
  const Q::QParams s = Q::calculate_qparams(-FLT_MAX, FLT_MAX, Q::per_tensor_symmetric, Q::qint32);
  EXPECT_TRUE(std::isfinite(s.scale[0]));
}

TEST(CalculateQParams, BadArgumentsAreClearErrors) {
  EXPECT_ERROR_CONTAINS(Q::calculate_qparams(NAN, 1.0f, Q::per_tensor_affine, Q::qint8),
                        "min = nan");
  EXPECT_ERROR_CONTAINS(Q::calculate_qparams(0.0f, INFINITY, Q::per_tensor_affine, Q::qint8),
                        "max = inf");
  EXPECT_ERROR_CONTAINS(Q::calculate_qparams(2.0f, 1.0f, Q::per_tensor_affine, Q::qint8),
                        "min = 2 is greater than max = 1");
  EXPECT_ERROR_CONTAINS(Q::calculate_qparams(0.0f, 1.0f, Q::per_tensor_affine, Q::qint8, 0.0f),
                        "eps = 0");
  EXPECT_ERROR_CONTAINS(Q::calculate_qparams(0.0f, 1.0f, Q::per_channel_affine, Q::qint8),
                        "per-channel min / max vectors");
  const float mins[] = {0.0f, -1.0f};
  const float maxs[] = {1.0f};
  EXPECT_ERROR_CONTAINS(Q::calculate_qparams(mins, maxs, Q::per_channel_affine, Q::qint8),
                        "min has 2 channels but max has 1");
  EXPECT_ERROR_CONTAINS(Q::calculate_qparams(mins, mins, Q::per_tensor_affine, Q::qint8),
                        "expected a per-channel scheme");
}

TEST(CalculateQParams, PerChannelVectors) {
  const float mins[] = {-1.0f, 0.0f, -4.0f};
  const float maxs[] = {1.0f, 2.0f, 0.0f};
  const Q::QParams q = Q::calculate_qparams(mins, maxs, Q::per_channel_symmetric, Q::qint8, 1);
  ASSERT_EQ(q.scale.size(), 3u);
  EXPECT_EQ(q.scale[0], 1.0f / 127.5f);
  EXPECT_EQ(q.scale[1], 2.0f / 127.5f);
  EXPECT_EQ(q.scale[2], 4.0f / 127.5f);
  EXPECT_EQ(q.ch_axis, 1);
  EXPECT_EQ(q.zero_point, (Q::ParamArray<std::int32_t>{0, 0, 0}));
  const float nan_max[] = {1.0f, NAN, 0.0f};
  EXPECT_ERROR_CONTAINS(Q::calculate_qparams(mins, nan_max, Q::per_channel_affine, Q::qint8),
                        "channel 1: max = nan");
}

TEST(QParams, FactoriesValidate) {
  EXPECT_ERROR_CONTAINS(Q::QParams::per_tensor(0.0f, 0, Q::qint8), "scale[0] = 0");
  EXPECT_ERROR_CONTAINS(Q::QParams::per_tensor(-1.0f, 0, Q::qint8), "scale[0] = -1");
  EXPECT_ERROR_CONTAINS(Q::QParams::per_tensor(NAN, 0, Q::qint8), "scale[0] = nan");
  EXPECT_ERROR_CONTAINS(Q::QParams::per_tensor(INFINITY, 0, Q::qint8), "scale[0] = inf");
  EXPECT_ERROR_CONTAINS(Q::QParams::per_tensor(1.0f, 300, Q::quint8), "zero_point[0] = 300");
  EXPECT_ERROR_CONTAINS(Q::QParams::per_tensor(1.0f, 3, Q::qint8, Q::per_tensor_symmetric),
                        "expected 0, the pinned zero point");
  EXPECT_ERROR_CONTAINS(Q::QParams::per_tensor(1.0f, 0, Q::qint8, Q::per_channel_affine),
                        "expected per_tensor_affine or per_tensor_symmetric");
  EXPECT_ERROR_CONTAINS(Q::QParams::per_channel({1.0f, 2.0f}, {0}, 0, Q::qint8),
                        "scale has 2 entries but zero_point has 1");
  EXPECT_ERROR_CONTAINS(Q::QParams::per_group({1.0f}, {0}, 0, -2, Q::qint8), "group_size = -2");
  EXPECT_ERROR_CONTAINS(Q::QParams::per_group({1.0f}, {0}, 0, 0, Q::qint8), "group_size = 0");
}

TEST(QParams, ValidateForShape) {
  const Q::QParams pc = Q::QParams::per_channel({1, 1, 1}, {0, 0, 0}, -1, Q::qint8);
  EXPECT_NO_THROW(pc.validate_for({2, 3}));
  EXPECT_ERROR_CONTAINS(pc.validate_for({3, 2}), "3 scales for input shape [3, 2]");
  EXPECT_ERROR_CONTAINS(pc.validate_for({3, 2}), "parameter shape [2]");
  const Q::QParams bad_axis = Q::QParams::per_channel({1, 1, 1}, {0, 0, 0}, 2, Q::qint8);
  EXPECT_ERROR_CONTAINS(bad_axis.validate_for({2, 3}), "ch_axis = 2 is out of range");
  // Per-group: shape [2, 5] grouped by 2 along axis 1 -> parameters [2, 3].
  const Q::QParams pg = Q::QParams::per_group(std::vector<float>(6, 1.0f),
                                              std::vector<std::int32_t>(6, 0), 1, 2, Q::qint8);
  EXPECT_EQ(pg.param_shape({2, 5}), (Q::Shape{2, 3}));
  EXPECT_NO_THROW(pg.validate_for({2, 5}));
  EXPECT_ERROR_CONTAINS(pg.validate_for({2, 4}), "parameter shape [2, 2]");
}

TEST(ObserveRange, SkipsAndCountsNonFinite) {
  const std::vector<float> x{1.0f, NAN, -3.0f, INFINITY, 2.0f, -INFINITY};
  const Q::RangeStats s = Q::observe_range(Q::TensorView(x), Q::per_tensor_affine);
  EXPECT_EQ(s.min[0], -3.0f);
  EXPECT_EQ(s.max[0], 2.0f);
  EXPECT_EQ(s.nonfinite_count, 3);
  const std::vector<float> all_bad{NAN, INFINITY};
  const Q::QParams q = Q::choose_qparams(Q::TensorView(all_bad), Q::per_tensor_affine, Q::quint8);
  EXPECT_TRUE(std::isfinite(q.scale[0]));
  EXPECT_GT(q.scale[0], 0.0f);
}

TEST(ObserveRange, PerChannelAndPerGroupSlots) {
  // x[2, 3] = [[1, -2, 3], [-4, 5, -6]]
  const std::vector<float> x{1, -2, 3, -4, 5, -6};
  const Q::TensorView v(x, {2, 3});
  const Q::RangeStats rows = Q::observe_range(v, Q::per_channel_affine, 0);
  EXPECT_EQ(rows.min, (Q::ParamArray<float>{-2, -6}));
  EXPECT_EQ(rows.max, (Q::ParamArray<float>{3, 5}));
  const Q::RangeStats cols = Q::observe_range(v, Q::per_channel_affine, -1);
  EXPECT_EQ(cols.min, (Q::ParamArray<float>{-4, -2, -6}));
  EXPECT_EQ(cols.max, (Q::ParamArray<float>{1, 5, 3}));
  // Groups of 2 along axis 1: slots [2, 2] = {row0: (1,-2), (3)}, {row1: (-4,5), (-6)}.
  const Q::RangeStats groups = Q::observe_range(v, Q::per_channel_affine, 1, 2);
  EXPECT_EQ(groups.min, (Q::ParamArray<float>{-2, 3, -4, -6}));
  EXPECT_EQ(groups.max, (Q::ParamArray<float>{1, 3, 5, -6}));
  EXPECT_ERROR_CONTAINS(Q::observe_range(v, Q::per_tensor_affine, 0, 4), "group_size = 4");
}

TEST(ChooseQParams, EmptyAndConstantTensors) {
  const std::vector<float> none;
  const Q::QParams empty =
      Q::choose_qparams(Q::TensorView(none, {0}), Q::per_tensor_affine, Q::qint8);
  EXPECT_EQ(empty.scale[0], FLT_EPSILON);
  const std::vector<float> constant(7, 5.0f);
  const Q::QParams c = Q::choose_qparams(Q::TensorView(constant), Q::per_tensor_affine, Q::qint8);
  EXPECT_EQ(c.scale[0], 5.0f / 255.0f);
  const Q::QParams pc =
      Q::choose_qparams(Q::TensorView(constant, {7, 1}), Q::per_channel_symmetric, Q::qint4, 0);
  EXPECT_EQ(pc.scale.size(), 7u);
  for (float s : pc.scale)
    EXPECT_EQ(s, 5.0f / 7.5f);
}

TEST(Describe, NamesSchemeDtypeAndGranularity) {
  const Q::QParams pg = Q::QParams::per_group({1, 1}, {0, 0}, 1, 32, Q::qint4);
  EXPECT_EQ(Q::describe(pg), "per_channel_symmetric qint4 ch_axis=1 group_size=32");
}

// QParams' arrays: small ones from the heap, 1 MiB and more in huge-page mappings that a later
// array of the same length reuses; values, copies and growth behave as std::vector's.
TEST(ParamArray, LargeArraysAreHugePageMappingsReusedByTheNextOne) {
  Q::release_cached_buffers();
  Q::ParamArray<std::int32_t> small(1000, 7);
  EXPECT_EQ(std::count(small.begin(), small.end(), 7), 1000);
  small.push_back(-3);
  EXPECT_EQ(small.back(), -3);

#if defined(__linux__)
  const Q::ParamArray<std::int32_t> medium(std::size_t{300} << 10, 1);  // 1.2 MB: mapped too
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(medium.data()) % (std::uintptr_t{2} << 20), 0u);
#endif

  const std::size_t count = std::size_t{3} << 20;  // 12 MiB of floats
  const float* first_data = nullptr;
  {
    Q::ParamArray<float> large(count, 1.5f);
    first_data = large.data();
#if defined(__linux__)
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(large.data()) % (std::uintptr_t{2} << 20), 0u)
        << "a large array starts on a 2 MiB boundary";
#endif
    large[count - 1] = -2.0f;
    const Q::ParamArray<float> copy = large;  // deep
    EXPECT_NE(copy.data(), large.data());
    EXPECT_EQ(copy, large);
    large.push_back(4.0f);  // grows into a new array, the old one kept for reuse
    EXPECT_EQ(large[count - 1], -2.0f);
    EXPECT_EQ(large[count], 4.0f);
    EXPECT_EQ(std::count(large.begin(), large.end() - 2, 1.5f), static_cast<long>(count - 1));
  }
  Q::ParamArray<float> next(count, 0.25f);
#if defined(__linux__)
  EXPECT_EQ(next.data(), first_data) << "the freed mapping of the same length is reused";
#endif
  EXPECT_EQ(std::count(next.begin(), next.end(), 0.25f), static_cast<long>(count));
  Q::release_cached_buffers();
}

// resize(n) leaves the new entries for the producer to write (no fill of megabytes that a kernel
// then overwrites) and keeps the old ones; values given are set as by std::vector.
TEST(ParamArray, ResizeKeepsEntriesAndSetsOnlyGivenValues) {
  Q::ParamArray<float> scales(3, 2.0f);
  scales.resize(5);
  EXPECT_EQ(std::vector<float>(scales.begin(), scales.begin() + 3), std::vector<float>(3, 2.0f));
  scales[3] = scales[4] = 0.5f;
  scales.resize(7, 1.0f);
  EXPECT_EQ(std::vector<float>(scales.begin(), scales.end()),
            (std::vector<float>{2.0f, 2.0f, 2.0f, 0.5f, 0.5f, 1.0f, 1.0f}));
  scales.emplace_back(4.0f);
  EXPECT_EQ(scales.back(), 4.0f);
  const Q::ParamArray<std::int32_t> braced{0};
  EXPECT_EQ(braced.size(), 1u);
  EXPECT_EQ(braced[0], 0);
}
