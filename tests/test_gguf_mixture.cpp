// llama-quantize's mixture on a synthetic 2-layer llama GGUF: the type of every tensor for
// every preset (the table in docs/formats.md), the flags, and the job's output file.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <lucid/quantization/error.hpp>
#include <lucid/quantization/ggml_quants.hpp>
#include <lucid/quantization/gguf_quantize.hpp>
#include <random>

#include "test_support.hpp"

namespace Q = lucid::quantization;
namespace fs = std::filesystem;

namespace {

// name -> ne (innermost first). Width 256, 8 heads / 2 kv heads of 32 (n_gqa = 4), a
// feed-forward width of 352 (a multiple of 32 but not of 256: K-quants of ffn_down fall
// back), vocabulary 64.
std::vector<std::pair<std::string, std::vector<std::int64_t>>> llama_tensors(bool tied) {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> out = {
      {"token_embd.weight", {256, 64}}};
  for (int layer = 0; layer < 2; ++layer) {
    const std::string b = "blk." + std::to_string(layer) + ".";
    out.push_back({b + "attn_norm.weight", {256}});
    out.push_back({b + "attn_q.weight", {256, 256}});
    out.push_back({b + "attn_k.weight", {256, 64}});
    out.push_back({b + "attn_v.weight", {256, 64}});
    out.push_back({b + "attn_output.weight", {256, 256}});
    out.push_back({b + "ffn_norm.weight", {256}});
    out.push_back({b + "ffn_gate.weight", {256, 352}});
    out.push_back({b + "ffn_up.weight", {256, 352}});
    out.push_back({b + "ffn_down.weight", {352, 256}});
  }
  out.push_back({"output_norm.weight", {256}});
  if (!tied) out.push_back({"output.weight", {256, 64}});
  return out;
}

class GgufMixture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lucidq-gguf-mix-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the model with F32 tensors (token_embd as F16), in an order unlike llama's, and
  // returns its path and each tensor's float values.
  fs::path write_model(bool tied = false, std::uint64_t seed = 1) {
    auto tensors = llama_tensors(tied);
    std::reverse(tensors.begin(), tensors.end());  // llama-quantize re-sorts them
    Q::GgufMetadata m;
    m.append("general.architecture", std::string("llama"));
    m.append("general.name", std::string("tiny"));
    m.append("llama.block_count", std::uint32_t{2});
    m.append("llama.embedding_length", std::uint32_t{256});
    m.append("llama.attention.head_count", std::uint32_t{8});
    m.append("llama.attention.head_count_kv", std::uint32_t{2});
    m.append("tokenizer.ggml.tokens",
             Q::GgufValue::array(Q::GgufValueType::string, {std::string("<s>"), std::string("a")}));
    std::vector<Q::GgufTensorSpec> specs;
    for (const auto& [name, ne] : tensors) {
      specs.push_back(
          {name, ne, name == "token_embd.weight" ? Q::GgmlType::F16 : Q::GgmlType::F32});
    }
    const fs::path path = dir_ / (tied ? "tied.gguf" : "model.gguf");
    Q::GgufWriter out(path, m, specs);
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    for (const auto& spec : specs) {
      std::int64_t n = 1;
      for (const auto d : spec.ne)
        n *= d;
      std::vector<float> values(static_cast<std::size_t>(n));
      for (float& v : values)
        v = normal(rng);
      values_[spec.name] = values;
      if (spec.type == Q::GgmlType::F16) {
        std::vector<std::uint16_t> half(values.size());
        for (std::size_t i = 0; i < values.size(); ++i) {
          half[i] = Q::float_to_float16(values[i]);
          values_[spec.name][i] = Q::float16_to_float(half[i]);
        }
        out.write(spec.name, std::as_bytes(std::span<const std::uint16_t>(half)));
      } else {
        out.write(spec.name, std::as_bytes(std::span<const float>(values)));
      }
    }
    out.commit();
    return path;
  }

  std::map<std::string, Q::GgmlType> plan_types(const fs::path& model,
                                                const Q::GgufQuantizeOptions& options) {
    std::map<std::string, Q::GgmlType> out;
    for (const auto& p : Q::plan_gguf_quantization(model, options))
      out[p.name] = p.output_type;
    return out;
  }

  fs::path dir_;
  std::map<std::string, std::vector<float>> values_;
};

Q::GgufQuantizeOptions preset(const std::string& name) {
  Q::GgufQuantizeOptions options;
  options.mixture.file_type = Q::llama_file_type_from_name(name).value();
  return options;
}

// One row of the table in docs/gguf.md ("The llama mixture"): the type of token_embd,
// attn_q, attn_k, attn_v (layer 0, layer 1), attn_output, ffn_gate / ffn_up, ffn_down (layer
// 0, layer 1) and output, for the synthetic model above.
struct Row {
  std::string preset;
  std::string token_embd, attn_q, attn_k, attn_v0, attn_v1, attn_output, ffn_gate_up, ffn_down0,
      ffn_down1, output;
};

const std::vector<Row> kTable = {
    {"Q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0", "q8_0"},
    {"Q6_K", "q6_K", "q6_K", "q6_K", "q6_K", "q6_K", "q6_K", "q6_K", "q8_0", "q8_0", "q6_K"},
    {"Q5_K_M", "q5_K", "q5_K", "q5_K", "q5_K", "q6_K", "q5_K", "q5_K", "q5_1", "q8_0", "q6_K"},
    {"Q5_K_S", "q5_K", "q5_K", "q5_K", "q5_K", "q5_K", "q5_K", "q5_K", "q5_1", "q5_1", "q6_K"},
    {"Q5_1", "q5_1", "q5_1", "q5_1", "q5_1", "q5_1", "q5_1", "q5_1", "q5_1", "q5_1", "q6_K"},
    {"Q5_0", "q5_0", "q5_0", "q5_0", "q5_0", "q5_0", "q5_0", "q5_0", "q5_0", "q5_0", "q6_K"},
    {"Q4_K_M", "q4_K", "q4_K", "q4_K", "q4_K", "q6_K", "q4_K", "q4_K", "q5_0", "q8_0", "q6_K"},
    {"Q4_K_S", "q4_K", "q4_K", "q4_K", "q5_K", "q5_K", "q4_K", "q4_K", "q5_0", "q5_0", "q6_K"},
    {"Q4_1", "q4_1", "q4_1", "q4_1", "q4_1", "q4_1", "q4_1", "q4_1", "q4_1", "q4_1", "q6_K"},
    {"Q4_0", "q4_0", "q4_0", "q4_0", "q4_0", "q4_0", "q4_0", "q4_0", "q4_0", "q4_0", "q6_K"},
    {"Q3_K_L", "q3_K", "q3_K", "q3_K", "q5_K", "q5_K", "q5_K", "q3_K", "q5_1", "q5_1", "q6_K"},
    {"Q3_K_M", "q3_K", "q3_K", "q3_K", "q5_K", "q5_K", "q4_K", "q3_K", "q5_0", "q5_0", "q6_K"},
    {"Q3_K_S", "q3_K", "q3_K", "q3_K", "q3_K", "q3_K", "q3_K", "q3_K", "q4_0", "q4_0", "q6_K"},
    {"Q2_K", "q2_K", "q2_K", "q2_K", "q4_K", "q4_K", "q3_K", "q2_K", "q4_0", "q4_0", "q6_K"},
    {"IQ4_NL", "iq4_nl", "iq4_nl", "iq4_nl", "q5_K", "q5_K", "iq4_nl", "iq4_nl", "iq4_nl", "iq4_nl",
     "q6_K"},
    {"F16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16"},
    {"BF16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16"},
};

std::string name_of(Q::GgmlType type) {
  return std::string(Q::ggml_type_traits(type).name);
}

}  // namespace

TEST_F(GgufMixture, EveryPresetChoosesTheDocumentedTypes) {
  const fs::path model = write_model();
  for (const Row& row : kTable) {
    SCOPED_TRACE(row.preset);
    const auto types = plan_types(model, preset(row.preset));
    EXPECT_EQ(name_of(types.at("token_embd.weight")), row.token_embd);
    for (int layer = 0; layer < 2; ++layer) {
      const std::string b = "blk." + std::to_string(layer) + ".";
      EXPECT_EQ(name_of(types.at(b + "attn_q.weight")), row.attn_q);
      EXPECT_EQ(name_of(types.at(b + "attn_k.weight")), row.attn_k);
      EXPECT_EQ(name_of(types.at(b + "attn_v.weight")), layer == 0 ? row.attn_v0 : row.attn_v1);
      EXPECT_EQ(name_of(types.at(b + "attn_output.weight")), row.attn_output);
      EXPECT_EQ(name_of(types.at(b + "ffn_gate.weight")), row.ffn_gate_up);
      EXPECT_EQ(name_of(types.at(b + "ffn_up.weight")), row.ffn_gate_up);
      EXPECT_EQ(name_of(types.at(b + "ffn_down.weight")),
                layer == 0 ? row.ffn_down0 : row.ffn_down1);
      EXPECT_EQ(types.at(b + "attn_norm.weight"), Q::GgmlType::F32);
      EXPECT_EQ(types.at(b + "ffn_norm.weight"), Q::GgmlType::F32);
    }
    EXPECT_EQ(name_of(types.at("output.weight")), row.output);
    EXPECT_EQ(types.at("output_norm.weight"), Q::GgmlType::F32);
  }
}

TEST_F(GgufMixture, FlagsOverrideTheMixture) {
  const fs::path model = write_model();
  auto pure = preset("Q4_K_M");
  pure.mixture.pure = true;
  auto types = plan_types(model, pure);
  EXPECT_EQ(types.at("output.weight"), Q::GgmlType::Q4_K);
  EXPECT_EQ(types.at("blk.1.attn_v.weight"), Q::GgmlType::Q4_K);
  EXPECT_EQ(types.at("blk.1.ffn_down.weight"), Q::GgmlType::Q5_0) << "the fallback still applies";

  auto leave = preset("Q4_K_M");
  leave.mixture.leave_output_tensor = true;
  leave.mixture.token_embedding_type = Q::GgmlType::Q8_0;
  types = plan_types(model, leave);
  EXPECT_EQ(types.at("output.weight"), Q::GgmlType::F32);
  EXPECT_EQ(types.at("token_embd.weight"), Q::GgmlType::Q8_0);

  auto output = preset("Q4_K_M");
  output.mixture.output_tensor_type = Q::GgmlType::Q5_K;
  EXPECT_EQ(plan_types(model, output).at("output.weight"), Q::GgmlType::Q5_K);

  auto imatrix = preset("Q4_0");  // with 2 layers, n/8 = 0: no ffn_down change
  imatrix.mixture.has_imatrix = true;
  EXPECT_EQ(plan_types(model, imatrix).at("blk.0.ffn_down.weight"), Q::GgmlType::Q4_0);

  auto recipe = preset("Q4_K_M");  // first match wins, before the mixture
  recipe.recipe = Q::parse_recipe(
      R"({"rules": [{"match": "blk.1.attn_v.weight", "skip": true},
                    {"match": "*.attn_*", "ggml_type": "q8_0"},
                    {"match": "*ffn_down*", "ggml_type": "q4_K"}]})",
      "mix.json");
  types = plan_types(model, recipe);
  EXPECT_EQ(types.at("blk.1.attn_v.weight"), Q::GgmlType::F32);
  EXPECT_EQ(types.at("blk.0.attn_v.weight"), Q::GgmlType::Q8_0);
  EXPECT_EQ(types.at("blk.0.attn_q.weight"), Q::GgmlType::Q8_0);
  EXPECT_EQ(types.at("blk.0.attn_norm.weight"), Q::GgmlType::F32) << "norms stay unquantized";
  EXPECT_EQ(types.at("blk.0.ffn_down.weight"), Q::GgmlType::Q5_0) << "q4_K falls back";
  EXPECT_EQ(types.at("blk.0.ffn_up.weight"), Q::GgmlType::Q4_K);
}

TEST_F(GgufMixture, TiedEmbeddingsTakeTheOutputRule) {
  const fs::path model = write_model(/*tied=*/true);
  const auto types = plan_types(model, preset("Q4_K_M"));
  EXPECT_EQ(types.at("token_embd.weight"), Q::GgmlType::Q6_K);
}

TEST_F(GgufMixture, JobWritesLlamaOrderMetadataAndGgmlBytes) {
  const std::uint64_t seed = lucid::quantization::testing::test_seed(7);
  const fs::path model = write_model(false, seed);
  const fs::path out = dir_ / "model-Q4_K_M.gguf";
  const auto report = Q::quantize_gguf(model, out, preset("Q4_K_M"));
  const auto in = Q::GgufFile::open(model);
  const auto file = Q::GgufFile::open(out);
  // Metadata: the input's, in order, then quantization_version and file_type.
  const auto& entries = file.metadata().entries();
  ASSERT_EQ(entries.size(), in.metadata().size() + 2);
  for (std::size_t i = 0; i < in.metadata().size(); ++i)
    EXPECT_EQ(entries[i], in.metadata().entries()[i]);
  EXPECT_EQ(entries[entries.size() - 2].first, "general.quantization_version");
  EXPECT_EQ(entries.back().first, "general.file_type");
  EXPECT_EQ(file.metadata().get_count("general.file_type"), 15u);
  // Tensors in llama-quantize's order: no-layer names first, then by layer and name.
  std::vector<std::string> names;
  for (const auto& t : file.tensors())
    names.push_back(t.name);
  EXPECT_EQ(names.front(), "output.weight");
  EXPECT_EQ(names[1], "output_norm.weight");
  EXPECT_EQ(names[2], "token_embd.weight");
  EXPECT_EQ(names[3], "blk.0.attn_k.weight");
  EXPECT_EQ(names.back(), "blk.1.ffn_up.weight");
  // Every tensor's bytes: ggml_quantize_rows of the input floats (the kept ones copied).
  for (const auto& t : file.tensors()) {
    SCOPED_TRACE(t.name);
    const auto& x = values_.at(t.name);
    std::vector<std::byte> expected(t.nbytes);
    Q::ggml_quantize_rows(t.type, x.data(), expected.data(), t.rows(), t.row_length(), nullptr);
    const auto got = file.bytes(t);
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), t.nbytes), 0);
  }
  // The report: one row per tensor with bits per weight, errors for the re-encoded ones.
  ASSERT_EQ(report.tensors.size(), file.tensors().size());
  EXPECT_EQ(report.quantized_count(), 16u);  // 2 x 7 projections, token_embd, output
  for (const auto& r : report.tensors) {
    if (!r.ggml_type) continue;
    EXPECT_GT(r.metrics.sqnr_db, 15.0) << r.name;
    EXPECT_LT(r.bytes_after, r.bytes_before) << r.name;
  }
  const std::string table = Q::format_report(report);
  EXPECT_NE(table.find("bits/w"), std::string::npos);
  EXPECT_NE(table.find("f32 -> q6_K"), std::string::npos) << table;
  EXPECT_NE(table.find("f16 -> q4_K"), std::string::npos) << table;
}

TEST_F(GgufMixture, RequantizingNeedsAllowRequantize) {
  const fs::path model = write_model();
  const fs::path q8 = dir_ / "q8.gguf";
  Q::quantize_gguf(model, q8, preset("Q8_0"));
  const fs::path out = dir_ / "q4.gguf";
  EXPECT_ERROR_CONTAINS(Q::quantize_gguf(q8, out, preset("Q4_K_M")),
                        "tensor \"output.weight\": requantizing from q8_0 to q6_K is disabled");
  EXPECT_FALSE(fs::exists(out));
  auto allow = preset("Q4_K_M");
  allow.allow_requantize = true;
  const auto report = Q::quantize_gguf(q8, out, allow);
  EXPECT_EQ(Q::GgufFile::open(out).find("blk.1.attn_v.weight")->type, Q::GgmlType::Q6_K);
  EXPECT_EQ(report.tensors.size(), 21u);
}

TEST(GgufMixtureRules, OrderAndFallbacks) {
  const std::vector<std::string> names = {"blk.10.a", "blk.2.b", "output.weight", "blk.2.a",
                                          "token_embd.weight"};
  const auto order = Q::llama_tensor_order(names);
  std::vector<std::string> sorted;
  for (const auto i : order)
    sorted.push_back(names[i]);
  EXPECT_EQ(sorted, (std::vector<std::string>{"output.weight", "token_embd.weight", "blk.2.a",
                                              "blk.2.b", "blk.10.a"}));
  const Q::MixtureTensor w96{"w", {96, 4}, Q::GgmlType::F32, std::nullopt, {}};
  EXPECT_EQ(Q::llama_fallback_type(w96, Q::GgmlType::Q6_K), Q::GgmlType::Q8_0);
  EXPECT_EQ(Q::llama_fallback_type(w96, Q::GgmlType::Q3_K), Q::GgmlType::Q4_0);
  const Q::MixtureTensor w48{"w", {48, 4}, Q::GgmlType::F32, std::nullopt, {}};
  EXPECT_EQ(Q::llama_fallback_type(w48, Q::GgmlType::Q4_K), Q::GgmlType::F16);
  EXPECT_ERROR_CONTAINS(Q::llama_fallback_type(w48, Q::GgmlType::Q8_0),
                        "defines no fallback for q8_0");
  EXPECT_EQ(Q::llama_file_type_from_name("q4_k"), Q::LlamaFileType::Q4_K_M);
  EXPECT_EQ(Q::llama_file_type_from_name("Q3_K_L"), Q::LlamaFileType::Q3_K_L);
  EXPECT_FALSE(Q::llama_file_type_from_name("Q9_K").has_value());
  EXPECT_TRUE(Q::llama_tensor_allows_quantization("blk.0.attn_q.weight", 2, false));
  EXPECT_FALSE(Q::llama_tensor_allows_quantization("blk.0.attn_norm.weight", 2, false));
  EXPECT_FALSE(Q::llama_tensor_allows_quantization("blk.0.ffn_gate_inp.weight", 2, false));
  EXPECT_FALSE(Q::llama_tensor_allows_quantization("output.weight", 2, true));
  EXPECT_FALSE(Q::llama_tensor_allows_quantization("blk.0.attn_q.bias", 2, false));
}
