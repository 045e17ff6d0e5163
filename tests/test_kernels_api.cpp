// The public API on every supported tier and thread count against the reference tier:
// every dtype, input type and granularity (per-channel on inner and outer axes, per-group).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "lucid/quantization.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

namespace {

// Restores the tier and thread count a test changed.
class RuntimeGuard {
 public:
  RuntimeGuard() : isa_(Q::active_isa()), threads_(Q::num_threads()) {}
  ~RuntimeGuard() {
    Q::set_isa(isa_);
    Q::set_num_threads(threads_);
  }

 private:
  Q::Isa isa_;
  int threads_;
};

// A tensor of mostly ordinary values with NaN, +-Inf, +-0, ties and huge values mixed in.
Q::Tensor make_input(const Q::Shape& shape, Q::ScalarType type, std::mt19937_64& rng) {
  Q::Tensor t(type, shape);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 40);
  const auto n = static_cast<std::size_t>(t.numel());
  for (std::size_t i = 0; i < n; ++i) {
    float v = unit(rng) * 4.0f * static_cast<float>(1 + i % 5);
    switch (kind(rng)) {
      case 0:
        v = NAN;
        break;
      case 1:
        v = INFINITY;
        break;
      case 2:
        v = -INFINITY;
        break;
      case 3:
        v = -0.0f;
        break;
      case 4:
        v = 2.5f;
        break;
      case 5:
        v = 1e30f;
        break;
      default:
        break;
    }
    if (type == Q::ScalarType::float32) {
      t.data_as<float>()[i] = v;
    } else {
      t.data_as<std::uint16_t>()[i] =
          type == Q::ScalarType::float16 ? Q::float_to_float16(v) : Q::float_to_bfloat16(v);
    }
  }
  return t;
}

struct Granularity {
  Q::QScheme scheme;
  int axis;
  std::int64_t group_size;
};

std::vector<Granularity> granularities(std::size_t rank) {
  std::vector<Granularity> out{{Q::per_tensor_affine, 0, 0}, {Q::per_tensor_symmetric, 0, 0}};
  if (rank == 0) return out;
  out.push_back({Q::per_channel_affine, 0, 0});      // outer axis
  out.push_back({Q::per_channel_symmetric, -1, 0});  // last axis
  out.push_back({Q::per_channel_affine, static_cast<int>(rank / 2), 0});
  out.push_back({Q::per_channel_symmetric, -1, 3});  // groups along the last axis
  out.push_back({Q::per_channel_affine, 0, 2});      // groups along the outer axis
  return out;
}

const Q::QDtype all_dtypes[] = {
    Q::qint8,  Q::quint8, Q::qint8.narrow_range(),     Q::qint4, Q::quint4, Q::qint2, Q::quint2,
    Q::qint16, Q::qint32, Q::quint8.with_range(0, 100)};

const Q::ScalarType input_types[] = {Q::ScalarType::float32, Q::ScalarType::float16,
                                     Q::ScalarType::bfloat16};

std::vector<std::uint8_t> bytes_of(const void* data, std::size_t size) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  return {p, p + size};
}

// Every output of the API for one input, as raw bytes (floats compared bit for bit).
std::vector<std::vector<std::uint8_t>> all_outputs(const Q::Tensor& x) {
  std::vector<std::vector<std::uint8_t>> out;
  const auto add_floats = [&](std::span<const float> v) {
    out.push_back(bytes_of(v.data(), v.size() * sizeof(float)));
  };
  for (const Granularity& g : granularities(x.shape().size())) {
    const Q::RangeStats range = Q::observe_range(x, g.scheme, g.axis, g.group_size);
    add_floats(range.min);
    add_floats(range.max);
    out.push_back({static_cast<std::uint8_t>(range.nonfinite_count)});
    add_floats(Q::observe_abs_max(x, g.scheme, g.axis, g.group_size).abs_max);
    for (const Q::QDtype& dtype : all_dtypes) {
      const Q::QParams qp = Q::choose_qparams(x, g.scheme, dtype, g.axis, g.group_size);
      const Q::QuantizedTensor q = Q::quantize(x, qp);
      out.emplace_back(q.storage().begin(), q.storage().end());
      const Q::Tensor x_hat = Q::dequantize(q);
      out.push_back(bytes_of(x_hat.data(), x_hat.nbytes()));
      const Q::FakeQuantizeResult fq = Q::fake_quantize_with_mask(x, qp);
      out.push_back(bytes_of(fq.output.data(), fq.output.nbytes()));
      out.push_back(bytes_of(fq.mask.data(), fq.mask.nbytes()));
      if (g.group_size > 0) {
        const Q::QuantizedTensor fused =
            Q::quantize_per_group(x, g.scheme, dtype, g.axis, g.group_size);
        EXPECT_EQ(fused.qparams().scale, qp.scale);
        EXPECT_EQ(fused.qparams().zero_point, qp.zero_point);
        EXPECT_TRUE(std::equal(fused.storage().begin(), fused.storage().end(), q.storage().begin(),
                               q.storage().end()))
            << "quantize_per_group differs from choose_qparams + quantize for " << Q::describe(qp)
            << " on " << Q::to_string(x.shape());
      }
    }
  }
  return out;
}

const std::vector<Q::Shape> shapes = {{0},        {1},    {17},     {3, 5, 7},  {4, 33},
                                      {2, 3, 64}, {5, 1}, {1, 130}, {16, 16, 3}};

class ApiTier : public ::testing::TestWithParam<Q::Isa> {
 protected:
  void SetUp() override {
    const std::vector<Q::Isa> supported = Q::supported_isas();
    if (std::find(supported.begin(), supported.end(), GetParam()) == supported.end()) {
      GTEST_SKIP() << "tier " << Q::to_string(GetParam()) << " skipped: this CPU ("
                   << Q::cpu_features().describe() << ") does not support it";
    }
  }
  RuntimeGuard guard_;
};

// The same fixture over all tiers, reference included, for thread-count checks.
class ThreadTier : public ApiTier {};

}  // namespace

TEST_P(ApiTier, EveryOutputMatchesTheReferenceTier) {
  std::mt19937_64 rng(Q::testing::test_seed());
  for (const Q::ScalarType type : input_types) {
    for (const Q::Shape& shape : shapes) {
      const Q::Tensor x = make_input(shape, type, rng);
      Q::set_isa(Q::Isa::reference);
      const auto expected = all_outputs(x);
      Q::set_isa(GetParam());
      ASSERT_EQ(Q::active_isa(), GetParam());
      const auto actual = all_outputs(x);
      ASSERT_EQ(actual.size(), expected.size());
      for (std::size_t i = 0; i < actual.size(); ++i) {
        ASSERT_EQ(actual[i], expected[i]) << "output " << i << " for shape " << Q::to_string(shape)
                                          << ", input " << Q::to_string(type);
      }
    }
  }
}

TEST_P(ThreadTier, ResultsDoNotDependOnTheThreadCount) {
  std::mt19937_64 rng(Q::testing::test_seed());
  Q::set_isa(GetParam());
  // Large enough to be split over threads; odd sizes put piece edges mid-group.
  const Q::Tensor x = make_input({131, 1037}, Q::ScalarType::float32, rng);
  Q::set_num_threads(1);
  const auto one = all_outputs(x);
  for (const int threads : {2, 3}) {
    Q::set_num_threads(threads);
    const auto many = all_outputs(x);
    ASSERT_EQ(many.size(), one.size());
    for (std::size_t i = 0; i < one.size(); ++i)
      ASSERT_EQ(many[i], one[i]) << "output " << i << " with " << threads << " threads";
  }
}

// Calls whose 8-bit codes take the non-temporal kernels (kernels::streams_byte_output: 32 MiB
// of reads and writes) give the reference tier's codes on 1 and 2 threads, into an output at
// every alignment the pieces and the public spans allow.
TEST_P(ApiTier, LargeByteOutputsMatchTheReferenceTier) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const std::int64_t rows = 7, row = (std::int64_t{1} << 20) + 5;  // 7 M codes, 35 MiB moved
  const Q::Tensor x = make_input({rows, row}, Q::ScalarType::float32, rng);
  Q::Tensor acc(Q::ScalarType::int32, {rows, row});
  std::uniform_int_distribution<std::int32_t> any(-3000000, 3000000);
  for (std::int64_t i = 0; i < acc.numel(); ++i)
    acc.data_as<std::int32_t>()[i] = any(rng);
  const Q::QParams per_tensor = Q::choose_qparams(x, Q::per_tensor_affine, Q::quint8);
  const Q::QParams per_channel = Q::choose_qparams(x, Q::per_channel_symmetric, Q::qint8, 0);
  const auto outputs = [&] {
    std::vector<std::vector<std::uint8_t>> out;
    for (const Q::QParams* qp : {&per_tensor, &per_channel}) {
      const Q::QuantizedTensor q = Q::quantize(x, *qp);
      out.emplace_back(q.storage().begin(), q.storage().end());
      std::vector<std::uint8_t> shifted(static_cast<std::size_t>(x.numel()) + 1);
      Q::quantize_into(x, *qp, std::span(shifted).subspan(1));  // an odd output address
      out.emplace_back(shifted.begin() + 1, shifted.end());
    }
    const Q::Tensor codes = Q::requantize(acc, 0.0007f, 3, Q::qint8);
    out.push_back(bytes_of(codes.data(), codes.nbytes()));
    return out;
  };
  Q::set_isa(Q::Isa::reference);
  const auto expected = outputs();
  Q::set_isa(GetParam());
  for (const int threads : {1, 2}) {
    Q::set_num_threads(threads);
    const auto actual = outputs();
    ASSERT_EQ(actual.size(), expected.size());
    for (std::size_t i = 0; i < actual.size(); ++i)
      ASSERT_TRUE(actual[i] == expected[i]) << "output " << i << " with " << threads << " threads";
  }
}

INSTANTIATE_TEST_SUITE_P(Tiers, ApiTier, ::testing::Values(Q::Isa::avx2, Q::Isa::avx512),
                         [](const auto& info) { return Q::to_string(info.param); });
INSTANTIATE_TEST_SUITE_P(Tiers, ThreadTier,
                         ::testing::Values(Q::Isa::reference, Q::Isa::avx2, Q::Isa::avx512),
                         [](const auto& info) { return Q::to_string(info.param); });

TEST(QuantizeInto, MatchesTheAllocatingFormsAndChecksSizes) {
  std::mt19937_64 rng(Q::testing::test_seed());
  const Q::Tensor x = make_input({6, 11}, Q::ScalarType::float32, rng);
  for (const Q::QDtype& dtype : {Q::qint8, Q::quint4, Q::qint32}) {
    const Q::QParams qp = Q::choose_qparams(x, Q::per_channel_affine, dtype, 1);
    const Q::QuantizedTensor q = Q::quantize(x, qp);
    std::vector<std::uint8_t> storage(q.storage().size() + 1);
    EXPECT_ERROR_CONTAINS(Q::quantize_into(x, qp, storage), "quantize_into: out holds");
    storage.pop_back();
    Q::quantize_into(x, qp, storage);
    EXPECT_TRUE(std::equal(storage.begin(), storage.end(), q.storage().begin()));

    const Q::Tensor x_hat = Q::dequantize(q);
    std::vector<float> floats(static_cast<std::size_t>(x.numel()));
    Q::dequantize_into(q, floats);
    EXPECT_EQ(std::memcmp(floats.data(), x_hat.data(), x_hat.nbytes()), 0);
    std::vector<float> too_short(3);
    EXPECT_ERROR_CONTAINS(Q::dequantize_into(q, too_short), "dequantize_into: out holds 3");

    const Q::FakeQuantizeResult fq = Q::fake_quantize_with_mask(x, qp);
    std::vector<std::uint8_t> mask(floats.size());
    Q::fake_quantize_into(x, qp, floats, mask);
    EXPECT_EQ(std::memcmp(floats.data(), fq.output.data(), fq.output.nbytes()), 0);
    EXPECT_EQ(std::memcmp(mask.data(), fq.mask.data(), fq.mask.nbytes()), 0);
    std::vector<std::uint8_t> short_mask(2);
    EXPECT_ERROR_CONTAINS(Q::fake_quantize_into(x, qp, floats, short_mask),
                          "fake_quantize_into: mask");
  }
}

namespace {

// quantize_per_group against choose_qparams then quantize, for each bf16 / f32 input of `shape`,
// 1 and 2 threads, each (axis, group size), each dtype and both per-channel schemes: scales, zero
// points and codes equal.
void expect_per_group_equals_two_step(const Q::Shape& shape,
                                      std::initializer_list<std::pair<int, std::int64_t>> groups,
                                      std::initializer_list<Q::QDtype> dtypes) {
  std::mt19937_64 rng(Q::testing::test_seed());
  RuntimeGuard guard;
  for (const Q::ScalarType type : {Q::ScalarType::bfloat16, Q::ScalarType::float32}) {
    const Q::Tensor x = make_input(shape, type, rng);
    for (const int threads : {1, 2}) {
      Q::set_num_threads(threads);
      for (const auto& [axis, group] : groups) {
        for (const Q::QDtype& dtype : dtypes) {
          // Symmetric schemes take the abs-max kernels, affine ones the min / max kernels.
          for (const Q::QScheme scheme : {Q::per_channel_affine, Q::per_channel_symmetric}) {
            const Q::QuantizedTensor fused = Q::quantize_per_group(x, scheme, dtype, axis, group);
            const Q::QuantizedTensor two_step =
                Q::quantize(x, Q::choose_qparams(x, scheme, dtype, axis, group));
            EXPECT_EQ(fused.qparams().scale, two_step.qparams().scale);
            EXPECT_EQ(fused.qparams().zero_point, two_step.qparams().zero_point);
            EXPECT_EQ(fused.qparams().ch_axis, axis);
            EXPECT_EQ(fused.int_repr(), two_step.int_repr())
                << Q::describe(fused.qparams()) << " axis " << axis << " input "
                << Q::to_string(type) << " threads " << threads;
          }
        }
      }
    }
  }
}

}  // namespace

TEST(QuantizePerGroup, EqualsChooseQparamsThenQuantizeOnLargeInputs) {
  expect_per_group_equals_two_step({257, 129}, {{1, 32}, {-1, 7}, {0, 5}},
                                   {Q::qint4, Q::quint2, Q::qint8});
}

// Whole-row groups go in runs capped by input bytes (8 KB): runs of 64 down to 1 group that span
// rows, at each input width.
TEST(QuantizePerGroup, RunsOfWholeGroupsAcrossRowsEqualTwoStep) {
  expect_per_group_equals_two_step({9, 8192}, {{1, 32}, {1, 128}, {1, 1024}, {1, 4096}, {1, 8192}},
                                   {Q::qint4, Q::quint4, Q::quint8});
}

// 4-bit codes packed as they are made, straight into the storage: groups of a multiple of 32,
// even sizes that are not (through a scratch), odd sizes (never), rows that start on an odd
// element (never: 129 per row), rows that end in a partial group.
TEST(QuantizePerGroup, PackedFourBitRunsEqualTwoStep) {
  expect_per_group_equals_two_step({6, 4000}, {{1, 32}, {1, 48}, {1, 6}, {1, 7}, {1, 160}},
                                   {Q::qint4, Q::quint4});
  expect_per_group_equals_two_step({7, 129}, {{1, 32}, {1, 64}, {1, 2}}, {Q::qint4, Q::quint4});
}

// Runs of finite values take the per-group codes kernels without their NaN / Inf checks
// (GroupValues::own_range); runs holding a NaN or an Inf, and every run when 1 / eps overflows
// (eps 1e-40: a group of zeros gets scale eps and an infinite reciprocal, 0 * Inf = NaN), keep
// them. Both equal the two-step form, on every tier the CPU has, 1 and 2 threads.
TEST(QuantizePerGroup, FiniteRunsAndTinyEpsEqualTwoStep) {
  const std::uint64_t seed = Q::testing::test_seed();
  RuntimeGuard guard;
  for (const Q::ScalarType type : {Q::ScalarType::float32, Q::ScalarType::bfloat16}) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    Q::Tensor x(type, {6, 8192});
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      const float v = i == 2 * 8192 + 100    ? NAN
                      : i == 4 * 8192 + 5000 ? INFINITY
                      : i / 256 == 3 * 32    ? 0.0f  // 8 groups of 32 zeros
                                             : normal(rng);
      if (type == Q::ScalarType::float32) {
        x.data_as<float>()[i] = v;
      } else {
        x.data_as<std::uint16_t>()[i] = Q::float_to_bfloat16(v);
      }
    }
    for (const Q::Isa isa : Q::supported_isas()) {
      Q::set_isa(isa);
      for (const int threads : {1, 2}) {
        Q::set_num_threads(threads);
        for (const float eps : {Q::default_eps, 1e-40f}) {
          for (const Q::QDtype& dtype : {Q::qint4, Q::quint4, Q::qint8, Q::quint8}) {
            for (const Q::QScheme scheme : {Q::per_channel_affine, Q::per_channel_symmetric}) {
              const Q::QuantizedTensor fused = Q::quantize_per_group(x, scheme, dtype, 1, 32, eps);
              const Q::QuantizedTensor two_step =
                  Q::quantize(x, Q::choose_qparams(x, scheme, dtype, 1, 32, eps));
              EXPECT_EQ(fused.qparams().scale, two_step.qparams().scale);
              EXPECT_EQ(fused.qparams().zero_point, two_step.qparams().zero_point);
              EXPECT_EQ(fused.int_repr(), two_step.int_repr())
                  << Q::describe(fused.qparams()) << " eps " << eps << " input "
                  << Q::to_string(type) << " tier " << Q::to_string(isa) << " threads " << threads
                  << " seed " << seed;
            }
          }
        }
      }
    }
  }
}

// choose_qparams for groups runs the range and qparams kernels in runs (detail::
// choose_group_qparams); it must equal its definition, observe_range then calculate_qparams, for
// groups along every axis, cut groups, empty tensors, NaN / Inf / nothing finite, every width of
// grid (16 and 32 bits too), both schemes, each input type, 1 and 2 threads.
TEST(ChooseQparams, PerGroupEqualsObserveRangeThenCalculate) {
  std::mt19937_64 rng(Q::testing::test_seed());
  RuntimeGuard guard;
  const std::vector<std::pair<Q::Shape, std::vector<std::pair<int, std::int64_t>>>> cases = {
      {{0, 64}, {{1, 32}, {0, 4}}},
      {{3, 0}, {{1, 32}}},
      {{5, 7}, {{1, 3}, {0, 2}, {-1, 7}, {1, 100}}},
      {{4, 256}, {{1, 32}, {1, 128}, {0, 3}}},
      {{2, 3, 40}, {{2, 8}, {1, 2}, {0, 1}}},
      {{33, 4096}, {{1, 32}, {1, 128}}}};
  for (const Q::ScalarType type : input_types) {
    for (const auto& [shape, groups] : cases) {
      const Q::Tensor x = make_input(shape, type, rng);
      for (const int threads : {1, 2}) {
        Q::set_num_threads(threads);
        for (const auto& [axis, group] : groups) {
          for (const Q::QDtype& dtype : all_dtypes) {
            for (const Q::QScheme scheme : {Q::per_channel_affine, Q::per_channel_symmetric}) {
              const Q::RangeStats range = Q::observe_range(x, scheme, axis, group);
              const Q::QParams expected =
                  Q::calculate_qparams(range.min, range.max, scheme, dtype, axis);
              const Q::QParams actual = Q::choose_qparams(x, scheme, dtype, axis, group);
              const std::string at = Q::describe(actual) + " on " + Q::to_string(shape) + " " +
                                     Q::to_string(type) + ", threads " + std::to_string(threads);
              EXPECT_EQ(actual.scale, expected.scale) << at;
              EXPECT_EQ(actual.zero_point, expected.zero_point) << at;
              EXPECT_EQ(actual.group_size, group) << at;
              EXPECT_EQ(actual.ch_axis, axis) << at;
              EXPECT_EQ(actual.qdtype, dtype) << at;
            }
          }
        }
      }
    }
  }
}

// quantize with given per-group parameters (groups along the last axis go through the per-group
// kernels in runs; along an outer axis, per element) against its definition, quantize_value per
// element: the caller's scales (tiny, huge, ties) and zero points anywhere on the grid, groups cut
// by a row's end, odd and even dims and group sizes (4-bit codes by runs only when every group
// starts on a byte), NaN / Inf inputs, each tier the CPU has, 1 and 2 threads.
TEST(QuantizePerGroup, GivenParametersEqualQuantizeValue) {
  const std::uint64_t seed = Q::testing::test_seed();
  std::mt19937_64 rng(seed);
  RuntimeGuard guard;
  const float scales[] = {1.0f, 0.5f, 0.03125f, 3e-3f, 7.0f, 1e-30f, 1e20f};
  const std::vector<std::tuple<Q::Shape, int, std::int64_t>> cases = {
      {{5, 256}, 1, 32}, {{3, 300}, 1, 128}, {{4, 70}, 1, 6},   {{4, 70}, 1, 7},
      {{3, 33}, 1, 8},   {{6, 40}, 0, 4},    {{2, 4096}, 1, 32}};
  for (const auto& [shape, axis, group] : cases) {
    const Q::Tensor x = make_input(shape, Q::ScalarType::float32, rng);
    const std::int64_t rows = shape[0], cols = shape[1];
    const std::int64_t dim = shape[static_cast<std::size_t>(axis)];
    const std::int64_t groups = (dim + group - 1) / group;
    const std::size_t slots = static_cast<std::size_t>(axis == 1 ? rows * groups : groups * cols);
    for (const Q::QDtype& dtype :
         {Q::qint8, Q::quint8, Q::qint4, Q::quint4, Q::qint2, Q::quint8.with_range(0, 100)}) {
      std::vector<float> scale(slots);
      std::vector<std::int32_t> zero_point(slots);
      std::uniform_int_distribution<std::size_t> pick(0, std::size(scales) - 1);
      std::uniform_int_distribution<std::int32_t> zero(
          static_cast<std::int32_t>(dtype.quant_min()),
          static_cast<std::int32_t>(dtype.quant_max()));
      for (std::size_t i = 0; i < slots; ++i) {
        scale[i] = scales[pick(rng)];
        zero_point[i] = zero(rng);
      }
      const Q::QParams qp =
          Q::QParams::per_group(scale, zero_point, axis, group, dtype, Q::per_channel_affine);
      std::vector<std::int32_t> expected(static_cast<std::size_t>(rows * cols));
      const float* v = x.data_as<float>();
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = 0; c < cols; ++c) {
          const auto slot =
              static_cast<std::size_t>(axis == 1 ? r * groups + c / group : (r / group) * cols + c);
          expected[static_cast<std::size_t>(r * cols + c)] =
              Q::quantize_value(v[r * cols + c], scale[slot], zero_point[slot], dtype);
        }
      }
      for (const Q::Isa isa : Q::supported_isas()) {
        Q::set_isa(isa);
        for (const int threads : {1, 2}) {
          Q::set_num_threads(threads);
          EXPECT_EQ(Q::quantize(x, qp).int_repr(), expected)
              << Q::describe(qp) << " on " << Q::to_string(shape) << ", tier " << Q::to_string(isa)
              << ", threads " << threads << ", seed " << seed;
        }
      }
    }
  }
}

// observe_range / observe_abs_max for groups along the last axis go through the group range
// kernels in runs; against a loop over the elements: the min, max and abs-max of each group's
// finite values (+0 for a zero; 0 and 0 when none is finite) and the count of the rest. Groups cut
// by a row's end, runs holding NaN / Inf, empty tensors, each input type and tier, 1 and 2 threads.
TEST(ObserveRange, PerGroupEqualsElementLoop) {
  const std::uint64_t seed = Q::testing::test_seed();
  std::mt19937_64 rng(seed);
  RuntimeGuard guard;
  const std::vector<std::pair<Q::Shape, std::int64_t>> cases = {{{0, 64}, 32},   {{5, 7}, 3},
                                                                {{4, 256}, 32},  {{3, 300}, 128},
                                                                {{2, 3, 40}, 8}, {{9, 4096}, 32}};
  for (const Q::ScalarType type : input_types) {
    for (const auto& [shape, group] : cases) {
      const Q::Tensor x = make_input(shape, type, rng);
      const std::vector<float> v = Q::to_float32(x.view(), "x");
      const std::int64_t dim = shape.back();
      const std::int64_t groups = (dim + group - 1) / group;
      const std::size_t slots = v.size() /
                                static_cast<std::size_t>(std::max<std::int64_t>(dim, 1)) *
                                static_cast<std::size_t>(groups);
      Q::ParamArray<float> lo(slots, INFINITY), hi(slots, -INFINITY), top(slots, 0.0f);
      std::int64_t nonfinite = 0;
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::size_t slot =
            i / static_cast<std::size_t>(dim) * static_cast<std::size_t>(groups) +
            i % static_cast<std::size_t>(dim) / static_cast<std::size_t>(group);
        if (!std::isfinite(v[i])) {
          ++nonfinite;
          continue;
        }
        lo[slot] = std::min(lo[slot], v[i]);
        hi[slot] = std::max(hi[slot], v[i]);
        top[slot] = std::max(top[slot], std::fabs(v[i]));
      }
      for (std::size_t s = 0; s < slots; ++s) {
        if (lo[s] > hi[s]) lo[s] = hi[s] = 0.0f;
        lo[s] = lo[s] == 0.0f ? 0.0f : lo[s];
        hi[s] = hi[s] == 0.0f ? 0.0f : hi[s];
      }
      for (const Q::Isa isa : Q::supported_isas()) {
        Q::set_isa(isa);
        for (const int threads : {1, 2}) {
          Q::set_num_threads(threads);
          const std::string at = Q::to_string(shape) + " " + Q::to_string(type) + ", group " +
                                 std::to_string(group) + ", tier " + Q::to_string(isa) +
                                 ", threads " + std::to_string(threads) + ", seed " +
                                 std::to_string(seed);
          const Q::RangeStats range = Q::observe_range(x, Q::per_channel_affine, -1, group);
          EXPECT_EQ(range.min, lo) << at;
          EXPECT_EQ(range.max, hi) << at;
          EXPECT_EQ(range.nonfinite_count, nonfinite) << at;
          for (std::size_t s = 0; s < std::min(slots, range.min.size()); ++s) {  // +0, not -0
            ASSERT_FALSE(std::signbit(range.min[s]) && range.min[s] == 0.0f) << at;
            ASSERT_FALSE(std::signbit(range.max[s]) && range.max[s] == 0.0f) << at;
          }
          const Q::AbsMaxStats abs = Q::observe_abs_max(x, Q::per_channel_symmetric, -1, group);
          EXPECT_EQ(abs.abs_max, top) << at;
          EXPECT_EQ(abs.nonfinite_count, nonfinite) << at;
        }
      }
    }
  }
}

TEST(QuantizePerGroup, RejectsBadArguments) {
  const std::vector<float> v(8, 1.0f);
  const Q::TensorView x(v);
  EXPECT_ERROR_CONTAINS(Q::quantize_per_group(x, Q::per_tensor_affine, Q::qint4, 0, 4),
                        "quantize_per_group: qscheme = per_tensor_affine");
  EXPECT_ERROR_CONTAINS(Q::quantize_per_group(x, Q::per_channel_affine, Q::qint4, 0, 0),
                        "quantize_per_group: group_size = 0");
  EXPECT_ERROR_CONTAINS(Q::quantize_per_group(x, Q::per_channel_affine, Q::qint4, 3, 4),
                        "ch_axis = 3");
  EXPECT_ERROR_CONTAINS(Q::quantize_per_group(x, Q::per_channel_affine, Q::qint4, 0, 4, -1.0f),
                        "eps = -1");
  const std::vector<std::int32_t> ints(4);
  EXPECT_ERROR_CONTAINS(Q::quantize_per_group(Q::TensorView(ints.data(), Q::ScalarType::int32, {4}),
                                              Q::per_channel_affine, Q::qint4, 0, 2),
                        "element type int32");
}

TEST(ObserveRange, ZeroBoundsArePositiveZeroWhateverTheOrder) {
  // -0 and +0 compare equal; the reported bound is +0 on every tier and thread count.
  const std::vector<float> x{-0.0f, 0.0f, 1.0f, -0.0f};
  const Q::RangeStats range = Q::observe_range(Q::TensorView(x), Q::per_tensor_affine);
  EXPECT_FALSE(std::signbit(range.min[0]));
  const std::vector<float> negative_zero_max{-0.0f, -1.0f};
  EXPECT_FALSE(std::signbit(
      Q::observe_range(Q::TensorView(negative_zero_max), Q::per_tensor_affine).max[0]));
}

TEST(ObserveAbsMax, SkipsNonFiniteValuesPerChannel) {
  const std::vector<float> x{1.0f, -3.0f, NAN, 2.0f, INFINITY, -0.5f};
  const Q::AbsMaxStats stats =
      Q::observe_abs_max(Q::TensorView(x, {3, 2}), Q::per_channel_symmetric, 1);
  EXPECT_EQ(stats.abs_max, (Q::ParamArray<float>{1.0f, 3.0f}));
  EXPECT_EQ(stats.nonfinite_count, 2);
  const Q::AbsMaxStats all = Q::observe_abs_max(Q::TensorView(x), Q::per_tensor_symmetric);
  EXPECT_EQ(all.abs_max, (Q::ParamArray<float>{3.0f}));
  EXPECT_ERROR_CONTAINS(Q::observe_abs_max(Q::TensorView(x), Q::per_tensor_affine, 0, 2),
                        "observe_abs_max: group_size = 2");
}

// ByteBuffer: 64-byte aligned, deep copies, and large buffers reused from its
// cache are never handed out where zeros are promised.
TEST(ByteBuffer, ZeroedAndCopiedBuffersStayCorrectAcrossTheLargeBufferCache) {
  constexpr std::size_t large = std::size_t{9} << 20;  // above the 4 MiB mapping threshold
  for (const std::size_t size : {std::size_t{100}, large}) {
    for (int round = 0; round < 3; ++round) {
      {
        Q::ByteBuffer dirty = Q::ByteBuffer::uninitialized(size);
        ASSERT_EQ(dirty.size(), size);
        ASSERT_EQ(reinterpret_cast<std::uintptr_t>(dirty.data()) % 64, 0u);
        std::memset(dirty.data(), 0xab, size);
      }  // a large one goes back to the cache, dirty
      const Q::ByteBuffer zeros = Q::ByteBuffer::zeroed(size);
      EXPECT_TRUE(std::all_of(zeros.data(), zeros.data() + size, [](auto b) { return b == 0; }))
          << "size " << size;
      const Q::Tensor tensor(Q::ScalarType::uint8, {static_cast<std::int64_t>(size)});
      const auto* bytes = tensor.data_as<std::uint8_t>();
      EXPECT_TRUE(std::all_of(bytes, bytes + size, [](auto b) { return b == 0; }))
          << "size " << size;
    }
    Q::ByteBuffer a = Q::ByteBuffer::uninitialized(size);
    for (std::size_t i = 0; i < size; ++i)
      a.data()[i] = static_cast<std::uint8_t>(i * 7);
    Q::ByteBuffer b = a;
    ASSERT_NE(b.data(), a.data());
    EXPECT_TRUE(std::equal(a.data(), a.data() + size, b.data(), b.data() + size));
    b.data()[size - 1] ^= 1;
    EXPECT_NE(a.data()[size - 1], b.data()[size - 1]);
    const std::uint8_t* moved_from = a.data();
    Q::ByteBuffer c = std::move(a);
    EXPECT_EQ(c.data(), moved_from);
    EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moves leave an empty buffer
  }
  Q::release_cached_buffers();
  EXPECT_EQ(Q::ByteBuffer::uninitialized(0).data(), nullptr);
}

// The allocating forms write every byte of an uninitialised (possibly reused) buffer.
TEST(ByteBuffer, AllocatingFormsOverwriteReusedBuffers) {
  const RuntimeGuard guard;
  const std::int64_t n = std::int64_t{5} << 20;  // 5 MiB of int8 codes, 20 MiB of floats
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::int64_t round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] =
          static_cast<float>((i * 2654435761u + static_cast<std::size_t>(round)) % 1000) - 500.0f;
    const auto qp = Q::QParams::per_tensor(4.0f, static_cast<std::int32_t>(round), Q::qint8);
    Q::set_num_threads(1 + static_cast<int>(round % 2));
    const Q::QuantizedTensor q = Q::quantize(Q::TensorView(x), qp);
    std::vector<std::uint8_t> expected(static_cast<std::size_t>(n));
    Q::quantize_into(Q::TensorView(x), qp, expected);
    ASSERT_TRUE(std::ranges::equal(q.storage(), expected)) << "round " << round;
    const Q::Tensor back = Q::dequantize(q);
    std::vector<float> expected_back(static_cast<std::size_t>(n));
    Q::dequantize_into(q, expected_back);
    ASSERT_EQ(0, std::memcmp(back.data(), expected_back.data(), expected_back.size() * 4))
        << "round " << round;
    {
      Q::ByteBuffer dirty = Q::ByteBuffer::uninitialized(static_cast<std::size_t>(n) * 4);
      std::memset(dirty.data(), 0x7f, dirty.size());
    }
  }
}

// requantize and quantize_per_group also write every byte of a reused buffer, the unused high
// nibble of an odd-length int4 storage included: each output lands in a mapping left dirty.
TEST(ByteBuffer, RequantizeAndPerGroupQuantizeOverwriteReusedBuffers) {
  const RuntimeGuard guard;
  const std::int64_t n = (std::int64_t{9} << 20) + 1;  // odd: int4 storage ends in half a byte
  std::vector<std::int32_t> acc(static_cast<std::size_t>(n));
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < acc.size(); ++i) {
    acc[i] = static_cast<std::int32_t>(i * 2654435761u) >> 12;
    x[i] = static_cast<float>(i * 2654435761u % 1000) - 500.0f;
  }
  const auto dirty = [](std::size_t bytes) {
    Q::ByteBuffer b = Q::ByteBuffer::uninitialized(bytes);
    std::memset(b.data(), 0xa5, b.size());
  };
  std::vector<std::uint8_t> expected(static_cast<std::size_t>(n));
  Q::requantize_row(acc.data(), n, 1.0f / 4096, 3, Q::qint8, expected.data());
  Q::release_cached_buffers();
  const Q::TensorView x_view(x.data(), Q::ScalarType::float32, {1, n});
  const Q::QuantizedTensor fresh = Q::quantize_per_group(x_view, Q::per_channel_symmetric, Q::qint4,
                                                         1, 32);  // a fresh (zero) mapping
  const std::vector<std::uint8_t> fresh_bytes(fresh.storage().begin(), fresh.storage().end());
  ASSERT_EQ(fresh_bytes.back() >> 4, 0) << "the unused high nibble of the last byte";
  for (int threads = 1; threads <= 2; ++threads) {
    Q::set_num_threads(threads);
    dirty(static_cast<std::size_t>(n));
    const Q::Tensor q = Q::requantize(Q::TensorView(acc.data(), Q::ScalarType::int32, {n}),
                                      1.0f / 4096, 3, Q::qint8);
    ASSERT_EQ(0, std::memcmp(q.data(), expected.data(), expected.size())) << threads << " threads";
    dirty(fresh_bytes.size());
    const Q::QuantizedTensor g =
        Q::quantize_per_group(x_view, Q::per_channel_symmetric, Q::qint4, 1, 32);
    ASSERT_TRUE(std::ranges::equal(g.storage(), fresh_bytes)) << threads << " threads";
  }
}
