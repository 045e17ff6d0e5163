// Reference (scalar) quantize / dequantize / fake_quantize kernels: the specification.
#include "kernels/reference/kernels.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/affine_spec.hpp"
#include "kernels/qparams_spec.hpp"

namespace lucid::quantization::kernels::reference {
namespace {

// Stores code k truncated to the width's low bits (two's complement), at any alignment.
template <CodeWidth W>
void store_code(void* codes, std::int64_t k, std::int32_t code) {
  auto* bytes = static_cast<unsigned char*>(codes);
  if constexpr (W == CodeWidth::b8) {
    bytes[k] = static_cast<unsigned char>(code);
  } else if constexpr (W == CodeWidth::b16) {
    const auto value = static_cast<std::uint16_t>(code);
    std::memcpy(bytes + 2 * k, &value, 2);
  } else {
    std::memcpy(bytes + 4 * k, &code, 4);
  }
}

template <CodeType C>
std::int32_t load_code(const void* codes, std::int64_t k) {
  const auto* bytes = static_cast<const unsigned char*>(codes);
  if constexpr (C == CodeType::i8) {
    return static_cast<std::int8_t>(bytes[k]);
  } else if constexpr (C == CodeType::u8) {
    return bytes[k];
  } else if constexpr (C == CodeType::i16 || C == CodeType::u16) {
    std::uint16_t value;
    std::memcpy(&value, bytes + 2 * k, 2);
    return C == CodeType::i16 ? static_cast<std::int16_t>(value) : value;
  } else {
    std::int32_t value;
    std::memcpy(&value, bytes + 4 * k, 4);
    return value;
  }
}

template <FloatType T, CodeWidth W>
void quantize__reference(const void* x, std::int64_t n, Affine p, Grid grid, void* codes) {
  for (std::int64_t k = 0; k < n; ++k) {
    const double code = unclamped_code(load_element<T>(x, k), p.inv_scale, p.zero_point);
    store_code<W>(codes, k, clamp_code(code, p.zero_point, grid));
  }
}

template <FloatType T, CodeWidth W>
void quantize_vec__reference(const void* x, std::int64_t n, const float* inv_scale,
                             const std::int32_t* zero_point, Grid grid, void* codes) {
  for (std::int64_t k = 0; k < n; ++k) {
    const double code = unclamped_code(load_element<T>(x, k), inv_scale[k], zero_point[k]);
    store_code<W>(codes, k, clamp_code(code, zero_point[k], grid));
  }
}

template <CodeType C>
void dequantize__reference(const void* codes, std::int64_t n, float scale, std::int32_t zero_point,
                           float* out) {
  for (std::int64_t k = 0; k < n; ++k)
    out[k] = dequantize_code(load_code<C>(codes, k), scale, zero_point);
}

template <CodeType C>
void dequantize_vec__reference(const void* codes, std::int64_t n, const float* scale,
                               const std::int32_t* zero_point, float* out) {
  for (std::int64_t k = 0; k < n; ++k)
    out[k] = dequantize_code(load_code<C>(codes, k), scale[k], zero_point[k]);
}

template <FloatType T>
void fake_quantize__reference(const void* x, std::int64_t n, Affine p, Grid grid, float* out,
                              std::uint8_t* mask) {
  for (std::int64_t k = 0; k < n; ++k) {
    const double code = unclamped_code(load_element<T>(x, k), p.inv_scale, p.zero_point);
    if (mask) mask[k] = inside_grid(code, grid) ? 1 : 0;
    out[k] = dequantize_code(clamp_code(code, p.zero_point, grid), p.scale, p.zero_point);
  }
}

template <FloatType T>
void fake_quantize_vec__reference(const void* x, std::int64_t n, const float* inv_scale,
                                  const float* scale, const std::int32_t* zero_point, Grid grid,
                                  float* out, std::uint8_t* mask) {
  for (std::int64_t k = 0; k < n; ++k) {
    const double code = unclamped_code(load_element<T>(x, k), inv_scale[k], zero_point[k]);
    if (mask) mask[k] = inside_grid(code, grid) ? 1 : 0;
    out[k] = dequantize_code(clamp_code(code, zero_point[k], grid), scale[k], zero_point[k]);
  }
}

template <FloatType T>
void quantize_groups__reference(const void* x, std::int64_t groups, std::int64_t group_size,
                                const float* inv_scale, const float* scale,
                                const std::int32_t* zero_point, Grid grid, GroupValues,
                                std::int8_t* codes) {
  for (std::int64_t g = 0; g < groups; ++g) {
    quantize__reference<T, CodeWidth::b8>(
        static_cast<const char*>(x) + g * group_size * (T == FloatType::f32 ? 4 : 2), group_size,
        Affine{inv_scale[g], scale[g], zero_point[g]}, grid, codes + g * group_size);
  }
}

template <FloatType T>
void quantize_groups_int4__reference(const void* x, std::int64_t groups, std::int64_t group_size,
                                     const float* inv_scale, const float* scale,
                                     const std::int32_t* zero_point, Grid grid, GroupValues,
                                     std::uint8_t* packed) {
  quantize_groups_through_scratch(quantize__reference<T, CodeWidth::b8>, reference_table().pack4,
                                  input_element_bytes<T>, x, groups, group_size, inv_scale, scale,
                                  zero_point, grid, packed);
}

void group_qparams(const float* mins, const float* maxs, std::int64_t groups, const RangeRule& rule,
                   float* inverse, float* scales, std::int32_t* zero_points) {
  for (std::int64_t g = 0; g < groups; ++g) {
    const Affine p = group_affine(mins[g], maxs[g], rule);
    inverse[g] = p.inv_scale;
    scales[g] = p.scale;
    zero_points[g] = p.zero_point;
  }
}

template <FloatType T>
void fill_for_input(KernelTable& table) {
  const auto t = static_cast<int>(T);
  table.quantize[t][0] = quantize__reference<T, CodeWidth::b8>;
  table.quantize[t][1] = quantize__reference<T, CodeWidth::b16>;
  table.quantize[t][2] = quantize__reference<T, CodeWidth::b32>;
  table.quantize_streaming[t] = quantize__reference<T, CodeWidth::b8>;  // plain stores
  table.quantize_vec[t][0] = quantize_vec__reference<T, CodeWidth::b8>;
  table.quantize_vec[t][1] = quantize_vec__reference<T, CodeWidth::b16>;
  table.quantize_vec[t][2] = quantize_vec__reference<T, CodeWidth::b32>;
  table.quantize_groups[t] = quantize_groups__reference<T>;
  table.quantize_groups_int4[t] = quantize_groups_int4__reference<T>;
  table.fake_quantize[t][0] = table.fake_quantize[t][1] = fake_quantize__reference<T>;
  table.fake_quantize_streaming[t][0] = table.fake_quantize_streaming[t][1] =
      fake_quantize__reference<T>;  // plain stores
  table.fake_quantize_vec[t][0] = table.fake_quantize_vec[t][1] = fake_quantize_vec__reference<T>;
}

template <CodeType C>
void fill_for_code(KernelTable& table) {
  table.dequantize[static_cast<int>(C)] = dequantize__reference<C>;
  table.dequantize_streaming[static_cast<int>(C)] = dequantize__reference<C>;  // plain stores
  table.dequantize_vec[static_cast<int>(C)] = dequantize_vec__reference<C>;
}

}  // namespace

void fill_quantize_kernels(KernelTable& table) {
  table.group_qparams = group_qparams;
  fill_for_input<FloatType::f32>(table);
  fill_for_input<FloatType::f16>(table);
  fill_for_input<FloatType::bf16>(table);
  fill_for_code<CodeType::i8>(table);
  fill_for_code<CodeType::u8>(table);
  fill_for_code<CodeType::i16>(table);
  fill_for_code<CodeType::u16>(table);
  fill_for_code<CodeType::i32>(table);
}

}  // namespace lucid::quantization::kernels::reference

namespace lucid::quantization::kernels {

void quantize_groups_through_scratch(QuantizeFn quantize, PackFn pack4, std::int64_t element_bytes,
                                     const void* x, std::int64_t groups, std::int64_t group_size,
                                     const float* inv_scale, const float* scale,
                                     const std::int32_t* zero_point, Grid grid,
                                     std::uint8_t* packed) {
  constexpr std::int64_t piece = 1024;  // even: every piece of a group starts on a byte
  std::int8_t scratch[piece];
  const auto* input = static_cast<const unsigned char*>(x);
  for (std::int64_t g = 0; g < groups; ++g) {
    const Affine p{inv_scale[g], scale[g], zero_point[g]};
    for (std::int64_t begin = 0; begin < group_size; begin += piece) {
      const std::int64_t n = std::min(piece, group_size - begin);
      const std::int64_t k = g * group_size + begin;
      quantize(input + k * element_bytes, n, p, grid, scratch);
      pack4(scratch, n, packed + k / 2);
    }
  }
}

}  // namespace lucid::quantization::kernels
