// The GGUF job through the file path: ggml's sample bytes from source.safetensors (with and
// without the imatrix), ggml's decodes, and the output's metadata, order and bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <lucid/quantization/error.hpp>
#include <lucid/quantization/ggml_quants.hpp>
#include <lucid/quantization/gguf_quantize.hpp>
#include <lucid/quantization/safetensors.hpp>

#include "test_support.hpp"

namespace Q = lucid::quantization;
namespace fs = std::filesystem;

namespace {

fs::path samples_dir() {
  return fs::path(LUCIDQ_SHARED_DIR) / "testdata" / "gguf-samples";
}

#define SKIP_WITHOUT_SAMPLES()                                      \
  if (!fs::is_directory(samples_dir()))                             \
  GTEST_SKIP() << "shared test data not found at " << samples_dir() \
               << " (ggml's GGUF samples live outside the repository, in ../shared)"

// The sample stems and the preset whose default type they hold.
const std::vector<std::pair<std::string, std::string>> kSampleTypes = {
    {"q8_0", "Q8_0"},     {"q4_0", "Q4_0"}, {"q4_1", "Q4_1"}, {"q5_0", "Q5_0"}, {"q5_1", "Q5_1"},
    {"q2_k", "Q2_K"},     {"q3_k", "Q3_K"}, {"q4_k", "Q4_K"}, {"q5_k", "Q5_K"}, {"q6_k", "Q6_K"},
    {"iq4_nl", "IQ4_NL"}, {"f16", "F16"},   {"bf16", "BF16"}};
const std::vector<std::string> kImatrixTypes = {"q2_k",   "q3_k", "q4_k", "q5_k", "q6_k",
                                                "iq4_nl", "q4_0", "q4_1", "q5_0", "q5_1"};

class GgufJob : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lucidq-gguf-job-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

Q::GgufQuantizeOptions options_for(const std::string& preset) {
  Q::GgufQuantizeOptions options;
  options.mixture.file_type = Q::llama_file_type_from_name(preset).value();
  return options;
}

// A legacy llama.cpp imatrix file holding, for each tensor of source.safetensors, the first
// row-length values of imatrix.f32 (repeated per matrix of a 3-D tensor), with ncall 2 and the
// values stored times 2 (the loader divides by ncall).
fs::path write_legacy_imatrix(const fs::path& dir) {
  std::ifstream raw(samples_dir() / "imatrix.f32", std::ios::binary);
  std::vector<float> weights(4096);
  raw.read(reinterpret_cast<char*>(weights.data()), 4096 * 4);
  const auto source = Q::SafetensorsFile::open(samples_dir() / "source.safetensors");
  const fs::path path = dir / "imatrix.dat";
  std::ofstream out(path, std::ios::binary);
  auto put = [&](std::int32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  put(static_cast<std::int32_t>(source.entries().size()));
  for (const auto& e : source.entries()) {
    put(static_cast<std::int32_t>(e.name.size()));
    out.write(e.name.data(), static_cast<std::streamsize>(e.name.size()));
    put(2);  // ncall
    const std::int64_t row = e.shape.back();
    const std::int64_t matrices = e.shape.size() > 2 ? e.shape[e.shape.size() - 3] : 1;
    put(static_cast<std::int32_t>(row * matrices));
    for (std::int64_t m = 0; m < matrices; ++m) {
      for (std::int64_t c = 0; c < row; ++c) {
        const float stored = 2.0f * weights[static_cast<std::size_t>(c)];
        out.write(reinterpret_cast<const char*>(&stored), 4);
      }
    }
  }
  put(5);  // chunk count, then the dataset name
  put(8);
  out.write("calib.tx", 8);
  return path;
}

void expect_tensors_equal_sample(const fs::path& produced, const fs::path& sample) {
  const auto got = Q::GgufFile::open(produced);
  const auto want = Q::GgufFile::open(sample);
  ASSERT_EQ(got.tensors().size(), want.tensors().size());
  for (std::size_t i = 0; i < want.tensors().size(); ++i) {
    const auto& g = got.tensors()[i];
    const auto& w = want.tensors()[i];
    SCOPED_TRACE(w.name);
    EXPECT_EQ(g.name, w.name);
    EXPECT_EQ(g.ne, w.ne);
    EXPECT_EQ(g.type, w.type);
    EXPECT_EQ(g.offset, w.offset);
    ASSERT_EQ(g.nbytes, w.nbytes);
    EXPECT_EQ(std::memcmp(got.bytes(g).data(), want.bytes(w).data(), g.nbytes), 0)
        << "tensor bytes differ from ggml's";
  }
}

}  // namespace

TEST_F(GgufJob, SafetensorsSourceGivesGgmlsBytesForEveryType) {
  SKIP_WITHOUT_SAMPLES();
  for (const auto& [stem, preset] : kSampleTypes) {
    SCOPED_TRACE(stem);
    const fs::path out = dir_ / (stem + ".gguf");
    auto options = options_for(preset);
    const auto report = Q::quantize_gguf(samples_dir() / "source.safetensors", out, options);
    expect_tensors_equal_sample(out, samples_dir() / (stem + ".gguf"));
    ASSERT_EQ(report.tensors.size(), 8u);
    EXPECT_FALSE(report.tensors.back().ggml_type.has_value()) << "norm.weight stays F32";
    const auto file = Q::GgufFile::open(out);
    EXPECT_EQ(file.metadata().get_count("general.quantization_version"), 2u);
    EXPECT_EQ(file.metadata().get_count("general.file_type"),
              static_cast<std::uint32_t>(options.mixture.file_type));
  }
}

TEST_F(GgufJob, SafetensorsSourceWithTheImatrixGivesGgmlsBytes) {
  SKIP_WITHOUT_SAMPLES();
  const Q::ImportanceMatrix imatrix = Q::load_imatrix(write_legacy_imatrix(dir_));
  EXPECT_EQ(imatrix.format, "legacy");
  EXPECT_EQ(imatrix.chunk_count, 5);
  EXPECT_EQ(imatrix.datasets, (std::vector<std::string>{"calib.tx"}));
  EXPECT_EQ(imatrix.find("lcg.a")->at(3), 4.0f);  // 1 + 3 % 7, stored as 8 with ncall 2
  for (const std::string& stem : kImatrixTypes) {
    SCOPED_TRACE(stem);
    std::string preset;
    for (const auto& [s, p] : kSampleTypes)
      if (s == stem) preset = p;
    auto options = options_for(preset);
    options.imatrix = &imatrix;
    const fs::path out = dir_ / (stem + ".imatrix.gguf");
    const auto report = Q::quantize_gguf(samples_dir() / "source.safetensors", out, options);
    expect_tensors_equal_sample(out, samples_dir() / (stem + ".imatrix.gguf"));
    EXPECT_NE(report.tensors[0].reason.find("imatrix"), std::string::npos)
        << report.tensors[0].reason;
    const auto file = Q::GgufFile::open(out);
    EXPECT_EQ(file.metadata().get_string("quantize.imatrix.dataset"), "calib.tx");
    EXPECT_EQ(file.metadata().get_count("quantize.imatrix.entries_count"), 8u);
    EXPECT_EQ(file.metadata().get_count("quantize.imatrix.chunks_count"), 5u);
  }
}

TEST_F(GgufJob, EveryDecodeEqualsGgmlsBitForBit) {
  SKIP_WITHOUT_SAMPLES();
  std::size_t checked = 0;
  for (const auto& item : fs::directory_iterator(samples_dir())) {
    const std::string name = item.path().filename().string();
    if (!name.ends_with(".expected.safetensors")) continue;
    const std::string stem =
        name.substr(0, name.size() - std::string(".expected.safetensors").size());
    SCOPED_TRACE(stem);
    const fs::path out = dir_ / (stem + ".f32.safetensors");
    const auto summary = Q::dequantize_gguf(samples_dir() / (stem + ".gguf"), out);
    EXPECT_EQ(summary.dequantized + summary.copied, 8u);
    const auto got = Q::SafetensorsFile::open(out);
    const auto want = Q::SafetensorsFile::open(item.path());
    ASSERT_EQ(got.entries().size(), want.entries().size());
    for (const auto& w : want.entries()) {
      const auto* g = got.find(w.name);
      ASSERT_NE(g, nullptr) << w.name;
      EXPECT_EQ(g->shape, w.shape) << w.name;
      ASSERT_EQ(g->nbytes(), w.nbytes()) << w.name;
      EXPECT_EQ(std::memcmp(got.bytes(*g).data(), want.bytes(w).data(), w.nbytes()), 0)
          << w.name << ": decode differs from ggml's to_float";
    }
    ++checked;
  }
  EXPECT_EQ(checked, 23u);
}

TEST_F(GgufJob, GgufImatrixFormatReadsSumsOverCounts) {
  Q::GgufMetadata m;
  m.append("imatrix.datasets",
           Q::GgufValue::array(Q::GgufValueType::string, {std::string("wiki.train")}));
  m.append("imatrix.chunk_count", std::uint32_t{3});
  m.append("imatrix.chunk_size", std::uint32_t{512});
  const fs::path path = dir_ / "imatrix.gguf";
  Q::GgufWriter out(path, m,
                    {{"blk.0.ffn_up.weight.in_sum2", {4, 2}, Q::GgmlType::F32},
                     {"blk.0.ffn_up.weight.counts", {1, 2}, Q::GgmlType::F32}});
  const float sums[8] = {2, 4, 6, 8, 1, 1, 1, 1};
  const float counts[2] = {2, 0};
  out.write("blk.0.ffn_up.weight.in_sum2", std::as_bytes(std::span<const float>(sums)));
  out.write("blk.0.ffn_up.weight.counts", std::as_bytes(std::span<const float>(counts)));
  out.commit();
  const Q::ImportanceMatrix imatrix = Q::load_imatrix(path);
  EXPECT_EQ(imatrix.format, "gguf");
  EXPECT_EQ(imatrix.chunk_count, 3);
  EXPECT_EQ(imatrix.datasets, (std::vector<std::string>{"wiki.train"}));
  ASSERT_EQ(imatrix.entries.size(), 1u);
  EXPECT_EQ(*imatrix.find("blk.0.ffn_up.weight"),
            (std::vector<float>{1, 2, 3, 4, 1, 1, 1, 1}));  // count 0: weights 1
}

TEST_F(GgufJob, ImatrixErrorsNameTheFileAndEntry) {
  const fs::path bad = dir_ / "bad.dat";
  std::ofstream(bad, std::ios::binary)
      .write(
          "\x01\x00\x00\x00\x03\x00\x00\x00"
          "ab",
          10);
  EXPECT_ERROR_CONTAINS(Q::load_imatrix(bad), bad.string() + ": legacy imatrix ends at byte 10");
  const fs::path zero = dir_ / "zero.dat";
  std::ofstream(zero, std::ios::binary).write("\x00\x00\x00\x00", 4);
  EXPECT_ERROR_CONTAINS(Q::load_imatrix(zero), "entry count 0 (expected at least 1");
  Q::GgufMetadata m;
  m.append("imatrix.chunk_count", std::uint32_t{3});
  const fs::path missing = dir_ / "missing.gguf";
  Q::GgufWriter(missing, m, {}).commit();
  EXPECT_ERROR_CONTAINS(Q::load_imatrix(missing), "key \"imatrix.datasets\" is missing");
}

TEST_F(GgufJob, BadInputLeavesNoOutput) {
  SKIP_WITHOUT_SAMPLES();
  const fs::path out = dir_ / "out.gguf";
  // A truncated GGUF input.
  const fs::path cut = dir_ / "cut.gguf";
  fs::copy_file(samples_dir() / "q4_0.gguf", cut);
  fs::resize_file(cut, fs::file_size(cut) - 8);
  EXPECT_ERROR_CONTAINS(Q::quantize_gguf(cut, out, options_for("Q4_K_M")), "truncated");
  auto options = options_for("Q8_0");
  // A recipe rule with lucidq settings is refused for GGUF output.
  options.recipe = Q::parse_recipe(R"({"rules": [{"match": "*", "dtype": "qint8"}]})", "r.json");
  EXPECT_ERROR_CONTAINS(Q::quantize_gguf(samples_dir() / "source.safetensors", out, options),
                        "r.json rules[0]: gives lucidq settings");
  // An imatrix entry of the wrong size.
  Q::ImportanceMatrix imatrix;
  imatrix.entries["lcg.a"] = std::vector<float>(100, 1.0f);
  auto with_imatrix = options_for("Q4_0");
  with_imatrix.imatrix = &imatrix;
  EXPECT_ERROR_CONTAINS(Q::quantize_gguf(samples_dir() / "source.safetensors", out, with_imatrix),
                        "tensor \"lcg.a\": the imatrix entry holds 100 values (expected 256");
  EXPECT_FALSE(fs::exists(out));
  for (const auto& item : fs::directory_iterator(dir_)) {
    EXPECT_TRUE(item.path() == cut) << "left behind: " << item.path();
  }
}
