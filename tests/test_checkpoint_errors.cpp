// Tests of checkpoint.hpp on bad input: every malformed file, non-finite values, --strict,
// existing outputs, name clashes and inconsistent lucidq metadata.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "checkpoint_test_support.hpp"
#include "lucid/quantization/checkpoint.hpp"
#include "lucid/quantization/gguf_quantize.hpp"
#include "lucid/quantization/quantize.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::raw_safetensors;
using Q::testing::read_bytes;
using Q::testing::SmallModel;
using Q::testing::TempDir;
using Q::testing::write_bytes;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// A valid two-tensor file: "a" F32 [2, 2] at [0, 16], "b" F32 [2] at [16, 24].
const std::string kGoodHeader = R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                                R"("b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}})";
const std::string kGoodData(24, '\0');

struct BadFile {
  const char* what;
  std::string bytes;
  const char* message;  // a piece of the error message (after the file name)
  const char* tensor;   // the tensor the message must name, or nullptr
};

std::vector<BadFile> bad_files() {
  const std::string good = raw_safetensors(kGoodHeader, kGoodData);
  const std::string huge_length("\x01\xE1\xF5\x05\0\0\0\0", 8);  // 100000001, little-endian
  std::string past_end = good;
  past_end[0] = static_cast<char>(0xFF);
  auto header = [](const std::string& h, std::size_t data = 24) {
    return raw_safetensors(h, std::string(data, '\0'));
  };
  return {
      {"truncated data", good.substr(0, good.size() - 5), "data_offsets [16, 24] run past the end",
       "b"},
      {"truncated to 5 bytes", good.substr(0, 5), "file is 5 bytes (expected at least 8", nullptr},
      {"header length past the end", past_end, "header length 255 runs past the end", nullptr},
      {"header over 100 MB", huge_length + "{}", "exceeds the limit of 100000000 bytes", nullptr},
      {"a GGUF file", std::string("GGUF\x03\0\0\0", 8) + std::string(64, '\0'),
       "is a GGUF file, not a safetensors file", nullptr},
      {"another binary format",
       std::string("\x7F"
                   "ELF\x02\x01\x01\0",
                   8) +
           std::string(64, 'x'),
       "is not a safetensors file (no JSON header", nullptr},
      {"invalid JSON", header(R"({"a":{"dtype":"F32",)"), "header is not valid JSON", nullptr},
      {"invalid UTF-8", header("{\"a\xff\":{}}"), "header is not valid UTF-8", nullptr},
      {"unknown dtype", header(R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2),
       "unknown dtype \"F8_E4M3\"", "a"},
      {"size differs from offsets",
       header(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 12),
       "data_offsets [0, 12] hold 12 bytes but F32 [2, 2] needs 16", "a"},
      {"overlapping offsets",
       header(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
              16),
       "overlap tensor", "b"},
      {"offsets out of order (end before begin)",
       header(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8),
       "end before they begin", "a"},
      {"hole between tensors",
       header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
              20),
       "leave a hole of 4 bytes", "b"},
      {"duplicate names",
       header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
              R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
              16),
       "the name appears twice", "a"},
      {"offsets past the end",
       header(R"({"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}})", 24),
       "run past the end of the file", "a"},
      {"shape product overflows",
       header(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
       "has more elements than 2^63 - 1", "a"},
  };
}

TEST(CheckpointBadInput, EachMalformedFileGivesOneClearErrorAndNoOutput) {
  for (const BadFile& bad : bad_files()) {
    SCOPED_TRACE(bad.what);
    TempDir dir;
    const auto in = dir / "model.safetensors";
    write_bytes(in, bad.bytes);
    try {
      Q::quantize_checkpoint(in, dir / "out.safetensors");
      ADD_FAILURE() << "no error";
    } catch (const Q::Error& e) {
      const std::string message = e.what();
      EXPECT_TRUE(message.starts_with(in.string() + ": ")) << message;
      EXPECT_NE(message.find(bad.message), std::string::npos) << message;
      if (bad.tensor != nullptr) {
        EXPECT_NE(message.find(std::string("tensor \"") + bad.tensor + "\""), std::string::npos)
            << message;
      }
    }
    EXPECT_EQ(dir.files(), std::vector<std::string>{"model.safetensors"});  // no output, no temp
  }
}

TEST(CheckpointBadInput, ExistingOutputIsNeverReplacedWithoutOverwrite) {
  const SmallModel model(7);
  TempDir dir;
  model.write(dir / "in.safetensors");
  write_bytes(dir / "out.safetensors", "precious");
  EXPECT_ERROR_CONTAINS(Q::quantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors"),
                        (dir / "out.safetensors").string() + ": already exists");
  EXPECT_EQ(read_bytes(dir / "out.safetensors"), "precious");
  EXPECT_ERROR_CONTAINS(Q::dequantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors"),
                        "already exists");
  EXPECT_EQ(read_bytes(dir / "out.safetensors"), "precious");

  // A bad input never touches an existing output, even with overwrite.
  write_bytes(dir / "bad.safetensors", "short");
  Q::QuantizeCheckpointOptions overwrite;
  overwrite.overwrite = true;
  EXPECT_ERROR_CONTAINS(
      Q::quantize_checkpoint(dir / "bad.safetensors", dir / "out.safetensors", overwrite),
      "bad.safetensors: file is 5 bytes");
  EXPECT_EQ(read_bytes(dir / "out.safetensors"), "precious");

  Q::quantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors", overwrite);
  EXPECT_EQ(Q::SafetensorsFile::open(dir / "out.safetensors").metadata().at("lucidq.format"), "1");
  EXPECT_EQ(dir.files(),
            (std::vector<std::string>{"bad.safetensors", "in.safetensors", "out.safetensors"}));
}

// A file with a [3, 4] weight holding NaN, +Inf and -Inf and a [3] bias holding a NaN.
void write_nonfinite_model(const std::filesystem::path& path) {
  const Q::Tensor w =
      Q::Tensor::from_floats({1, kNaN, -2, 3, kInf, 0.5f, -0.25f, 1, -kInf, 2, 2, 1}, {3, 4});
  const Q::Tensor b = Q::Tensor::from_floats({0.1f, kNaN, 0.3f}, {3});
  Q::write_safetensors(path, {{"w", w.view()}, {"b", b.view()}});
}

TEST(CheckpointNonFinite, CountedReportedAndQuantizedAsTheCoreDoes) {
  TempDir dir;
  write_nonfinite_model(dir / "in.safetensors");
  const Q::CheckpointReport report =
      Q::quantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors");
  EXPECT_EQ(report.tensors[0].metrics.nonfinite_count, 3);
  EXPECT_EQ(report.tensors[0].metrics.count, 9);
  EXPECT_EQ(report.tensors[1].metrics.nonfinite_count, 1);  // kept, still counted
  EXPECT_EQ(report.tensors[1].metrics.count, 2);
  EXPECT_EQ(report.nonfinite_count(), 4);
  EXPECT_TRUE(std::isfinite(report.tensors[0].metrics.mse));

  const auto in = Q::SafetensorsFile::open(dir / "in.safetensors");
  const auto out = Q::SafetensorsFile::open(dir / "out.safetensors");
  const Q::QuantizedTensor expected =
      Q::quantize(in.view("w"), Q::per_channel_symmetric, Q::qint8, 0);
  const auto contents = Q::read_checkpoint_contents(out);
  const Q::QuantizedTensor stored = Q::load_quantized_tensor(out, *contents.tensors[0].quantized);
  EXPECT_EQ(stored.int_repr(), expected.int_repr());
  EXPECT_EQ(stored.int_repr()[1], 0);     // NaN -> the zero point
  EXPECT_EQ(stored.int_repr()[4], 127);   // +Inf saturates
  EXPECT_EQ(stored.int_repr()[8], -128);  // -Inf saturates
}

TEST(CheckpointNonFinite, StrictIsAnErrorNamingTheTensorAndCount) {
  TempDir dir;
  write_nonfinite_model(dir / "in.safetensors");
  Q::QuantizeCheckpointOptions strict;
  strict.strict = true;
  EXPECT_ERROR_CONTAINS(
      Q::quantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors", strict),
      (dir / "in.safetensors").string() + ": tensor \"w\": 3 non-finite values (NaN or Inf)");
  // Tensors kept as they are are checked too.
  strict.recipe = Q::compose_recipe({"w"}, {}, {}, {});
  EXPECT_ERROR_CONTAINS(
      Q::quantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors", strict),
      "tensor \"w\": 3 non-finite values");
  strict.recipe = Q::QuantizeCheckpointOptions{}.recipe;
  const Q::Tensor w = Q::Tensor::from_floats({1, 2, 3, 4}, {2, 2});
  const Q::Tensor b = Q::Tensor::from_floats({0.1f, kNaN}, {2});
  Q::write_safetensors(dir / "in.safetensors", {{"w", w.view()}, {"b", b.view()}}, {}, true);
  EXPECT_ERROR_CONTAINS(
      Q::quantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors", strict),
      "tensor \"b\": 1 non-finite values");
  EXPECT_EQ(dir.files(), std::vector<std::string>{"in.safetensors"});
}

TEST(CheckpointPlan, CompanionNameClashIsAnError) {
  TempDir dir;
  const Q::Tensor w = Q::Tensor::from_floats({1, 2, 3, 4}, {2, 2});
  const Q::Tensor s = Q::Tensor::from_floats({1, 1}, {2});
  Q::write_safetensors(dir / "in.safetensors", {{"w", w.view()}, {"w.scale", s.view()}});
  EXPECT_ERROR_CONTAINS(
      Q::quantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors"),
      "tensor \"w\": quantizing it stores \"w.scale\", a name the input already uses");
  EXPECT_EQ(dir.files(), std::vector<std::string>{"in.safetensors"});
  Q::QuantizeCheckpointOptions exclude;
  exclude.recipe = Q::compose_recipe({"w"}, {}, {}, {});
  EXPECT_EQ(Q::quantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors", exclude)
                .quantized_count(),
            0u);
}

TEST(CheckpointPlan, RuleThatDoesNotFitNamesFileTensorAndRule) {
  const SmallModel model(9);
  TempDir dir;
  model.write(dir / "in.safetensors");
  Q::QuantizeCheckpointOptions options;
  options.recipe = Q::parse_recipe(R"({"rules": [{"match": "*.bias", "axis": 1}]})", "recipe.json");
  EXPECT_ERROR_CONTAINS(
      Q::quantize_checkpoint(dir / "in.safetensors", dir / "out.safetensors", options),
      (dir / "in.safetensors").string() +
          ": tensor \"layers.0.fc.bias\": recipe.json rules[0]: axis = 1");
  EXPECT_EQ(dir.files(), std::vector<std::string>{"in.safetensors"});
}

TEST(CheckpointPlan, ALucidqCheckpointIsNotQuantizedAgain) {
  const SmallModel model(11);
  TempDir dir;
  model.write(dir / "in.safetensors");
  Q::quantize_checkpoint(dir / "in.safetensors", dir / "q.safetensors");
  EXPECT_ERROR_CONTAINS(Q::quantize_checkpoint(dir / "q.safetensors", dir / "qq.safetensors"),
                        "q.safetensors: already a lucidq checkpoint");
  // GGUF output refuses it the same way (its codes would become meaningless integer tensors).
  EXPECT_ERROR_CONTAINS(Q::quantize_gguf(dir / "q.safetensors", dir / "q.gguf"),
                        "q.safetensors: already a lucidq checkpoint");
  EXPECT_ERROR_CONTAINS(Q::plan_gguf_quantization(dir / "q.safetensors", {}),
                        "expected a plain safetensors file: dequantize it first");
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"in.safetensors", "q.safetensors"}));
}

// Rewrites the quantized file `from` into `to` with `edit` applied to its metadata and the
// tensors named in `drop` left out.
void rewrite(const std::filesystem::path& from, const std::filesystem::path& to,
             const std::function<void(std::map<std::string, std::string>&)>& edit,
             const std::set<std::string>& drop = {}) {
  const auto file = Q::SafetensorsFile::open(from);
  std::map<std::string, std::string> metadata = file.metadata();
  edit(metadata);
  std::vector<std::pair<std::string, Q::TensorView>> tensors;
  for (const auto& entry : file.entries()) {
    if (!drop.contains(entry.name)) tensors.emplace_back(entry.name, file.view(entry));
  }
  Q::write_safetensors(to, tensors, metadata, /*overwrite=*/true);
}

TEST(ReadCheckpointContents, InconsistentMetadataNamesFileTensorAndKey) {
  const SmallModel model(13);
  TempDir dir;
  model.write(dir / "in.safetensors");
  Q::quantize_checkpoint(dir / "in.safetensors", dir / "q.safetensors", [] {
    Q::QuantizeCheckpointOptions o;
    o.recipe = Q::QuantRecipe{{Q::default_rule({Q::per_channel_affine, Q::quint8, 0, 0})}};
    return o;
  }());
  const std::string key = "lucidq.tensor.embed.weight";
  const std::string good = Q::SafetensorsFile::open(dir / "q.safetensors").metadata().at(key);
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  const struct {
    const char* what;
    std::function<void(std::map<std::string, std::string>&)> edit;
    std::set<std::string> drop;
    std::string message;
  } cases[] = {
      {"newer format",
       [](auto& m) { m["lucidq.format"] = "2"; },
       {},
       "lucidq checkpoint format \"2\" (expected \"1\""},
      {"no format key",
       [](auto& m) { m.erase("lucidq.format"); },
       {},
       "tensor \"embed.weight\": has \"lucidq.tensor.embed.weight\" metadata but the file has no "
       "\"lucidq.format\""},
      {"not JSON",
       [&](auto& m) { m[key] = "{"; },
       {},
       "tensor \"embed.weight\": metadata \"lucidq.tensor.embed.weight\" is not valid JSON"},
      {"missing key",
       [&](auto& m) { m[key] = replaced(R"("dtype":"quint8",)", ""); },
       {},
       "tensor \"embed.weight\": metadata \"lucidq.tensor.embed.weight\": \"dtype\" is missing"},
      {"unknown dtype",
       [&](auto& m) { m[key] = replaced("quint8", "quint3"); },
       {},
       "\"dtype\" qdtype \"quint3\" is unknown"},
      {"range differs",
       [&](auto& m) { m[key] = replaced(R"("quant_max":255)", R"("quant_max":200)"); },
       {},
       "\"quant_min\" and \"quant_max\" differ from the range of dtype quint8"},
      {"wrong packing",
       [&](auto& m) { m[key] = replaced(R"("none")", R"("packed4")"); },
       {},
       "\"packing\" is \"packed4\" (expected \"none\" for quint8)"},
      {"axis beyond rank",
       [&](auto& m) { m[key] = replaced(R"("axis":0)", R"("axis":2)"); },
       {},
       "\"axis\" is 2 (expected an integer in [0, 1])"},
      {"shape differs from codes",
       [&](auto& m) { m[key] = replaced("[16,8]", "[8,16]"); },
       {},
       "tensor \"embed.weight\": its codes tensor \"embed.weight\" is U8 [16, 8] (expected U8 "
       "[8, 16]"},
      {"bad original dtype",
       [&](auto& m) { m[key] = replaced(R"("BF16")", R"("I8")"); },
       {},
       "\"original_dtype\" is \"I8\" (expected F32, F16, BF16 or F64)"},
      {"scale missing",
       [](auto&) {},
       {"embed.weight.scale"},
       "its scale tensor \"embed.weight.scale\" is missing (expected F32 [16])"},
      {"zero point missing",
       [](auto&) {},
       {"embed.weight.zero_point"},
       "its zero_point tensor \"embed.weight.zero_point\" is missing"},
      {"companion names that are not the tensor's",
       [&](auto& m) { m["lucidq.tensor.ghost"] = good; },
       {},
       "tensor \"ghost\": metadata \"lucidq.tensor.ghost\": \"scale\" is \"embed.weight.scale\" "
       "(expected \"ghost.scale\")"},
      {"metadata for a missing tensor",
       [&](auto& m) {
         std::string text = good;
         for (std::size_t at; (at = text.find("embed.weight")) != std::string::npos;)
           text.replace(at, 12, "ghost");
         m["lucidq.tensor.ghost"] = text;
       },
       {},
       "tensor \"ghost\": its codes tensor \"ghost\" is missing"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const auto bad = dir / "bad.safetensors";
    rewrite(dir / "q.safetensors", bad, c.edit, c.drop);
    try {
      Q::dequantize_checkpoint(bad, dir / "out.safetensors");
      ADD_FAILURE() << "no error";
    } catch (const Q::Error& e) {
      const std::string message = e.what();
      EXPECT_TRUE(message.starts_with(bad.string() + ": ")) << message;
      EXPECT_NE(message.find(c.message), std::string::npos) << message;
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "out.safetensors"));
  }
}

TEST(LoadQuantizedTensor, BadParametersNameTheTensor) {
  TempDir dir;
  const Q::Tensor w = Q::Tensor::from_floats({1, 2, 3, 4}, {2, 2});
  Q::write_safetensors(dir / "in.safetensors", {{"w", w.view()}});
  Q::quantize_checkpoint(dir / "in.safetensors", dir / "q.safetensors");
  const auto q = Q::SafetensorsFile::open(dir / "q.safetensors");
  std::vector<std::pair<std::string, Q::TensorView>> tensors{{"w", q.view("w")}};
  const Q::Tensor zero_scale = Q::Tensor::from_floats({0.5f, 0.0f}, {2});
  tensors.emplace_back("w.scale", zero_scale.view());
  Q::write_safetensors(dir / "bad.safetensors", tensors, q.metadata());
  const auto bad = Q::SafetensorsFile::open(dir / "bad.safetensors");
  const auto contents = Q::read_checkpoint_contents(bad);
  EXPECT_ERROR_CONTAINS(Q::load_quantized_tensor(bad, *contents.tensors[0].quantized),
                        (dir / "bad.safetensors").string() + ": tensor \"w\": QParams: scale");
}

}  // namespace
