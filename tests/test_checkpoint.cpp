// Tests of checkpoint.hpp: the quantized checkpoint format and the quantize / dequantize jobs.
#include "lucid/quantization/checkpoint.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "checkpoint_test_support.hpp"
#include "lucid/quantization/quantize.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::read_bytes;
using Q::testing::SmallModel;
using Q::testing::stored_bytes;
using Q::testing::TempDir;

namespace {

// What the core gives for `x` quantized with (resolved) `s`.
Q::QuantizedTensor core_quantize(const Q::TensorView& x, const Q::QuantSettings& s) {
  if (s.group_size > 0) return Q::quantize_per_group(x, s.qscheme, s.qdtype, s.axis, s.group_size);
  return Q::quantize(x, s.qscheme, s.qdtype, s.axis);
}

// A recipe quantizing every floating tensor of rank >= 2 with `settings`.
Q::QuantizeCheckpointOptions with_settings(const Q::QuantSettings& settings) {
  Q::QuantizeCheckpointOptions options;
  options.recipe = Q::QuantRecipe{{Q::default_rule(settings)}};
  return options;
}

std::string bytes_of(const Q::Tensor& t) {
  return {static_cast<const char*>(t.data()), t.nbytes()};
}

void expect_sums_close(double actual, double expected) {
  if (std::isinf(expected)) {
    EXPECT_EQ(actual, expected);
  } else {
    EXPECT_NEAR(actual, expected, 1e-12 * std::abs(expected));  // summation order only
  }
}

// The streamed report figures against the core's error_metrics of the same tensors.
void expect_metrics_match(const Q::ErrorMetrics& report, const Q::ErrorMetrics& core) {
  EXPECT_EQ(report.count, core.count);
  EXPECT_EQ(report.nonfinite_count, core.nonfinite_count);
  EXPECT_EQ(report.max_abs_error, core.max_abs_error);
  EXPECT_EQ(report.fraction_saturated, core.fraction_saturated);
  expect_sums_close(report.mse, core.mse);
  expect_sums_close(report.sqnr_db, core.sqnr_db);
  expect_sums_close(report.cosine_similarity, core.cosine_similarity);
}

TEST(CheckpointQuantize, DefaultQuantizesMatricesAndKeepsTheRest) {
  const SmallModel model(Q::testing::test_seed());
  TempDir dir;
  model.write(dir / "in.safetensors");
  const Q::CheckpointReport report =
      Q::quantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors");

  const auto out = Q::SafetensorsFile::open(dir / "out.safetensors");
  std::vector<std::string> names;
  for (const auto& entry : out.entries())
    names.push_back(entry.name);
  EXPECT_EQ(names, (std::vector<std::string>{"embed.weight", "embed.weight.scale",
                                             "layers.0.fc.weight", "layers.0.fc.weight.scale",
                                             "layers.0.fc.bias", "norm.weight", "position_ids"}));
  EXPECT_EQ(out.find("embed.weight")->type, Q::ScalarType::int8);
  EXPECT_EQ(out.find("embed.weight")->shape, (Q::Shape{16, 8}));
  EXPECT_EQ(out.find("embed.weight.scale")->type, Q::ScalarType::float32);
  EXPECT_EQ(out.find("embed.weight.scale")->shape, (Q::Shape{16}));
  EXPECT_EQ(out.find("embed.weight.zero_point"), nullptr);  // symmetric: no zero points

  const auto in = Q::SafetensorsFile::open(dir / "in.safetensors");
  for (const char* kept : {"layers.0.fc.bias", "norm.weight", "position_ids"}) {
    EXPECT_EQ(stored_bytes(out, kept), stored_bytes(in, kept)) << kept;
    EXPECT_EQ(out.find(kept)->type, in.find(kept)->type) << kept;
  }
  EXPECT_EQ(out.metadata().at("format"), "pt");
  EXPECT_EQ(out.metadata().at("producer"), "test");
  EXPECT_EQ(out.metadata().at("lucidq.format"), "1");
  EXPECT_EQ(out.metadata().size(), 5u);  // two user keys, the version, two tensors

  ASSERT_EQ(report.tensors.size(), 5u);
  EXPECT_EQ(report.tensors[0].reason, "default");
  EXPECT_EQ(report.tensors[0].settings, Q::QuantSettings{});
  EXPECT_EQ(report.tensors[2].reason, "1-D; default needs 2-D+");
  EXPECT_FALSE(report.tensors[2].settings.has_value());
  EXPECT_EQ(report.tensors[4].reason, "I64 is not floating point");
  EXPECT_EQ(report.quantized_count(), 2u);
  EXPECT_EQ(report.tensors[0].bytes_before, 16u * 8 * 2);
  EXPECT_EQ(report.tensors[0].bytes_after, 16u * 8 + 16 * 4);
  EXPECT_EQ(report.tensors[2].bytes_after, report.tensors[2].bytes_before);
  EXPECT_EQ(report.input_file_bytes, std::filesystem::file_size(dir / "in.safetensors"));
  EXPECT_EQ(report.output_file_bytes, std::filesystem::file_size(dir / "out.safetensors"));
}

TEST(CheckpointFormat, TensorMetadataIsPinned) {
  const SmallModel model(1);
  TempDir dir;
  model.write(dir / "in.safetensors");
  Q::quantize_checkpoint(dir / "in.safetensors", dir / "q8.safetensors");
  EXPECT_EQ(Q::SafetensorsFile::open(dir / "q8.safetensors")
                .metadata()
                .at("lucidq.tensor.layers.0.fc.weight"),
            R"({"dtype":"qint8","scheme":"per_channel_symmetric","axis":0,"group_size":0,)"
            R"("quant_min":-128,"quant_max":127,"packing":"none","shape":[12,40],)"
            R"("original_dtype":"F32","scale":"layers.0.fc.weight.scale"})");

  Q::quantize_checkpoint(dir / "in.safetensors", dir / "q4.safetensors",
                         with_settings({Q::per_channel_affine, Q::quint4, -1, 16}));
  const auto q4 = Q::SafetensorsFile::open(dir / "q4.safetensors");
  EXPECT_EQ(q4.metadata().at("lucidq.tensor.layers.0.fc.weight"),
            R"({"dtype":"quint4","scheme":"per_channel_affine","axis":1,"group_size":16,)"
            R"("quant_min":0,"quant_max":15,"packing":"packed4","shape":[12,40],)"
            R"("original_dtype":"F32","scale":"layers.0.fc.weight.scale",)"
            R"("zero_point":"layers.0.fc.weight.zero_point"})");
  EXPECT_EQ(q4.find("layers.0.fc.weight")->type, Q::ScalarType::uint8);
  EXPECT_EQ(q4.find("layers.0.fc.weight")->shape, (Q::Shape{240}));  // 480 codes, two per byte
  EXPECT_EQ(q4.find("layers.0.fc.weight.scale")->shape, (Q::Shape{12, 3}));  // ceil(40 / 16)
  EXPECT_EQ(q4.find("layers.0.fc.weight.zero_point")->type, Q::ScalarType::uint8);
  EXPECT_EQ(q4.find("layers.0.fc.weight.zero_point")->shape, (Q::Shape{12, 3}));
}

TEST(CheckpointFormat, LayoutOfEachStorage) {
  Q::QuantizedTensorLayout layout{"w", {3, 5}, Q::ScalarType::bfloat16, {}};
  const struct {
    Q::QuantSettings settings;
    Q::ScalarType codes;
    Q::Shape code_shape;
    Q::Shape param_shape;
    std::optional<Q::ScalarType> zero_point;
  } cases[] = {
      {{Q::per_tensor_affine, Q::quint8, 0, 0},
       Q::ScalarType::uint8,
       {3, 5},
       {},
       Q::ScalarType::uint8},
      {{Q::per_tensor_symmetric, Q::qint8, 0, 0}, Q::ScalarType::int8, {3, 5}, {}, std::nullopt},
      {{Q::per_channel_affine, Q::qint4, 1, 0},
       Q::ScalarType::uint8,
       {8},
       {5},
       Q::ScalarType::int8},
      {{Q::per_channel_affine, Q::quint2, 0, 2},
       Q::ScalarType::uint8,
       {4},
       {2, 5},
       Q::ScalarType::uint8},
      {{Q::per_channel_affine, Q::qint16, 0, 0},
       Q::ScalarType::int16,
       {3, 5},
       {3},
       Q::ScalarType::int16},
      {{Q::per_channel_affine, Q::QDtype::full_range(16, false), 0, 0},
       Q::ScalarType::uint16,
       {3, 5},
       {3},
       Q::ScalarType::uint16},
      {{Q::per_channel_affine, Q::qint32, 1, 2},
       Q::ScalarType::int32,
       {3, 5},
       {3, 3},
       Q::ScalarType::int32},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(Q::describe(c.settings));
    layout.settings = c.settings;
    EXPECT_EQ(layout.code_type(), c.codes);
    EXPECT_EQ(layout.code_shape(), c.code_shape);
    EXPECT_EQ(layout.param_shape(), c.param_shape);
    EXPECT_EQ(layout.zero_point_name().has_value(), c.zero_point.has_value());
    if (c.zero_point) EXPECT_EQ(layout.zero_point_type(), *c.zero_point);
    const std::uint64_t params = static_cast<std::uint64_t>(Q::shape_numel(c.param_shape));
    EXPECT_EQ(layout.nbytes(), Q::shape_numel(c.code_shape) * Q::element_size(c.codes) +
                                   4 * params +
                                   (c.zero_point ? params * Q::element_size(*c.zero_point) : 0));
  }
}

// Quantize -> read back -> dequantize, for every scheme, dtype and granularity.
class CheckpointRoundTrip : public ::testing::TestWithParam<Q::QuantSettings> {};

TEST_P(CheckpointRoundTrip, MatchesTheCoreBitForBit) {
  const Q::QuantSettings settings = GetParam();
  const SmallModel model(Q::testing::test_seed());
  TempDir dir;
  model.write(dir / "in.safetensors");
  const Q::CheckpointReport report = Q::quantize_checkpoint(
      dir / "in.safetensors", dir / "q.safetensors", with_settings(settings));
  const auto q_file = Q::SafetensorsFile::open(dir / "q.safetensors");
  const Q::CheckpointContents contents = Q::read_checkpoint_contents(q_file);
  ASSERT_EQ(contents.format_version, "1");
  EXPECT_EQ(contents.user_metadata, model.metadata);
  ASSERT_EQ(contents.tensors.size(), model.tensors.size());

  Q::dequantize_checkpoint(dir / "q.safetensors", dir / "f.safetensors");
  const auto f_file = Q::SafetensorsFile::open(dir / "f.safetensors");
  EXPECT_EQ(f_file.metadata(), model.metadata);
  ASSERT_EQ(f_file.entries().size(), model.tensors.size());

  for (std::size_t i = 0; i < model.tensors.size(); ++i) {
    const auto& [name, original] = model.tensors[i];
    SCOPED_TRACE(name);
    const Q::CheckpointTensor& t = contents.tensors[i];
    EXPECT_EQ(t.entry.name, name);
    if (original.shape().size() < 2 || original.type() == Q::ScalarType::int64) {
      EXPECT_FALSE(t.quantized.has_value());
      EXPECT_EQ(stored_bytes(f_file, name), bytes_of(original));  // copied bit for bit
      continue;
    }
    ASSERT_TRUE(t.quantized.has_value());
    const Q::QuantSettings resolved = Q::resolve_settings(settings, original.shape());
    EXPECT_EQ(t.quantized->settings, resolved);
    EXPECT_EQ(t.quantized->original_type, original.type());
    const Q::QuantizedTensor expected = core_quantize(original, resolved);
    const Q::QuantizedTensor loaded = Q::load_quantized_tensor(q_file, *t.quantized);
    EXPECT_EQ(loaded.shape(), original.shape());
    EXPECT_TRUE(std::ranges::equal(loaded.storage(), expected.storage()));
    EXPECT_EQ(loaded.qparams().scale, expected.qparams().scale);
    EXPECT_EQ(loaded.qparams().zero_point, expected.qparams().zero_point);

    EXPECT_EQ(f_file.find(name)->type, Q::ScalarType::float32);
    EXPECT_EQ(f_file.find(name)->shape, original.shape());
    EXPECT_EQ(stored_bytes(f_file, name), bytes_of(Q::dequantize(expected)));
    expect_metrics_match(report.tensors[i].metrics, Q::error_metrics(original, expected));
    EXPECT_EQ(report.tensors[i].bytes_after, t.quantized->nbytes());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Settings, CheckpointRoundTrip,
    ::testing::Values(Q::QuantSettings{Q::per_tensor_affine, Q::quint8, 0, 0},
                      Q::QuantSettings{Q::per_tensor_symmetric, Q::qint8, 0, 0},
                      Q::QuantSettings{Q::per_channel_affine, Q::quint8, 0, 0},
                      Q::QuantSettings{Q::per_channel_symmetric, Q::qint8, 1, 0},
                      Q::QuantSettings{Q::per_channel_symmetric, Q::qint8.narrow_range(), 0, 0},
                      Q::QuantSettings{Q::per_channel_affine, Q::quint4, -1, 16},
                      Q::QuantSettings{Q::per_channel_symmetric, Q::qint4, 1, 7},
                      Q::QuantSettings{Q::per_channel_affine, Q::qint4, 0, 3},
                      Q::QuantSettings{Q::per_channel_affine, Q::qint2, 1, 5},
                      Q::QuantSettings{Q::per_channel_symmetric, Q::quint2, 0, 0},
                      Q::QuantSettings{Q::per_channel_affine, Q::qint16, 0, 0},
                      Q::QuantSettings{Q::per_tensor_affine, Q::qint32, 0, 0}));

TEST(CheckpointDequantize, ToHalfTypesAndTheOriginalDtype) {
  const SmallModel model(Q::testing::test_seed());
  TempDir dir;
  model.write(dir / "in.safetensors");
  Q::quantize_checkpoint(dir / "in.safetensors", dir / "q.safetensors");
  const Q::QuantSettings s{};
  const Q::Tensor embed = Q::dequantize(core_quantize(model.tensor("embed.weight"), s));
  const Q::Tensor fc = Q::dequantize(core_quantize(model.tensor("layers.0.fc.weight"), s));

  struct Case {
    std::optional<Q::ScalarType> dtype;
    Q::ScalarType embed_type, fc_type;
  };
  for (const Case c :
       {Case{Q::ScalarType::bfloat16, Q::ScalarType::bfloat16, Q::ScalarType::bfloat16},
        Case{Q::ScalarType::float16, Q::ScalarType::float16, Q::ScalarType::float16},
        Case{std::nullopt, Q::ScalarType::bfloat16, Q::ScalarType::float32}}) {
    SCOPED_TRACE(c.dtype ? Q::to_string(*c.dtype) : "original");
    const auto out = dir / "f.safetensors";
    Q::DequantizeCheckpointOptions options;
    options.dtype = c.dtype;
    options.overwrite = true;
    const Q::DequantizeSummary summary =
        Q::dequantize_checkpoint(dir / "q.safetensors", out, options);
    EXPECT_EQ(summary.dequantized, 2u);
    EXPECT_EQ(summary.copied, 3u);
    const auto file = Q::SafetensorsFile::open(out);
    for (const auto& [name, values, type] : {std::tuple{"embed.weight", &embed, c.embed_type},
                                             std::tuple{"layers.0.fc.weight", &fc, c.fc_type}}) {
      SCOPED_TRACE(name);
      ASSERT_EQ(file.find(name)->type, type);
      std::string expected;
      for (const float v : values->floats()) {
        if (type == Q::ScalarType::float32) {
          expected.append(reinterpret_cast<const char*>(&v), 4);
          continue;
        }
        const std::uint16_t bits =
            type == Q::ScalarType::bfloat16 ? Q::float_to_bfloat16(v) : Q::float_to_float16(v);
        expected.append(reinterpret_cast<const char*>(&bits), 2);
      }
      EXPECT_EQ(stored_bytes(file, name), expected);
    }
  }
  Q::DequantizeCheckpointOptions bad;
  bad.dtype = Q::ScalarType::int8;
  EXPECT_ERROR_CONTAINS(Q::dequantize_checkpoint(dir / "q.safetensors", dir / "x.safetensors", bad),
                        "dequantize: dtype = int8 (expected float32, float16 or bfloat16");
  EXPECT_FALSE(std::filesystem::exists(dir / "x.safetensors"));
}

TEST(CheckpointDequantize, PlainFileIsCopied) {
  const SmallModel model(3);
  TempDir dir;
  model.write(dir / "in.safetensors");
  const Q::DequantizeSummary summary =
      Q::dequantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors");
  EXPECT_EQ(summary.dequantized, 0u);
  EXPECT_EQ(summary.copied, 5u);
  EXPECT_EQ(read_bytes(dir / "out.safetensors"), read_bytes(dir / "in.safetensors"));
}

TEST(CheckpointQuantize, Float64AndFloat16Inputs) {
  TempDir dir;
  std::mt19937_64 rng(Q::testing::test_seed());
  const Q::Tensor f64 =
      Q::testing::make_tensor(Q::ScalarType::float64, {4, 6}, Q::testing::weight_values(4, 6, rng));
  const Q::Tensor f16 =
      Q::testing::make_tensor(Q::ScalarType::float16, {6, 4}, Q::testing::weight_values(6, 4, rng));
  Q::write_safetensors(dir / "in.safetensors", {{"a", f64.view()}, {"b", f16.view()}});
  Q::quantize_checkpoint(dir / "in.safetensors", dir / "q.safetensors");
  const auto q = Q::SafetensorsFile::open(dir / "q.safetensors");
  const Q::CheckpointContents contents = Q::read_checkpoint_contents(q);
  ASSERT_TRUE(contents.tensors[0].quantized && contents.tensors[1].quantized);
  EXPECT_EQ(contents.tensors[0].quantized->original_type, Q::ScalarType::float64);
  // float64 is rounded to float32 first.
  const Q::Tensor narrowed = Q::Tensor::from_floats(Q::to_float32(f64, "a"), {4, 6});
  const Q::QuantizedTensor expected_a = core_quantize(narrowed, {});
  EXPECT_TRUE(std::ranges::equal(
      Q::load_quantized_tensor(q, *contents.tensors[0].quantized).storage(), expected_a.storage()));
  EXPECT_TRUE(
      std::ranges::equal(Q::load_quantized_tensor(q, *contents.tensors[1].quantized).storage(),
                         core_quantize(f16, {}).storage()));

  Q::DequantizeCheckpointOptions original;
  original.dtype = std::nullopt;
  Q::dequantize_checkpoint(dir / "q.safetensors", dir / "f.safetensors", original);
  const auto f = Q::SafetensorsFile::open(dir / "f.safetensors");
  EXPECT_EQ(f.find("a")->type, Q::ScalarType::float64);
  EXPECT_EQ(f.find("b")->type, Q::ScalarType::float16);
  std::string expected;
  const Q::Tensor dequantized_a = Q::dequantize(expected_a);
  for (const float v : dequantized_a.floats()) {
    const double wide = v;
    expected.append(reinterpret_cast<const char*>(&wide), 8);
  }
  EXPECT_EQ(stored_bytes(f, "a"), expected);
}

TEST(CheckpointQuantize, EmptyAndScalarTensors) {
  TempDir dir;
  const Q::Tensor empty(Q::ScalarType::float32, {0, 4});
  const Q::Tensor scalar = Q::Tensor::from_floats({2.5f}, {});
  Q::write_safetensors(dir / "in.safetensors",
                       {{"empty", empty.view()}, {"scalar", scalar.view()}});
  Q::QuantizeCheckpointOptions options;
  options.recipe.rules.insert(
      options.recipe.rules.begin(),
      {{"scalar"}, 0, Q::QuantSettings{Q::per_tensor_symmetric, Q::qint8, 0, 0}, "s"});
  const Q::CheckpointReport report =
      Q::quantize_checkpoint(dir / "in.safetensors", dir / "q.safetensors", options);
  ASSERT_EQ(report.quantized_count(), 2u);
  EXPECT_EQ(report.tensors[0].metrics.count, 0);
  EXPECT_EQ(report.tensors[1].metrics.count, 1);
  const auto q = Q::SafetensorsFile::open(dir / "q.safetensors");
  EXPECT_EQ(q.find("empty.scale")->shape, (Q::Shape{0}));
  EXPECT_EQ(q.find("scalar.scale")->shape, (Q::Shape{}));
  Q::dequantize_checkpoint(dir / "q.safetensors", dir / "f.safetensors");
  const auto f = Q::SafetensorsFile::open(dir / "f.safetensors");
  EXPECT_EQ(f.find("empty")->shape, (Q::Shape{0, 4}));
  const float expected =
      Q::dequantize(core_quantize(scalar, {Q::per_tensor_symmetric, Q::qint8, 0, 0})).floats()[0];
  EXPECT_EQ(stored_bytes(f, "scalar"), std::string(reinterpret_cast<const char*>(&expected), 4));
}

TEST(CheckpointQuantize, CallbacksSeeEveryTensor) {
  const SmallModel model(5);
  TempDir dir;
  model.write(dir / "in.safetensors");
  Q::QuantizeCheckpointOptions options;
  std::vector<Q::CheckpointProgress> progress;
  std::vector<std::string> progress_names;  // the views are valid only during the call
  std::vector<std::pair<std::string, Q::Shape>> seen;
  options.progress = [&](const Q::CheckpointProgress& p) {
    progress.push_back(p);
    progress_names.emplace_back(p.tensor);
  };
  options.on_tensor = [&](std::string_view name, const Q::TensorView& x,
                          const Q::QuantizedTensor& q) {
    EXPECT_EQ(x.shape, q.shape());
    seen.emplace_back(std::string(name), x.shape);
  };
  Q::quantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors", options);
  ASSERT_EQ(progress.size(), 5u);
  std::uint64_t total = 0;
  for (const auto& [name, t] : model.tensors)
    total += t.nbytes();
  for (std::size_t i = 0; i < progress.size(); ++i) {
    EXPECT_EQ(progress[i].tensors_done, i + 1);
    EXPECT_EQ(progress[i].tensor_count, 5u);
    EXPECT_EQ(progress[i].bytes_total, total);
    EXPECT_EQ(progress_names[i], model.tensors[i].first);
  }
  EXPECT_EQ(progress.back().bytes_done, total);
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, Q::Shape>>{
                      {"embed.weight", {16, 8}}, {"layers.0.fc.weight", {12, 40}}}));

  options.on_tensor = [](std::string_view, const Q::TensorView&, const Q::QuantizedTensor&) {
    throw Q::Error("plot failed");
  };
  EXPECT_ERROR_CONTAINS(
      Q::quantize_checkpoint(dir / "in.safetensors", dir / "x.safetensors", options),
      "plot failed");
  EXPECT_FALSE(std::filesystem::exists(dir / "x.safetensors"));
}

}  // namespace
