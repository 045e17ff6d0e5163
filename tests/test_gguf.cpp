// GGUF reader and writer: ggml's sample files read exactly and are rewritten byte for byte.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <lucid/quantization/error.hpp>
#include <lucid/quantization/gguf.hpp>
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

std::vector<std::byte> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

std::vector<fs::path> sample_gguf_files() {
  std::vector<fs::path> out;
  for (const auto& item : fs::directory_iterator(samples_dir())) {
    if (item.path().extension() == ".gguf") out.push_back(item.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const std::vector<std::string> kSampleOrder = {"lcg.a",   "lcg.b",   "lcg.c", "big",
                                               "special", "stack3d", "w96",   "norm.weight"};

class GgufTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lucidq-gguf-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

template <class T>
T scalar_of(const Q::GgufMetadata& metadata, std::string_view key) {
  const Q::GgufValue* value = metadata.find(key);
  if (value == nullptr) throw std::runtime_error("missing key " + std::string(key));
  const T* v = value->get<T>();
  if (v == nullptr) throw std::runtime_error("wrong type for " + std::string(key));
  return *v;
}

}  // namespace

TEST_F(GgufTest, SourceSampleHasEveryValueType) {
  SKIP_WITHOUT_SAMPLES();
  const auto file = Q::GgufFile::open(samples_dir() / "source.gguf");
  const Q::GgufMetadata& m = file.metadata();
  ASSERT_EQ(m.size(), 24u);
  std::vector<std::string> keys;
  for (const auto& [key, value] : m.entries())
    keys.push_back(key);
  const std::vector<std::string> expected_keys = {
      "general.architecture",   "general.name",         "general.alignment",
      "lucidq.sample.type",     "lucidq.test.u8",       "lucidq.test.i8",
      "lucidq.test.u16",        "lucidq.test.i16",      "lucidq.test.u32",
      "lucidq.test.i32",        "lucidq.test.f32",      "lucidq.test.bool_true",
      "lucidq.test.bool_false", "lucidq.test.string",   "lucidq.test.string_empty",
      "lucidq.test.arr_i32",    "lucidq.test.arr_str",  "lucidq.test.u64",
      "lucidq.test.i64",        "lucidq.test.f64",      "lucidq.test.arr_f32",
      "lucidq.test.arr_u8",     "lucidq.test.arr_bool", "lucidq.test.arr_empty_i32"};
  EXPECT_EQ(keys, expected_keys);
  EXPECT_EQ(scalar_of<std::string>(m, "general.architecture"), "lucidqtest");
  EXPECT_EQ(m.find("general.name")->type(), Q::GgufValueType::string);
  EXPECT_EQ(scalar_of<std::uint32_t>(m, "general.alignment"), 32u);
  EXPECT_EQ(scalar_of<std::string>(m, "lucidq.sample.type"), "f32");
  EXPECT_EQ(scalar_of<std::uint8_t>(m, "lucidq.test.u8"), 200);
  EXPECT_EQ(scalar_of<std::int8_t>(m, "lucidq.test.i8"), -100);
  EXPECT_EQ(scalar_of<std::uint16_t>(m, "lucidq.test.u16"), 60000);
  EXPECT_EQ(scalar_of<std::int16_t>(m, "lucidq.test.i16"), -30000);
  EXPECT_EQ(scalar_of<std::uint32_t>(m, "lucidq.test.u32"), 4000000000u);
  EXPECT_EQ(scalar_of<std::int32_t>(m, "lucidq.test.i32"), -2000000000);
  EXPECT_EQ(scalar_of<float>(m, "lucidq.test.f32"), 3.14159274f);
  EXPECT_EQ(scalar_of<bool>(m, "lucidq.test.bool_true"), true);
  EXPECT_EQ(scalar_of<bool>(m, "lucidq.test.bool_false"), false);
  EXPECT_EQ(scalar_of<std::string>(m, "lucidq.test.string"), "hello, GGUF \u03b3\u2713");
  EXPECT_EQ(scalar_of<std::string>(m, "lucidq.test.string_empty"), "");
  EXPECT_EQ(scalar_of<std::uint64_t>(m, "lucidq.test.u64"), 18446744073709551615ull);
  EXPECT_EQ(scalar_of<std::int64_t>(m, "lucidq.test.i64"), -9000000000000000000ll);
  EXPECT_EQ(scalar_of<double>(m, "lucidq.test.f64"), 2.718281828459045);
  using S = std::vector<Q::GgufScalar>;
  EXPECT_EQ(*m.find("lucidq.test.arr_i32"),
            Q::GgufValue::array(Q::GgufValueType::int32,
                                S{std::int32_t{1}, std::int32_t{-2}, std::int32_t{3},
                                  std::int32_t{-4}, std::int32_t{2147483647}}));
  EXPECT_EQ(*m.find("lucidq.test.arr_str"),
            Q::GgufValue::array(Q::GgufValueType::string, S{std::string("alpha"), std::string(""),
                                                            std::string("\u03b3amma")}));
  EXPECT_EQ(*m.find("lucidq.test.arr_f32"),
            Q::GgufValue::array(Q::GgufValueType::float32, S{0.5f, -1.25f, 1e-30f, 65504.0f}));
  EXPECT_EQ(*m.find("lucidq.test.arr_u8"),
            Q::GgufValue::array(Q::GgufValueType::uint8,
                                S{std::uint8_t{0}, std::uint8_t{127}, std::uint8_t{255}}));
  EXPECT_EQ(*m.find("lucidq.test.arr_bool"),
            Q::GgufValue::array(Q::GgufValueType::boolean, S{true, false, true}));
  const Q::GgufValue& empty = *m.find("lucidq.test.arr_empty_i32");
  EXPECT_TRUE(empty.is_array());
  EXPECT_EQ(empty.element_type(), Q::GgufValueType::int32);
  EXPECT_TRUE(empty.items().empty());
  EXPECT_EQ(Q::format_gguf_value(*m.find("lucidq.test.arr_i32"), 3), "[1, -2, 3, ... (5 items)]");
}

TEST_F(GgufTest, SourceSampleTensorsEqualTheSafetensorsSource) {
  SKIP_WITHOUT_SAMPLES();
  const auto file = Q::GgufFile::open(samples_dir() / "source.gguf");
  const auto source = Q::SafetensorsFile::open(samples_dir() / "source.safetensors");
  ASSERT_EQ(file.tensors().size(), kSampleOrder.size());
  const std::vector<std::vector<std::int64_t>> ne = {{256, 4},  {512, 3},    {1024, 2}, {4096, 8},
                                                     {256, 14}, {256, 2, 2}, {96, 4},   {256}};
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < kSampleOrder.size(); ++i) {
    const Q::GgufTensorInfo& t = file.tensors()[i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.name, kSampleOrder[i]);
    EXPECT_EQ(t.ne, ne[i]);
    EXPECT_EQ(t.type, Q::GgmlType::F32);
    EXPECT_EQ(t.offset, offset);
    offset += (t.nbytes + 31) / 32 * 32;
    const auto expected = source.bytes(*source.find(t.name));
    const auto got = file.bytes(t);
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size()), 0);
    EXPECT_EQ(file.view(t).shape, source.find(t.name)->shape);
  }
  EXPECT_EQ(file.header().data_size, offset);
  EXPECT_EQ(file.header().data_offset + offset, fs::file_size(samples_dir() / "source.gguf"));
}

TEST_F(GgufTest, EverySampleReadsWithItsTypesAndContiguousOffsets) {
  SKIP_WITHOUT_SAMPLES();
  const auto files = sample_gguf_files();
  ASSERT_EQ(files.size(), 25u);
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.filename().string());
    const auto file = Q::GgufFile::open(path);
    const std::string stem = path.stem().string();
    const std::string type_name = stem.substr(0, stem.find('.'));
    EXPECT_EQ(file.metadata().get_string("lucidq.sample.type").value_or("?"),
              stem == "source" ? "f32" : stem);
    const bool align64 = stem == "q4_0.align64";
    EXPECT_EQ(file.header().alignment, align64 ? 64u : 32u);
    const std::vector<std::string> names =
        align64 ? std::vector<std::string>{"lcg.a", "w96", "norm.weight"} : kSampleOrder;
    ASSERT_EQ(file.tensors().size(), names.size());
    const auto main_type = Q::ggml_type_from_name(stem == "source" ? "f32" : type_name);
    ASSERT_TRUE(main_type.has_value());
    std::uint64_t offset = 0;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const Q::GgufTensorInfo& t = file.tensors()[i];
      EXPECT_EQ(t.name, names[i]);
      EXPECT_EQ(t.offset, offset);
      offset += (t.nbytes + file.header().alignment - 1) / file.header().alignment *
                file.header().alignment;
      Q::GgmlType expected = *main_type;
      if (t.name == "norm.weight") expected = Q::GgmlType::F32;
      if (t.name == "w96") {  // llama.cpp's fallbacks for a row of 96 (README)
        if (type_name == "q2_k" || type_name == "q3_k") expected = Q::GgmlType::Q4_0;
        if (type_name == "q4_k") expected = Q::GgmlType::Q5_0;
        if (type_name == "q5_k") expected = Q::GgmlType::Q5_1;
        if (type_name == "q6_k") expected = Q::GgmlType::Q8_0;
      }
      EXPECT_EQ(t.type, expected) << t.name;
      EXPECT_EQ(t.nbytes,
                static_cast<std::uint64_t>(Q::ggml_row_size(t.type, t.row_length()) * t.rows()));
    }
    if (align64) {
      EXPECT_EQ(file.tensors()[1].offset, 576u);
      EXPECT_EQ(file.tensors()[2].offset, 832u);
    }
    EXPECT_EQ(file.header().data_offset + offset, fs::file_size(path));
  }
}

TEST_F(GgufTest, RewritingEverySampleReproducesGgmlsBytes) {
  SKIP_WITHOUT_SAMPLES();
  for (const fs::path& path : sample_gguf_files()) {
    SCOPED_TRACE(path.filename().string());
    const auto file = Q::GgufFile::open(path);
    std::vector<Q::GgufTensorSpec> specs;
    for (const auto& t : file.tensors())
      specs.push_back({t.name, t.ne, t.type});
    const fs::path out = dir_ / path.filename();
    Q::GgufWriter writer(out, file.metadata(), specs);
    for (const auto& t : file.tensors())
      writer.write(t.name, file.bytes(t));
    writer.commit();
    EXPECT_EQ(read_bytes(out), read_bytes(path));
  }
}

TEST_F(GgufTest, WriterRoundTripsEveryValueTypeAndPadsToTheDeclaredAlignment) {
  Q::GgufMetadata m;
  m.append("general.alignment", std::uint32_t{16});
  m.append("a", std::string("text"));
  m.append("b", Q::GgufValue::array(Q::GgufValueType::float64, {1.5, -2.0}));
  m.append("c", true);
  m.set("a", std::int16_t{-7});  // as ggml: replaced and moved to the end
  EXPECT_EQ(m.entries().back().first, "a");
  const std::vector<std::byte> data(3 * 34);
  const fs::path out = dir_ / "m.gguf";
  Q::GgufWriter writer(out, m, {{"w", {32, 3}, Q::GgmlType::Q8_0}, {"v", {5}, Q::GgmlType::F16}});
  EXPECT_EQ(writer.next_tensor().value_or(""), "w");
  writer.write("w", data);
  writer.write("v", std::vector<std::byte>(10));
  EXPECT_FALSE(writer.next_tensor().has_value());
  writer.commit();
  const auto file = Q::GgufFile::open(out);
  EXPECT_EQ(file.metadata(), m);
  EXPECT_EQ(file.header().alignment, 16u);
  EXPECT_EQ(file.header().data_offset % 16, 0u);
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensors()[1].offset, 112u);  // 102 padded to 16
  EXPECT_EQ(fs::file_size(out), file.header().data_offset + 112 + 16);
  EXPECT_EQ(file.tensors()[1].shape(), (Q::Shape{5}));
  EXPECT_EQ(Q::gguf_dims_of({7, 1, 3}), (std::vector<std::int64_t>{3, 1, 7}));
  EXPECT_EQ(Q::gguf_dims_of({1, 1, 3}), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(Q::gguf_dims_of({}), (std::vector<std::int64_t>{1}));
}

TEST_F(GgufTest, WriterRefusesBadInputAndLeavesNoOutput) {
  const fs::path out = dir_ / "bad.gguf";
  Q::GgufMetadata m;
  EXPECT_ERROR_CONTAINS(Q::GgufWriter(out, m, {{std::string(64, 'n'), {32}, Q::GgmlType::F32}}),
                        "too long");
  EXPECT_ERROR_CONTAINS(Q::GgufWriter(out, m, {{"w", {96}, Q::GgmlType::Q4_K}}),
                        "not a multiple of q4_K's block size 256");
  EXPECT_ERROR_CONTAINS(
      Q::GgufWriter(out, m, {{"w", {32}, Q::GgmlType::F32}, {"w", {32}, Q::GgmlType::F32}}),
      "appears twice");
  EXPECT_ERROR_CONTAINS(Q::GgufWriter(out, m, {{"w", {1, 1, 1, 1, 1}, Q::GgmlType::F32}}),
                        "5 dimensions");
  Q::GgufMetadata bad_alignment;
  bad_alignment.append("general.alignment", std::uint32_t{48});
  EXPECT_ERROR_CONTAINS(Q::GgufWriter(out, bad_alignment, {}), "power of two");
  Q::GgufMetadata wrong_type;
  wrong_type.append("general.alignment", std::uint64_t{32});
  EXPECT_ERROR_CONTAINS(Q::GgufWriter(out, wrong_type, {}), "(expected u32)");
  EXPECT_ERROR_CONTAINS(m.append("", true), "empty");
  EXPECT_ERROR_CONTAINS(Q::GgufValue::array(Q::GgufValueType::array, {}), "arrays of arrays");
  EXPECT_ERROR_CONTAINS(Q::GgufValue::array(Q::GgufValueType::int32, {std::uint32_t{1}}),
                        "item 0 is a u32");
  {
    Q::GgufWriter writer(out, m, {{"w", {32}, Q::GgmlType::F32}});
    EXPECT_ERROR_CONTAINS(writer.write("w", std::vector<std::byte>(100)), "expected 128");
    EXPECT_ERROR_CONTAINS(writer.commit(), "abandoned");
  }
  {
    Q::GgufWriter writer(out, m, {{"w", {32}, Q::GgmlType::F32}});
    EXPECT_ERROR_CONTAINS(writer.commit(), "not written");
  }
  {
    Q::GgufWriter writer(out, m, {{"w", {32}, Q::GgmlType::F32}});  // destroyed uncommitted
  }
  EXPECT_TRUE(fs::is_empty(dir_)) << "a failed write left a file behind";
  std::ofstream(out) << "x";
  EXPECT_ERROR_CONTAINS(Q::GgufWriter(out, m, {}), "already exists");
}
