// ggml block types: byte-identity with the samples ggml wrote, the rounding rules, every tier
// and thread count against the reference, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernels/ggml_blocks.hpp"
#include "lucid/quantization/ggml_quants.hpp"
#include "lucid/quantization/gguf.hpp"
#include "lucid/quantization/runtime.hpp"
#include "lucid/quantization/safetensors.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
namespace fs = std::filesystem;

namespace {

fs::path samples_dir() {
  return fs::path(LUCIDQ_SHARED_DIR) / "testdata" / "gguf-samples";
}

#define SKIP_WITHOUT_SAMPLES()                                                              \
  if (!fs::exists(samples_dir() / "source.safetensors"))                                    \
  GTEST_SKIP() << "ggml sample files not found at " << samples_dir()                        \
               << " (../shared/testdata/gguf-samples beside the repository); skipping the " \
                  "byte-identity checks"

std::vector<unsigned char> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every tensor of a sample GGUF file, by name, read with lucidq's GGUF reader.
struct GgufTensor {
  Q::GgmlType type;
  std::vector<std::int64_t> ne;  // innermost first
  std::vector<unsigned char> bytes;
};

std::map<std::string, GgufTensor> read_gguf_tensors(const fs::path& path) {
  const Q::GgufFile file = Q::GgufFile::open(path);
  std::map<std::string, GgufTensor> out;
  for (const Q::GgufTensorInfo& info : file.tensors()) {
    const auto bytes = file.bytes(info);
    const auto* begin = reinterpret_cast<const unsigned char*>(bytes.data());
    out[info.name] = {info.type, info.ne, {begin, begin + bytes.size()}};
  }
  return out;
}

std::vector<float> imatrix_values(std::int64_t n) {
  const std::vector<unsigned char> bytes = read_file(samples_dir() / "imatrix.f32");
  std::vector<float> out(static_cast<std::size_t>(n));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

std::vector<float> tensor_floats(const Q::SafetensorsFile& file, const std::string& name) {
  const auto bytes = file.bytes(*file.find(name));
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

const char* const kStems[] = {"q8_0",         "q4_0",         "q4_1",           "q5_0",
                              "q5_1",         "q2_k",         "q3_k",           "q4_k",
                              "q5_k",         "q6_k",         "iq4_nl",         "f16",
                              "bf16",         "q2_k.imatrix", "q3_k.imatrix",   "q4_k.imatrix",
                              "q5_k.imatrix", "q6_k.imatrix", "iq4_nl.imatrix", "q4_0.imatrix",
                              "q4_1.imatrix", "q5_0.imatrix", "q5_1.imatrix"};

std::int64_t row_count(const GgufTensor& t) {
  std::int64_t rows = 1;
  for (std::size_t d = 1; d < t.ne.size(); ++d)
    rows *= t.ne[d];
  return rows;
}

TEST(GgmlSamples, EveryDecodeEqualsGgmlsBitForBit) {
  SKIP_WITHOUT_SAMPLES();
  for (const char* stem : kStems) {
    SCOPED_TRACE(stem);
    const auto tensors = read_gguf_tensors(samples_dir() / (std::string(stem) + ".gguf"));
    const auto expected =
        Q::SafetensorsFile::open(samples_dir() / (std::string(stem) + ".expected.safetensors"));
    ASSERT_EQ(tensors.size(), 8u);
    int identical = 0;
    for (const auto& [name, tensor] : tensors) {
      const std::vector<float> want = tensor_floats(expected, name);
      std::vector<float> got(want.size(), -1.0f);
      Q::ggml_dequantize_rows(tensor.type, tensor.bytes.data(), got.data(), row_count(tensor),
                              tensor.ne[0]);
      const bool same = std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0;
      EXPECT_TRUE(same) << name << " decodes differently from ggml";
      identical += same ? 1 : 0;
    }
    std::cout << "[ decode ] " << stem << ": " << identical << "/8 tensors bit-identical\n";
  }
}

// On every tier the CPU has (the samples' edge rows through every search).
TEST(GgmlSamples, QuantizingTheSourceGivesGgmlsBytes) {
  SKIP_WITHOUT_SAMPLES();
  const auto source = Q::SafetensorsFile::open(samples_dir() / "source.safetensors");
  const Q::Isa original = Q::active_isa();
  for (const Q::Isa isa : Q::supported_isas()) {
    Q::set_isa(isa);
    for (const char* stem : kStems) {
      SCOPED_TRACE(std::string(stem) + " on " + Q::to_string(isa));
      const bool with_imatrix = std::string(stem).find(".imatrix") != std::string::npos;
      const auto tensors = read_gguf_tensors(samples_dir() / (std::string(stem) + ".gguf"));
      int identical = 0;
      for (const auto& [name, tensor] : tensors) {
        const std::vector<float> x = tensor_floats(source, name);
        const std::int64_t n_per_row = tensor.ne[0];
        const std::vector<float> imatrix = imatrix_values(n_per_row);
        std::vector<unsigned char> got(tensor.bytes.size(), 0xa5);
        Q::ggml_quantize_rows(tensor.type, x.data(), got.data(), row_count(tensor), n_per_row,
                              with_imatrix ? imatrix.data() : nullptr);
        const bool same = got == tensor.bytes;
        if (!same) {
          std::size_t first = 0;
          while (got[first] == tensor.bytes[first])
            ++first;
          ADD_FAILURE() << name << " (" << Q::ggml_type_traits(tensor.type).name
                        << ") differs from ggml's bytes first at byte " << first;
        }
        identical += same ? 1 : 0;
      }
      std::cout << "[ quantize ] " << stem << " (" << Q::to_string(isa) << "): " << identical
                << "/8 tensors byte-identical\n";
    }
  }
  Q::set_isa(original);
}

// The README's fallbacks: w96 (row length 96) cannot be a K-quant.
TEST(GgmlSamples, TheSamplesUseTheDocumentedFallbackForRowsOf96) {
  SKIP_WITHOUT_SAMPLES();
  const std::map<std::string, Q::GgmlType> fallback = {{"q2_k", Q::GgmlType::Q4_0},
                                                       {"q3_k", Q::GgmlType::Q4_0},
                                                       {"q4_k", Q::GgmlType::Q5_0},
                                                       {"q5_k", Q::GgmlType::Q5_1},
                                                       {"q6_k", Q::GgmlType::Q8_0}};
  for (const auto& [stem, type] : fallback) {
    const auto tensors = read_gguf_tensors(samples_dir() / (stem + ".gguf"));
    EXPECT_EQ(tensors.at("w96").type, type) << stem;
    EXPECT_EQ(tensors.at("norm.weight").type, Q::GgmlType::F32) << stem;
  }
}

// --- Rounding rules (they differ from lucidq's half-to-even core) ---------------------------

std::vector<unsigned char> quantize_block(Q::GgmlType type, const std::vector<float>& x) {
  std::vector<unsigned char> out(
      static_cast<std::size_t>(Q::ggml_row_size(type, static_cast<std::int64_t>(x.size()))));
  Q::ggml_quantize_rows(type, x.data(), out.data(), 1, static_cast<std::int64_t>(x.size()),
                        nullptr);
  return out;
}

TEST(GgmlRounding, Q8_0RoundsTiesAwayFromZero) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // d = 1 exactly
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 3.5f;
  x[4] = 0.5f;
  const auto bytes = quantize_block(Q::GgmlType::Q8_0, x);
  Q::kernels::BlockQ8_0 block;
  std::memcpy(&block, bytes.data(), sizeof block);
  EXPECT_EQ(block.d, 0x3c00);  // fp16 1.0
  EXPECT_EQ(block.qs[1], 3);   // half-to-even would give 2
  EXPECT_EQ(block.qs[2], -3);
  EXPECT_EQ(block.qs[3], 4);
  EXPECT_EQ(block.qs[4], 1);  // half-to-even would give 0
}

TEST(GgmlRounding, Q4_0AddsEightAndAHalfAndTruncates) {
  std::vector<float> x(32, 0.0f);
  x[0] = -8.0f;  // the extreme: d = -8 / -8 = 1, code 0
  x[1] = 2.5f;   // 2.5 + 8.5 = 11 -> value 3 (half up; half-to-even gives 2)
  x[2] = -2.5f;  // 6 -> value -2 (half up; away from zero gives -3)
  x[3] = 7.6f;   // 16.1 -> clamped to 15 -> value 7
  x[16] = 0.5f;  // high nibble of byte 0: 9 -> value 1
  const auto bytes = quantize_block(Q::GgmlType::Q4_0, x);
  Q::kernels::BlockQ4_0 block;
  std::memcpy(&block, bytes.data(), sizeof block);
  EXPECT_EQ(block.d, 0x3c00);
  EXPECT_EQ(block.qs[0], 0 | (9 << 4));
  EXPECT_EQ(block.qs[1] & 0xf, 11);
  EXPECT_EQ(block.qs[2] & 0xf, 6);
  EXPECT_EQ(block.qs[3] & 0xf, 15);
}

TEST(GgmlRounding, Q4_0StoresANegativeScaleForAPositiveExtremeAndMinusZeroForZeros) {
  std::vector<float> x(32, 0.0f);
  x[5] = 8.0f;
  auto bytes = quantize_block(Q::GgmlType::Q4_0, x);
  std::uint16_t d;
  std::memcpy(&d, bytes.data(), 2);
  EXPECT_EQ(d, 0xbc00);  // fp16 -1.0
  bytes = quantize_block(Q::GgmlType::Q4_0, std::vector<float>(32, 0.0f));
  std::memcpy(&d, bytes.data(), 2);
  EXPECT_EQ(d, 0x8000);  // 0 / -8 = -0
}

TEST(GgmlRounding, Q5_0AndQ4_1AndQ5_1RoundHalfUpOnTheOffsetValue) {
  std::vector<float> x(32, 0.0f);
  x[0] = -16.0f;  // Q5_0: d = 1
  x[1] = 2.5f;    // 2.5 + 16.5 = 19
  x[2] = -2.5f;   // 14
  auto bytes = quantize_block(Q::GgmlType::Q5_0, x);
  Q::kernels::BlockQ5_0 q5;
  std::memcpy(&q5, bytes.data(), sizeof q5);
  EXPECT_EQ(q5.qs[1] & 0xf, 19 & 0xf);
  EXPECT_EQ(q5.qh[0] & 0x2, 0x2);  // bit 4 of element 1
  EXPECT_EQ(q5.qs[2] & 0xf, 14);

  std::vector<float> y(32, 0.0f);
  y[1] = 15.0f;  // Q4_1: min 0, d = 1
  y[2] = 2.5f;   // 3 (half-to-even gives 2)
  y[3] = 3.5f;   // 4
  bytes = quantize_block(Q::GgmlType::Q4_1, y);
  Q::kernels::BlockQ4_1 q41;
  std::memcpy(&q41, bytes.data(), sizeof q41);
  EXPECT_EQ(q41.qs[2] & 0xf, 3);
  EXPECT_EQ(q41.qs[3] & 0xf, 4);

  y[1] = 31.0f;  // Q5_1: d = 1
  bytes = quantize_block(Q::GgmlType::Q5_1, y);
  Q::kernels::BlockQ5_1 q51;
  std::memcpy(&q51, bytes.data(), sizeof q51);
  EXPECT_EQ(q51.qs[2] & 0xf, 3);
}

TEST(GgmlRounding, KQuantsRoundHalfToEvenThroughTheMagicNumber) {
  EXPECT_EQ(Q::kernels::ggml_nearest_int(2.5f), 2);
  EXPECT_EQ(Q::kernels::ggml_nearest_int(3.5f), 4);
  EXPECT_EQ(Q::kernels::ggml_nearest_int(-2.5f), -2);
  EXPECT_EQ(Q::kernels::ggml_nearest_int(-0.5f), 0);
  EXPECT_EQ(Q::kernels::ggml_nearest_int(0.49999997f), 0);
  EXPECT_EQ(Q::kernels::ggml_nearest_int(4194303.0f), 4194303);
}

TEST(GgmlRounding, Fp16ScalesRoundToNearestEvenWithSubnormals) {
  EXPECT_EQ(Q::kernels::ggml_fp16(1.0f + 1.0f / 2048), 0x3c00);     // tie -> even
  EXPECT_EQ(Q::kernels::ggml_fp16(1.0f + 3.0f / 2048), 0x3c02);     // tie -> even (up)
  EXPECT_EQ(Q::kernels::ggml_fp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(Q::kernels::ggml_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie with 0 -> 0
  EXPECT_EQ(Q::kernels::ggml_fp16(std::ldexp(3.0f, -26)), 0x0001);  // above the tie
  EXPECT_EQ(Q::kernels::ggml_fp16(65520.0f), 0x7c00);               // overflows to inf
  EXPECT_EQ(Q::kernels::ggml_fp16(-std::nanf("")), 0xfe00);         // ggml's NaN
  EXPECT_EQ(Q::kernels::truncate_to_int8(INFINITY), 0);             // cvttss2si, low byte
  EXPECT_EQ(Q::kernels::truncate_to_int8(200.0f), static_cast<std::int8_t>(200));
}

// --- Every tier and thread count against the reference ----------------------------------------

const Q::GgmlType kTypes[] = {
    Q::GgmlType::Q8_0,   Q::GgmlType::Q4_0, Q::GgmlType::Q4_1, Q::GgmlType::Q5_0, Q::GgmlType::Q5_1,
    Q::GgmlType::Q2_K,   Q::GgmlType::Q3_K, Q::GgmlType::Q4_K, Q::GgmlType::Q5_K, Q::GgmlType::Q6_K,
    Q::GgmlType::IQ4_NL, Q::GgmlType::F16,  Q::GgmlType::BF16, Q::GgmlType::F32};

// Rows of 512 values: random, zeros, constants, outliers, tiny (fp16-subnormal scales), large.
std::vector<float> edge_rows(std::mt19937_64& rng, std::int64_t rows, std::int64_t n) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(rows * n));
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = x.data() + r * n;
    for (std::int64_t j = 0; j < n; ++j) {
      const float v = u(rng);
      switch (r % 8) {
        case 0:
          row[j] = v;
          break;
        case 1:
          row[j] = 0.0f;
          break;
        case 2:
          row[j] = r % 16 == 2 ? 0.75f : -3.25f;
          break;
        case 3:
          row[j] = j % 61 == 0 ? 100.0f * v : 0.01f * v;
          break;
        case 4:
          row[j] = v * std::ldexp(1.0f, -14 - static_cast<int>(j / 32) % 12);
          break;
        case 5:
          row[j] = v * 30000.0f;
          break;
        case 6:
          row[j] = 1.0f + v / 4;
          break;
        default:
          row[j] = std::round(v * 8.0f) / 2.0f;  // exact halves: ties everywhere
      }
    }
  }
  return x;
}

TEST(GgmlTiers, EveryTierAndThreadCountWritesTheReferenceBytes) {
  const std::uint64_t seed = Q::testing::test_seed();
  std::mt19937_64 rng(seed);
  const Q::Isa original = Q::active_isa();
  const int original_threads = Q::num_threads();
  // 512: a partial lane group; 2560 = 10 super-blocks: full groups plus a partial one.
  for (const auto [rows, n] : {std::pair<std::int64_t, std::int64_t>{24, 512}, {6, 2560}}) {
    const std::vector<float> x = edge_rows(rng, rows, n);
    std::vector<float> imatrix(static_cast<std::size_t>(n));
    std::uniform_real_distribution<float> w(0.0f, 4.0f);
    for (float& v : imatrix)
      v = w(rng);
    for (const Q::GgmlType type : kTypes) {
      for (const bool use_imatrix : {false, true}) {
        SCOPED_TRACE(std::string(Q::ggml_type_traits(type).name) +
                     (use_imatrix ? " with imatrix" : "") + ", rows of " + std::to_string(n));
        const auto size = static_cast<std::size_t>(rows * Q::ggml_row_size(type, n));
        Q::set_isa(Q::Isa::reference);
        Q::set_num_threads(1);
        std::vector<unsigned char> want(size);
        Q::ggml_quantize_rows(type, x.data(), want.data(), rows, n,
                              use_imatrix ? imatrix.data() : nullptr);
        std::vector<float> want_decoded(x.size());
        Q::ggml_dequantize_rows(type, want.data(), want_decoded.data(), rows, n);
        for (const Q::Isa isa : Q::supported_isas()) {
          for (const int threads : {1, 2}) {
            Q::set_isa(isa);
            Q::set_num_threads(threads);
            std::vector<unsigned char> got(size, 0xa5);
            Q::ggml_quantize_rows(type, x.data(), got.data(), rows, n,
                                  use_imatrix ? imatrix.data() : nullptr);
            EXPECT_EQ(got, want) << Q::to_string(isa) << ", " << threads << " threads";
            std::vector<float> decoded(x.size(), -1.0f);
            Q::ggml_dequantize_rows(type, want.data(), decoded.data(), rows, n);
            EXPECT_EQ(0, std::memcmp(decoded.data(), want_decoded.data(), x.size() * 4))
                << "decode on " << Q::to_string(isa) << ", " << threads << " threads";
          }
        }
      }
    }
  }
  for (const Q::Isa isa : {Q::Isa::avx2, Q::Isa::avx512}) {
    const auto isas = Q::supported_isas();
    if (std::find(isas.begin(), isas.end(), isa) == isas.end())
      std::cout << "[ skip ] tier " << Q::to_string(isa) << ": not supported by this CPU\n";
  }
  Q::set_isa(original);
  Q::set_num_threads(original_threads);
}

// --- Errors ------------------------------------------------------------------------------------

TEST(GgmlErrors, UnsupportedTypesAreNamed) {
  std::vector<float> x(256, 1.0f);
  std::vector<unsigned char> out(1024);
  EXPECT_ERROR_CONTAINS(
      Q::ggml_quantize_rows(Q::GgmlType::IQ2_XXS, x.data(), out.data(), 1, 256, nullptr),
      "type iq2_xxs is not supported (expected one of f32, f16");
  EXPECT_ERROR_CONTAINS(Q::ggml_dequantize_rows(Q::GgmlType::Q8_1, out.data(), x.data(), 1, 32),
                        "type q8_1");
  EXPECT_FALSE(Q::ggml_can_quantize(Q::GgmlType::Q8_K));
  EXPECT_TRUE(Q::ggml_can_quantize(Q::GgmlType::IQ4_NL));
  EXPECT_TRUE(Q::ggml_requires_imatrix(Q::GgmlType::IQ2_XS));
  EXPECT_FALSE(Q::ggml_requires_imatrix(Q::GgmlType::Q2_K));
}

TEST(GgmlErrors, RowLengthsMustBeWholeBlocks) {
  std::vector<float> x(96, 1.0f);
  std::vector<unsigned char> out(1024);
  EXPECT_ERROR_CONTAINS(
      Q::ggml_quantize_rows(Q::GgmlType::Q4_K, x.data(), out.data(), 1, 96, nullptr),
      "n_per_row = 96 for q4_K (expected a multiple of its block size 256)");
  EXPECT_ERROR_CONTAINS(Q::ggml_dequantize_rows(Q::GgmlType::Q8_0, out.data(), x.data(), 1, 40),
                        "n_per_row = 40 for q8_0");
  EXPECT_ERROR_CONTAINS(
      Q::ggml_quantize_rows(Q::GgmlType::Q8_0, x.data(), out.data(), -1, 32, nullptr), "rows = -1");
  EXPECT_ERROR_CONTAINS(
      Q::ggml_quantize_rows(Q::GgmlType::Q8_0, nullptr, out.data(), 1, 32, nullptr), "null");
}

TEST(GgmlErrors, NonFiniteInputsAndOverflowingScalesAreRejected) {
  std::vector<float> x(64, 1.0f);
  std::vector<unsigned char> out(1024);
  x[40] = NAN;
  EXPECT_ERROR_CONTAINS(
      Q::ggml_quantize_rows(Q::GgmlType::Q4_0, x.data(), out.data(), 2, 32, nullptr),
      "q4_0 row 1, column 8 = nan (expected finite values");
  x[40] = 1.0f;
  std::vector<float> imatrix(32, 1.0f);
  imatrix[3] = INFINITY;
  EXPECT_ERROR_CONTAINS(
      Q::ggml_quantize_rows(Q::GgmlType::Q4_0, x.data(), out.data(), 2, 32, imatrix.data()),
      "imatrix[3] = inf");
  x[2] = 70000.0f;
  EXPECT_ERROR_CONTAINS(
      Q::ggml_quantize_rows(Q::GgmlType::F16, x.data(), out.data(), 2, 32, nullptr),
      "f16 row 0, block 2: a stored fp16 scale or value overflowed");
  x[2] = 1e10f;
  EXPECT_ERROR_CONTAINS(
      Q::ggml_quantize_rows(Q::GgmlType::Q8_0, x.data(), out.data(), 2, 32, nullptr),
      "q8_0 row 0, block 0");
}

}  // namespace
