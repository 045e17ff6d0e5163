// The ggml block quantize / dequantize driver: argument checks, rows over threads, the kernels
// of the active tier, and ggml_validate_row_data's check of the stored scales.
#include "lucid/quantization/ggml_quants.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/dispatch.hpp"
#include "kernels/parallel.hpp"
#include "lucid/quantization/error.hpp"

namespace lucid::quantization {
namespace {

using kernels::GgmlKernel;

struct Supported {
  GgmlType type;
  GgmlKernel kernel;
  // Byte offsets of the fp16 fields in one block that ggml_validate_row_data checks (-1: none).
  int fp16_fields[2];
};

constexpr Supported kSupported[] = {
    {GgmlType::F16, GgmlKernel::f16, {0, -1}},       {GgmlType::BF16, GgmlKernel::bf16, {-1, -1}},
    {GgmlType::Q8_0, GgmlKernel::q8_0, {0, -1}},     {GgmlType::Q4_0, GgmlKernel::q4_0, {0, -1}},
    {GgmlType::Q4_1, GgmlKernel::q4_1, {0, 2}},      {GgmlType::Q5_0, GgmlKernel::q5_0, {0, -1}},
    {GgmlType::Q5_1, GgmlKernel::q5_1, {0, 2}},      {GgmlType::Q2_K, GgmlKernel::q2_k, {80, 82}},
    {GgmlType::Q3_K, GgmlKernel::q3_k, {108, -1}},   {GgmlType::Q4_K, GgmlKernel::q4_k, {0, 2}},
    {GgmlType::Q5_K, GgmlKernel::q5_k, {0, 2}},      {GgmlType::Q6_K, GgmlKernel::q6_k, {208, -1}},
    {GgmlType::IQ4_NL, GgmlKernel::iq4_nl, {0, -1}},
};

std::optional<Supported> supported(GgmlType type) {
  for (const Supported& s : kSupported)
    if (s.type == type) return s;
  return std::nullopt;
}

std::string type_name(GgmlType type) {
  if (const auto traits = ggml_type_traits(static_cast<std::uint32_t>(type)))
    return std::string(traits->name);
  return "id " + std::to_string(static_cast<std::uint32_t>(type));
}

std::string supported_names() {
  std::string text = "f32";
  for (const Supported& s : kSupported)
    text += ", " + type_name(s.type);
  return text;
}

std::string number(float value) {
  std::ostringstream out;
  out.precision(9);
  out << value;
  return out.str();
}

// Checks type, lengths and pointers; returns the row size in bytes.
std::int64_t check_arguments(const char* function, GgmlType type, const void* src, const void* dst,
                             std::int64_t rows, std::int64_t n_per_row) {
  if (type != GgmlType::F32 && !supported(type)) {
    throw Error(std::string(function) + ": type " + type_name(type) +
                " is not supported (expected one of " + supported_names() + ")");
  }
  if (rows < 0 || n_per_row < 0) {
    throw Error(std::string(function) + ": rows = " + std::to_string(rows) +
                ", n_per_row = " + std::to_string(n_per_row) + " (expected values >= 0)");
  }
  const std::int64_t block = ggml_type_traits(type).block_size;
  if (n_per_row % block != 0) {
    throw Error(std::string(function) + ": n_per_row = " + std::to_string(n_per_row) + " for " +
                type_name(type) + " (expected a multiple of its block size " +
                std::to_string(block) + ")");
  }
  if (rows > 0 && n_per_row > 0 && (src == nullptr || dst == nullptr)) {
    throw Error(std::string(function) + ": src or dst is null for " + std::to_string(rows) +
                " rows of " + std::to_string(n_per_row) + " values (expected buffers)");
  }
  return ggml_row_size(type, n_per_row);
}

// Index of the first NaN or infinity in x[0, n), or -1.
std::int64_t first_non_finite(const float* x, std::int64_t n) {
  constexpr std::int64_t chunk = 256;
  for (std::int64_t begin = 0; begin < n; begin += chunk) {
    const std::int64_t end = std::min(n, begin + chunk);
    std::uint32_t any = 0;
    for (std::int64_t i = begin; i < end; ++i) {
      std::uint32_t bits;
      std::memcpy(&bits, x + i, sizeof bits);
      any |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
    }
    if (any != 0) {
      for (std::int64_t i = begin; i < end; ++i)
        if (!std::isfinite(x[i])) return i;
    }
  }
  return -1;
}

bool fp16_is_finite(const unsigned char* at) {
  std::uint16_t bits;
  std::memcpy(&bits, at, sizeof bits);
  return (bits & 0x7c00u) != 0x7c00u;
}

bool bf16_is_finite(const unsigned char* at) {
  std::uint16_t bits;
  std::memcpy(&bits, at, sizeof bits);
  return (bits & 0x7f80u) != 0x7f80u;
}

// The first block (or value) of a quantized row whose stored fp16 / bf16 field is not finite.
std::int64_t first_invalid_block(const Supported& s, const unsigned char* row,
                                 std::int64_t row_bytes, std::int64_t block_bytes) {
  for (std::int64_t b = 0; b * block_bytes < row_bytes; ++b) {
    const unsigned char* block = row + b * block_bytes;
    if (s.kernel == GgmlKernel::bf16) {
      if (!bf16_is_finite(block)) return b;
      continue;
    }
    for (const int field : s.fp16_fields)
      if (field >= 0 && !fp16_is_finite(block + field)) return b;
  }
  return -1;
}

// What went wrong first in one piece of rows.
struct RowFailure {
  std::int64_t row = -1;
  std::int64_t column = -1;  // a non-finite input value, or
  std::int64_t block = -1;   // an overflowing stored scale
};

}  // namespace

bool ggml_can_quantize(GgmlType type) {
  return type == GgmlType::F32 || supported(type).has_value();
}

bool ggml_requires_imatrix(GgmlType type) {
  return type == GgmlType::IQ2_XXS || type == GgmlType::IQ2_XS || type == GgmlType::IQ1_S;
}

void ggml_quantize_rows(GgmlType type, const float* src, void* dst, std::int64_t rows,
                        std::int64_t n_per_row, const float* imatrix) {
  const char* function = "ggml_quantize_rows";
  const std::int64_t row_bytes = check_arguments(function, type, src, dst, rows, n_per_row);
  if (rows == 0 || n_per_row == 0) return;
  if (imatrix != nullptr) {
    const std::int64_t bad = first_non_finite(imatrix, n_per_row);
    if (bad >= 0) {
      throw Error(std::string(function) + ": imatrix[" + std::to_string(bad) +
                  "] = " + number(imatrix[bad]) + " for " + type_name(type) +
                  " (expected finite importance weights)");
    }
  }
  auto* out = static_cast<unsigned char*>(dst);
  if (type == GgmlType::F32) {
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t bad = first_non_finite(src + r * n_per_row, n_per_row);
      if (bad >= 0) {
        throw Error(std::string(function) + ": f32 row " + std::to_string(r) + ", column " +
                    std::to_string(bad) + " = " + number(src[r * n_per_row + bad]) +
                    " (expected finite values)");
      }
    }
    std::memcpy(dst, src, static_cast<std::size_t>(rows * row_bytes));
    return;
  }
  const Supported s = *supported(type);
  const kernels::GgmlQuantizeRowFn kernel =
      kernels::active().ggml_quantize[static_cast<int>(s.kernel)];
  const std::int64_t block_bytes = ggml_type_traits(type).type_size;
  const int pieces = kernels::threads_for(rows * n_per_row);
  std::vector<RowFailure> failures(static_cast<std::size_t>(std::max(pieces, 1)));
  kernels::parallel_pieces(rows, pieces, 1, [&](int piece, std::int64_t begin, std::int64_t end) {
    RowFailure& failure = failures[static_cast<std::size_t>(piece)];
    for (std::int64_t r = begin; r < end; ++r) {
      const float* x = src + r * n_per_row;
      const std::int64_t bad = first_non_finite(x, n_per_row);
      if (bad >= 0) {
        failure = {r, bad, -1};
        return;
      }
      unsigned char* row = out + r * row_bytes;
      kernel(x, row, n_per_row, imatrix);
      const std::int64_t block = first_invalid_block(s, row, row_bytes, block_bytes);
      if (block >= 0) {
        failure = {r, -1, block};
        return;
      }
    }
  });
  for (const RowFailure& failure : failures) {
    if (failure.row < 0) continue;
    const std::string where =
        std::string(function) + ": " + type_name(type) + " row " + std::to_string(failure.row);
    if (failure.column >= 0) {
      throw Error(where + ", column " + std::to_string(failure.column) + " = " +
                  number(src[failure.row * n_per_row + failure.column]) +
                  " (expected finite values: ggml's quantizers are undefined for NaN and Inf)");
    }
    throw Error(where + ", block " + std::to_string(failure.block) +
                ": a stored fp16 scale or value overflowed to infinity (expected values that " +
                "fit fp16, |x| <= 65504 for f16; ggml_validate_row_data rejects such rows)");
  }
}

void ggml_dequantize_rows(GgmlType type, const void* src, float* dst, std::int64_t rows,
                          std::int64_t n_per_row) {
  const std::int64_t row_bytes =
      check_arguments("ggml_dequantize_rows", type, src, dst, rows, n_per_row);
  if (rows == 0 || n_per_row == 0) return;
  if (type == GgmlType::F32) {
    std::memcpy(dst, src, static_cast<std::size_t>(rows * row_bytes));
    return;
  }
  const Supported s = *supported(type);
  const kernels::GgmlDequantizeFn kernel =
      kernels::active().ggml_dequantize[static_cast<int>(s.kernel)];
  const std::int64_t block = ggml_type_traits(type).block_size;
  const std::int64_t block_bytes = ggml_type_traits(type).type_size;
  const std::int64_t n = rows * n_per_row;
  const auto* in = static_cast<const unsigned char*>(src);
  kernels::parallel_pieces(n, kernels::threads_for(n), block,
                           [&](int, std::int64_t begin, std::int64_t end) {
                             kernel(in + begin / block * block_bytes, dst + begin, end - begin);
                           });
}

std::vector<float> ggml_round_trip_rows(GgmlType type, const float* src, std::int64_t rows,
                                        std::int64_t n_per_row, const float* imatrix) {
  check_arguments("ggml_round_trip_rows", type, src, src, rows, n_per_row);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(ggml_row_size(type, n_per_row) * rows));
  ggml_quantize_rows(type, src, bytes.data(), rows, n_per_row, imatrix);
  std::vector<float> out(static_cast<std::size_t>(rows * n_per_row));
  ggml_dequantize_rows(type, bytes.data(), out.data(), rows, n_per_row);
  return out;
}

}  // namespace lucid::quantization
