// Helpers for the checkpoint tests: temporary folders, raw files, and small model checkpoints.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lucid/quantization/safetensors.hpp"
#include "lucid/quantization/scalar_type.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization::testing {

/// A fresh folder under the system's temporary folder, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "lucidq-ckpt-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  const std::filesystem::path& path() const { return path_; }
  /// The names of the files in the folder, sorted (temporary files included).
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The raw bytes of a stored tensor.
inline std::string stored_bytes(const SafetensorsFile& file, const std::string& name) {
  const auto bytes = file.bytes(*file.find(name));
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

/// A safetensors file from a header JSON and a data section, as raw bytes (for bad input).
inline std::string raw_safetensors(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  std::uint64_t length = header.size();
  for (char& byte : out) {
    byte = static_cast<char>(length & 0xFF);
    length >>= 8;
  }
  return out + header + data;
}

/// An owned tensor of `type` holding `values` (rounded to the type).
inline Tensor make_tensor(ScalarType type, const Shape& shape, const std::vector<float>& values) {
  Tensor t(type, shape);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (type == ScalarType::float32) {
      t.data_as<float>()[i] = values[i];
    } else if (type == ScalarType::float64) {
      t.data_as<double>()[i] = values[i];
    } else if (type == ScalarType::bfloat16) {
      t.data_as<std::uint16_t>()[i] = float_to_bfloat16(values[i]);
    } else if (type == ScalarType::float16) {
      t.data_as<std::uint16_t>()[i] = float_to_float16(values[i]);
    } else if (type == ScalarType::int64) {
      t.data_as<std::int64_t>()[i] = static_cast<std::int64_t>(values[i]);
    }
  }
  return t;
}

/// `count` normal values with per-row magnitudes spread over two decades and a few
/// outliers, like a Linear layer's weight.
inline std::vector<float> weight_values(std::int64_t rows, std::int64_t cols,
                                        std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> magnitude(0.01f, 1.0f);
  std::vector<float> values;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float m = magnitude(rng);
    for (std::int64_t c = 0; c < cols; ++c)
      values.push_back(m * normal(rng) * ((r * cols + c) % 97 == 0 ? 20.0f : 1.0f));
  }
  return values;
}

/// A small model: two Linear weights (BF16 and F32), a bias (F32), a norm (F16), an
/// integer tensor (I64) and user metadata.
struct SmallModel {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::map<std::string, std::string> metadata{{"format", "pt"}, {"producer", "test"}};

  explicit SmallModel(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    tensors.emplace_back("embed.weight",
                         make_tensor(ScalarType::bfloat16, {16, 8}, weight_values(16, 8, rng)));
    tensors.emplace_back("layers.0.fc.weight",
                         make_tensor(ScalarType::float32, {12, 40}, weight_values(12, 40, rng)));
    tensors.emplace_back("layers.0.fc.bias",
                         make_tensor(ScalarType::float32, {12}, weight_values(1, 12, rng)));
    tensors.emplace_back("norm.weight",
                         make_tensor(ScalarType::float16, {8}, weight_values(1, 8, rng)));
    tensors.emplace_back("position_ids",
                         make_tensor(ScalarType::int64, {4}, {0.0f, 1.0f, 2.0f, 3.0f}));
  }
  void write(const std::filesystem::path& path) const {
    std::vector<std::pair<std::string, TensorView>> views;
    for (const auto& [name, tensor] : tensors)
      views.emplace_back(name, tensor.view());
    write_safetensors(path, views, metadata);
  }
  const Tensor& tensor(const std::string& name) const {
    for (const auto& [n, t] : tensors) {
      if (n == name) return t;
    }
    throw std::out_of_range(name);
  }
};

}  // namespace lucid::quantization::testing
