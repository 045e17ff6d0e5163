// conv2d against the plain-loop spec (conv_reference.hpp), bit for bit, on every kernel variant
// the CPU has and 1 or 2 threads: sampled kernel sizes, strides, dilations, paddings, groups,
// channel counts, batches, layouts, code types and output stages; extreme codes; argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "conv_reference.hpp"
#include "lucid/quantization/conv.hpp"
#include "lucid/quantization/runtime.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::ConvCase;

namespace {

class ConvTest : public ::testing::Test {
 protected:
  void TearDown() override {
    Q::set_isa(variant_);
    Q::set_num_threads(threads_);
  }
  Q::KernelVariant variant_ = Q::active_variant();
  int threads_ = Q::num_threads();
};

Q::ConvInput input_of(const ConvCase& p) {
  Q::ConvInput a;
  a.data = p.codes.data();
  a.type = p.type;
  a.layout = p.layout;
  a.batch = p.batch;
  a.channels = p.channels;
  a.height = p.height;
  a.width = p.width;
  a.scale = p.scale;
  a.zero_point = p.zero_point;
  return a;
}

Q::PackedConvWeights weights_of(const ConvCase& p) {
  return Q::PackedConvWeights::pack(p.weights.data(), p.out_channels, p.channels / p.groups,
                                    p.kernel_h, p.kernel_w, p.groups, p.scales);
}

// extreme: codes and weights only at the ends of their grids, zero point at one end.
ConvCase random_case(std::mt19937_64& rng, bool extreme) {
  auto pick = [&](std::initializer_list<std::int64_t> v) {
    return *(v.begin() + std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng));
  };
  ConvCase p;
  p.type = pick({0, 1}) ? Q::ScalarType::int8 : Q::ScalarType::uint8;
  p.layout = pick({0, 1}) ? Q::ConvLayout::nchw : Q::ConvLayout::nhwc;
  p.batch = pick({1, 3});
  const std::int64_t channels = pick({1, 3, 17, 65});
  const std::int64_t grouping = pick({0, 1, 2});  // groups 1, 2, depthwise
  p.kernel_h = pick({1, 3, 5, 7});
  p.kernel_w = pick({0, 1}) ? p.kernel_h : pick({1, 3, 5, 7});
  if (pick({0, 0, 0, 1})) p.kernel_h = 1;  // Conv1d: H = 1, KH = 1
  const std::int64_t stride = pick({1, 2}), dilation = pick({1, 2});
  p.options.stride_h = stride;
  p.options.stride_w = pick({1, 2});
  p.options.dilation_h = dilation;
  p.options.dilation_w = pick({1, 2});
  if (grouping == 0) {
    p.groups = 1;
    p.channels = channels;
    p.out_channels = pick({1, 3, 17, 65});
  } else if (grouping == 1) {
    p.groups = 2;
    p.channels = 2 * channels;
    p.out_channels = 2 * pick({1, 3, 17});
  } else {
    p.groups = std::max<std::int64_t>(channels, 2);
    p.channels = p.groups;
    p.out_channels = p.groups * pick({1, 1, 2});
  }
  const std::int64_t mode = pick({0, 1, 2, 3});  // valid, same, symmetric, asymmetric
  const std::int64_t limit_h = p.options.dilation_h * (p.kernel_h - 1);
  const std::int64_t limit_w = p.options.dilation_w * (p.kernel_w - 1);
  auto amount = [&](std::int64_t limit) {
    return std::uniform_int_distribution<std::int64_t>(0, limit)(rng);
  };
  if (mode == 1 && p.options.stride_h == 1 && p.options.stride_w == 1) {
    p.options.padding = Q::ConvPadding::same();
  } else if (mode == 2) {
    p.options.padding = Q::ConvPadding::symmetric(amount(limit_h), amount(limit_w));
  } else if (mode == 3) {
    p.options.padding = {Q::ConvPadding::Mode::explicit_amounts, amount(limit_h), amount(limit_h),
                         amount(limit_w), amount(limit_w)};
  } else {
    p.options.padding = Q::ConvPadding::valid();
  }
  // The smallest input the kernel fits without padding, plus a few.
  p.height = p.kernel_h == 1 ? pick({1, 1, 4}) : limit_h + 1 + amount(4);
  p.width = limit_w + 1 + amount(5);
  const std::int32_t low = p.type == Q::ScalarType::int8 ? -128 : 0;
  std::uniform_int_distribution<int> byte(0, 255), weight(-128, 127), coin(0, 1);
  p.zero_point = extreme ? (coin(rng) ? low : low + 255) : low + byte(rng);
  p.codes.resize(static_cast<std::size_t>(p.batch * p.channels * p.height * p.width));
  for (auto& c : p.codes) {
    const int v = extreme ? (coin(rng) ? low : low + 255) : low + byte(rng);
    c = static_cast<std::uint8_t>(v);
  }
  p.weights.resize(
      static_cast<std::size_t>(p.out_channels * p.channels / p.groups * p.kernel_h * p.kernel_w));
  for (auto& w : p.weights)
    w = static_cast<std::int8_t>(extreme ? (coin(rng) ? -128 : 127) : weight(rng));
  std::uniform_real_distribution<float> scale(0.001f, 0.02f);
  p.scales.resize(coin(rng) ? 1 : static_cast<std::size_t>(p.out_channels));
  for (auto& s : p.scales)
    s = scale(rng);
  return p;
}

std::string describe(const ConvCase& p, const Q::PackedConvWeights& w) {
  const auto& o = p.options;
  return std::string(p.layout == Q::ConvLayout::nhwc ? "NHWC" : "NCHW") + " " +
         Q::to_string(p.type) + " z=" + std::to_string(p.zero_point) +
         " B=" + std::to_string(p.batch) + " C=" + std::to_string(p.channels) + " " +
         std::to_string(p.height) + "x" + std::to_string(p.width) +
         " O=" + std::to_string(p.out_channels) + " k=" + std::to_string(p.kernel_h) + "x" +
         std::to_string(p.kernel_w) + " s=" + std::to_string(o.stride_h) + "," +
         std::to_string(o.stride_w) + " d=" + std::to_string(o.dilation_h) + "," +
         std::to_string(o.dilation_w) + " pad mode " +
         std::to_string(static_cast<int>(o.padding.mode)) + " (" + std::to_string(o.padding.top) +
         "," + std::to_string(o.padding.bottom) + "," + std::to_string(o.padding.left) + "," +
         std::to_string(o.padding.right) + ") g=" + std::to_string(p.groups) + " path " +
         Q::conv2d_path(input_of(p), w, o);
}

void check_case(const ConvCase& p, std::mt19937_64& rng) {
  const Q::PackedConvWeights w = weights_of(p);
  const Q::ConvInput a = input_of(p);
  const Q::ConvGeometry g = Q::conv2d_geometry(a, w, p.options);
  const std::string where = describe(p, w) + " variant " + Q::to_string(Q::active_variant()) +
                            " threads " + std::to_string(Q::num_threads());
  const auto acc = Q::testing::reference_acc(p, g);
  const std::size_t count = acc.size();

  std::vector<std::int32_t> c32(count + 1, 0x5a5a5a5a);
  Q::conv2d(a, w, p.options, Q::Int32Output{c32.data(), 0});
  for (std::size_t i = 0; i < count; ++i)
    ASSERT_EQ(c32[i], acc[i]) << where << " int32 at " << i;
  ASSERT_EQ(c32[count], 0x5a5a5a5a) << where << " wrote past the output";

  std::vector<float> bias(static_cast<std::size_t>(p.out_channels));
  std::uniform_real_distribution<float> b(-2.0f, 2.0f);
  for (auto& v : bias)
    v = b(rng);
  const auto expected_float = Q::testing::reference_float(p, g, acc, bias);
  std::vector<float> cf(count);
  Q::conv2d(a, w, p.options, Q::FloatOutput{cf.data(), 0, bias.data()});
  for (std::size_t i = 0; i < count; ++i)
    ASSERT_EQ(std::memcmp(&cf[i], &expected_float[i], sizeof(float)), 0)
        << where << " float at " << i << ": " << cf[i] << " vs " << expected_float[i];

  for (const bool relu : {false, true}) {
    Q::RequantizedOutput c;
    c.scale = 0.05f;
    c.qdtype = p.type == Q::ScalarType::int8 ? Q::qint8 : Q::quint8;
    c.zero_point = p.type == Q::ScalarType::int8 ? -3 : 120;
    c.bias = bias.data();
    c.relu = relu;
    std::vector<std::uint8_t> cq(count + 1, 0xa5);
    c.data = cq.data();
    Q::conv2d(a, w, p.options, c);
    const auto expected = Q::testing::reference_requantized(p, g, acc, c, bias);
    for (std::size_t i = 0; i < count; ++i) {
      const std::int32_t got =
          p.type == Q::ScalarType::int8 ? static_cast<std::int8_t>(cq[i]) : cq[i];
      ASSERT_EQ(got, expected[i]) << where << " requantized relu=" << relu << " at " << i;
    }
    ASSERT_EQ(cq[count], 0xa5) << where << " wrote past the output";
  }
}

void report_skipped_variants() {
  const auto supported = Q::supported_variants();
  for (const Q::KernelVariant v :
       {Q::KernelVariant::reference, Q::KernelVariant::avx2_base, Q::KernelVariant::avx_vnni,
        Q::KernelVariant::avx512_bw, Q::KernelVariant::avx512_vnni}) {
    if (std::find(supported.begin(), supported.end(), v) == supported.end())
      std::cout << "[ skip ] variant " << Q::to_string(v) << ": this CPU does not support it\n";
  }
}

TEST_F(ConvTest, SampledConfigurationsMatchTheSpecOnEveryVariantAndThreadCount) {
  const std::uint64_t seed = Q::testing::test_seed();
  report_skipped_variants();
  for (const Q::KernelVariant variant : Q::supported_variants()) {
    Q::set_isa(variant);
    for (const int threads : {1, 2}) {
      Q::set_num_threads(threads);
      std::mt19937_64 rng(seed);  // the same cases on every kernel variant and thread count
      for (int i = 0; i < 60; ++i)
        check_case(random_case(rng, /*extreme=*/i % 4 == 3), rng);
    }
  }
}

// Large enough to take several GEMM tiles, im2col chunks and threads.
TEST_F(ConvTest, LargerShapesMatchTheSpec) {
  std::mt19937_64 rng(Q::testing::test_seed());
  for (const Q::KernelVariant variant : Q::supported_variants()) {
    Q::set_isa(variant);
    Q::set_num_threads(2);
    for (const std::int64_t groups : {1, 2, 32}) {
      ConvCase p;
      p.type = groups == 2 ? Q::ScalarType::int8 : Q::ScalarType::uint8;
      p.zero_point = groups == 2 ? -128 : 255;
      p.layout = groups == 32 ? Q::ConvLayout::nchw : Q::ConvLayout::nhwc;
      p.batch = 2;
      p.channels = 32;
      p.height = 13;
      p.width = 19;
      p.out_channels = groups == 32 ? 32 : 48;
      p.kernel_h = p.kernel_w = 3;
      p.groups = groups;
      p.options.padding = Q::ConvPadding::symmetric(1, 1);
      std::uniform_int_distribution<int> byte(0, 255), weight(-128, 127);
      p.codes.resize(static_cast<std::size_t>(p.batch * p.channels * p.height * p.width));
      for (auto& c : p.codes)
        c = static_cast<std::uint8_t>(byte(rng));
      p.weights.resize(static_cast<std::size_t>(p.out_channels * p.channels / groups * 9));
      for (auto& w : p.weights)
        w = static_cast<std::int8_t>(weight(rng));
      p.scales.assign(static_cast<std::size_t>(p.out_channels), 0.01f);
      check_case(p, rng);
    }
  }
}

TEST_F(ConvTest, QuantizeGivesPerChannelSymmetricCodesInOihw) {
  const std::vector<float> w = {-0.9f, 0.5f, 0.25f, 1.0f, 2.0f, -0.5f, 0.0f, 1.0f};  // [2,1,2,2]
  const auto packed = Q::PackedConvWeights::quantize(w.data(), 2, 1, 2, 2, 1);
  ASSERT_EQ(packed.scales().size(), 2u);
  EXPECT_FLOAT_EQ(packed.scales()[0], 2.0f / 255.0f);
  EXPECT_FLOAT_EQ(packed.scales()[1], 4.0f / 255.0f);
  const auto codes = packed.unpack();
  EXPECT_EQ(codes[0], -115);  // -0.9 / (2/255) = -114.75
  EXPECT_EQ(codes[4], 127);
  EXPECT_EQ(codes[6], 0);
}

TEST_F(ConvTest, BadArgumentsNameTheArgumentAndValue) {
  std::vector<std::int8_t> weights(4 * 3 * 3 * 3, 1);
  const float scale = 0.1f;
  const auto w = Q::PackedConvWeights::pack(weights.data(), 4, 3, 3, 3, 1, {&scale, 1});
  std::vector<std::uint8_t> x(2 * 3 * 5 * 5, 7);
  Q::ConvInput a;
  a.data = x.data();
  a.batch = 2;
  a.channels = 3;
  a.height = 5;
  a.width = 5;
  std::vector<std::int32_t> out(2 * 4 * 25);
  const Q::Int32Output c{out.data(), 0};
  Q::Conv2dOptions o;

  Q::ConvInput wrong = a;
  wrong.channels = 4;
  EXPECT_ERROR_CONTAINS(Q::conv2d(wrong, w, o, c), "a.channels = 4 (expected w.in_channels() = 3");
  o.stride_w = 0;
  EXPECT_ERROR_CONTAINS(Q::conv2d(a, w, o, c), "options.stride_w = 0 (expected >= 1)");
  o.stride_w = -2;
  EXPECT_ERROR_CONTAINS(Q::conv2d(a, w, o, c), "options.stride_w = -2");
  o = {};
  o.dilation_h = 0;
  EXPECT_ERROR_CONTAINS(Q::conv2d(a, w, o, c), "options.dilation_h = 0");
  o = {};
  o.padding = Q::ConvPadding::symmetric(3, 1);
  EXPECT_ERROR_CONTAINS(Q::conv2d(a, w, o, c),
                        "options.padding.top = 3 (expected 0..2 = dilation_h · (kernel_h − 1))");
  o.padding = Q::ConvPadding::symmetric(1, -1);
  EXPECT_ERROR_CONTAINS(Q::conv2d(a, w, o, c), "options.padding.left = -1");
  o = {};
  o.stride_h = 2;
  o.padding = Q::ConvPadding::same();
  EXPECT_ERROR_CONTAINS(Q::conv2d(a, w, o, c), "\"same\" with stride 2");
  o = {};
  Q::ConvInput small = a;
  small.height = 2;
  EXPECT_ERROR_CONTAINS(Q::conv2d(small, w, o, c),
                        "a.height = 2 with padding 0 + 0 is smaller than the dilated kernel (3)");
  o.dilation_w = 3;
  EXPECT_ERROR_CONTAINS(Q::conv2d(a, w, o, c),
                        "a.width = 5 with padding 0 + 0 is smaller than the dilated kernel (7)");
  o = {};
  EXPECT_ERROR_CONTAINS(Q::conv2d(a, w, o, Q::Int32Output{out.data(), 3}), "c.row_stride = 3");
  Q::RequantizedOutput r;
  r.data = out.data();
  r.scale = 0.0f;
  EXPECT_ERROR_CONTAINS(Q::conv2d(a, w, o, r), "conv2d: c.scale = 0");
  EXPECT_ERROR_CONTAINS(Q::PackedConvWeights::pack(weights.data(), 4, 3, 3, 3, 3, {&scale, 1}),
                        "out_channels = 4 is not a multiple of groups = 3");
  // An empty batch writes nothing and is valid.
  Q::ConvInput empty = a;
  empty.batch = 0;
  EXPECT_NO_THROW(Q::conv2d(empty, w, o, Q::Int32Output{nullptr, 0}));
}

}  // namespace
