// QuantizedEmbeddingTable: torch-compatible row-wise int8 / int4 quantization and row decoding.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "lucid/quantization/embedding.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/scalar_type.hpp"

namespace lucid::quantization {
namespace {

constexpr const char* what = "QuantizedEmbeddingTable";

void check_shape(std::int64_t rows, std::int64_t dim, int bits) {
  if (bits != 4 && bits != 8)
    throw Error(std::string(what) + ": bits = " + std::to_string(bits) + " (expected 4 or 8)");
  if (rows < 1)
    throw Error(std::string(what) + ": rows = " + std::to_string(rows) + " (expected >= 1)");
  if (dim < 1)
    throw Error(std::string(what) + ": dim = " + std::to_string(dim) + " (expected >= 1)");
}

std::int64_t code_bytes(std::int64_t dim, int bits) {
  return bits == 8 ? dim : (dim + 1) / 2;
}

}  // namespace

std::int64_t QuantizedEmbeddingTable::row_bytes(std::int64_t dim, int bits) {
  return code_bytes(dim, bits) + (bits == 8 ? 8 : 4);
}

QuantizedEmbeddingTable QuantizedEmbeddingTable::quantize(const float* w, std::int64_t rows,
                                                          std::int64_t dim, int bits) {
  check_shape(rows, dim, bits);
  if (w == nullptr) throw Error(std::string(what) + ": w is null");
  QuantizedEmbeddingTable t;
  t.rows_ = rows;
  t.dim_ = dim;
  t.bits_ = bits;
  const std::int64_t stride = row_bytes(dim, bits);
  t.bytes_.assign(static_cast<std::size_t>(rows * stride), 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* x = w + r * dim;
    float lo = x[0], hi = x[0];
    for (std::int64_t d = 0; d < dim; ++d) {
      if (!std::isfinite(x[d])) {
        throw Error(std::string(what) + ": w[" + std::to_string(r) + ", " + std::to_string(d) +
                    "] = " + std::to_string(x[d]) + " (expected finite weights)");
      }
      lo = std::min(lo, x[d]);
      hi = std::max(hi, x[d]);
    }
    std::uint8_t* row = t.bytes_.data() + r * stride;
    std::uint8_t* meta = row + code_bytes(dim, bits);
    if (bits == 8) {
      const float scale = (hi - lo) / 255.0f;
      const float inverse = 255.0f / (hi - lo + 1e-8f);
      for (std::int64_t d = 0; d < dim; ++d) {
        const float q = std::nearbyint((x[d] - lo) * inverse);
        row[d] = static_cast<std::uint8_t>(std::clamp(q, 0.0f, 255.0f));
      }
      std::memcpy(meta, &scale, 4);
      std::memcpy(meta + 4, &lo, 4);
    } else {
      const std::uint16_t lo_bits = float_to_float16(lo);
      const float bias = float16_to_float(lo_bits);
      float scale = (hi - bias) / 15.0f;
      if (scale == 0.0f) scale = 1.0f;
      const std::uint16_t scale_bits = float_to_float16(scale);
      const float inverse = 1.0f / float16_to_float(scale_bits);
      for (std::int64_t d = 0; d < dim; ++d) {
        const float q = std::clamp(std::nearbyint((x[d] - bias) * inverse), 0.0f, 15.0f);
        row[d / 2] |= static_cast<std::uint8_t>(static_cast<int>(q) << (d % 2 * 4));
      }
      std::memcpy(meta, &scale_bits, 2);
      std::memcpy(meta + 2, &lo_bits, 2);
    }
  }
  return t;
}

QuantizedEmbeddingTable QuantizedEmbeddingTable::from_prepacked(const std::uint8_t* bytes,
                                                                std::int64_t rows, std::int64_t dim,
                                                                int bits) {
  check_shape(rows, dim, bits);
  if (bytes == nullptr) throw Error(std::string(what) + ": bytes is null");
  QuantizedEmbeddingTable t;
  t.rows_ = rows;
  t.dim_ = dim;
  t.bits_ = bits;
  t.bytes_.assign(bytes, bytes + rows * row_bytes(dim, bits));
  return t;
}

float QuantizedEmbeddingTable::scale(std::int64_t row) const {
  const std::uint8_t* meta = bytes_.data() + row * row_bytes(dim_, bits_) + code_bytes(dim_, bits_);
  if (bits_ == 8) {
    float s;
    std::memcpy(&s, meta, 4);
    return s;
  }
  std::uint16_t s;
  std::memcpy(&s, meta, 2);
  return float16_to_float(s);
}

float QuantizedEmbeddingTable::bias(std::int64_t row) const {
  const std::uint8_t* meta = bytes_.data() + row * row_bytes(dim_, bits_) + code_bytes(dim_, bits_);
  if (bits_ == 8) {
    float b;
    std::memcpy(&b, meta + 4, 4);
    return b;
  }
  std::uint16_t b;
  std::memcpy(&b, meta + 2, 2);
  return float16_to_float(b);
}

std::int32_t QuantizedEmbeddingTable::code(std::int64_t row, std::int64_t d) const {
  const std::uint8_t* codes = bytes_.data() + row * row_bytes(dim_, bits_);
  return bits_ == 8 ? codes[d] : (codes[d / 2] >> (d % 2 * 4)) & 0x0f;
}

void QuantizedEmbeddingTable::decode_row(std::int64_t row, float* out) const {
  const std::uint8_t* codes = bytes_.data() + row * row_bytes(dim_, bits_);
  const float s = scale(row), b = bias(row);
  if (bits_ == 8) {
    for (std::int64_t d = 0; d < dim_; ++d)
      out[d] = static_cast<float>(codes[d]) * s + b;
  } else {
    for (std::int64_t d = 0; d < dim_; ++d)
      out[d] = static_cast<float>((codes[d / 2] >> (d % 2 * 4)) & 0x0f) * s + b;
  }
}

}  // namespace lucid::quantization
