// Internal: translating public types (ScalarType, QDtype, QParams) into kernel arguments.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/kernel_table.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/qparams.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization::detail {

/// Codes quantize kernels write at a time into stack scratch before packing
/// them to 4- or 2-bit fields (a multiple of 8, so chunks stay byte aligned).
inline constexpr std::int64_t scratch_codes = 4096;

/// Flat ranges handed to threads start at multiples of this many elements:
/// byte aligned for every packed storage.
inline constexpr std::int64_t piece_alignment = 64;

/// True for the input types the kernels read directly.
inline bool is_kernel_input(ScalarType type) {
  return type == ScalarType::float32 || type == ScalarType::float16 || type == ScalarType::bfloat16;
}

/// The kernel index of float32 / float16 / bfloat16 (callers check is_kernel_input).
inline int float_index(ScalarType type) {
  switch (type) {
    case ScalarType::float16:
      return static_cast<int>(kernels::FloatType::f16);
    case ScalarType::bfloat16:
      return static_cast<int>(kernels::FloatType::bf16);
    default:
      return static_cast<int>(kernels::FloatType::f32);
  }
}

inline kernels::Grid grid_of(const QDtype& qdtype) {
  return {static_cast<std::int32_t>(qdtype.quant_min()),
          static_cast<std::int32_t>(qdtype.quant_max())};
}

/// Bits per packed field (4 or 2), or 0 for byte-addressed storage.
inline int packed_bits(Storage storage) {
  return storage == Storage::packed4 ? 4 : storage == Storage::packed2 ? 2 : 0;
}

/// The kernel that unpacks codes of a packed 4- or 2-bit dtype to int8 (sign-extended when
/// signed): the one unpacking routine every reader of packed codes uses.
inline kernels::UnpackFn unpack_kernel(const kernels::KernelTable& k, const QDtype& qdtype) {
  const bool is_signed = qdtype.is_signed();
  if (qdtype.bits() == 4) return is_signed ? k.unpack4_signed : k.unpack4_unsigned;
  return is_signed ? k.unpack2_signed : k.unpack2_unsigned;
}

/// Bytes per code of byte-addressed storage (1, 2 or 4).
inline int code_bytes(Storage storage) {
  switch (storage) {
    case Storage::int16:
    case Storage::uint16:
      return 2;
    case Storage::int32:
      return 4;
    default:
      return 1;
  }
}

/// The quantize kernel's code width for byte-addressed storage (packed: b8 into scratch).
inline int code_width_index(Storage storage) {
  const int bytes = code_bytes(storage);
  return static_cast<int>(bytes == 1   ? kernels::CodeWidth::b8
                          : bytes == 2 ? kernels::CodeWidth::b16
                                       : kernels::CodeWidth::b32);
}

/// 1 / scale of every slot: what quantize multiplies by (PyTorch's formula). A single scale (per
/// tensor) is kept inline: a quantize call on a small tensor allocates nothing for it.
class InverseScales {
 public:
  explicit InverseScales(std::span<const float> scale) {
    if (scale.size() == 1) {
      one_ = 1.0f / scale[0];
      return;
    }
    many_.resize(scale.size());
    for (std::size_t i = 0; i < many_.size(); ++i)
      many_[i] = 1.0f / scale[i];
  }
  InverseScales(const InverseScales&) = delete;
  InverseScales& operator=(const InverseScales&) = delete;

  const float* data() const { return many_.empty() ? &one_ : many_.data(); }
  float operator[](std::size_t slot) const { return data()[slot]; }

 private:
  float one_ = 0.0f;
  ParamArray<float> many_;  // large ones are reused huge-page mappings (param_array.hpp)
};

/// Throws Error naming `what` unless x is float32, float16 or bfloat16.
inline void check_kernel_input(const TensorView& x, const char* what) {
  if (!is_kernel_input(x.type)) {
    throw Error(std::string(what) + ": x has element type " + to_string(x.type) +
                " (expected float32, float16 or bfloat16)");
  }
}

}  // namespace lucid::quantization::detail
