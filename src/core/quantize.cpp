// quantize / dequantize / fake_quantize: validation, parameter layout, threading and dispatch.
// The arithmetic lives in the kernels (src/kernels/reference is the specification).
#include "lucid/quantization/quantize.hpp"

#include <algorithm>

#include "core/kernel_args.hpp"
#include "kernels/affine_spec.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/parallel.hpp"
#include "lucid/quantization/error.hpp"
#include "support/param_layout.hpp"

namespace lucid::quantization {
namespace {

using detail::ParamLayout;
using kernels::KernelTable;

ParamLayout layout_for(const Shape& shape, const QParams& qparams) {
  return ParamLayout::make(shape, qparams.qscheme, qparams.ch_axis, qparams.group_size);
}

void check_input(const TensorView& x, const QParams& qparams, const char* what) {
  qparams.validate_for(x.shape);
  detail::check_kernel_input(x, what);
}

template <class T>
void check_output_size(std::span<T> out, std::int64_t expected, const char* what,
                       const char* unit) {
  if (static_cast<std::int64_t>(out.size()) != expected) {
    throw Error(std::string(what) + ": out holds " + std::to_string(out.size()) + " " + unit +
                " (expected " + std::to_string(expected) + ")");
  }
}

// Everything a quantize-like kernel call needs besides the element range.
struct AffineJob {
  const KernelTable& kernels;
  const unsigned char* x;  // input elements
  std::size_t x_element_size;
  int float_index;
  const QParams& qparams;
  ParamLayout layout;
  kernels::Grid grid;
  detail::InverseScales inverse;

  AffineJob(const KernelTable& table, const TensorView& input, const QParams& qp)
      : kernels(table),
        x(static_cast<const unsigned char*>(input.data)),
        x_element_size(element_size(input.type)),
        float_index(detail::float_index(input.type)),
        qparams(qp),
        layout(layout_for(input.shape, qp)),
        grid(detail::grid_of(qp.qdtype)),
        inverse(qp.scale) {}

  const void* input_at(std::int64_t flat) const {
    return x + static_cast<std::size_t>(flat) * x_element_size;
  }
  kernels::Affine affine(std::int64_t slot) const {
    const auto s = static_cast<std::size_t>(slot);
    return {inverse[s], qparams.scale[s], qparams.zero_point[s]};
  }

  // Codes of one run [begin, end) into dst (code width `width`; streaming: width b8 only, as
  // quantize_range).
  void quantize_run(std::int64_t begin, std::int64_t end, std::int64_t slot, bool per_element,
                    int width, bool streaming, void* dst) const {
    if (per_element) {
      kernels.quantize_vec[float_index][width](input_at(begin), end - begin, inverse.data() + slot,
                                               qparams.zero_point.data() + slot, grid, dst);
    } else if (streaming) {
      kernels.quantize_streaming[float_index](input_at(begin), end - begin, affine(slot), grid,
                                              dst);
    } else {
      kernels.quantize[float_index][width](input_at(begin), end - begin, affine(slot), grid, dst);
    }
  }

  // Whether the codes of all n elements go through the non-temporal kernels: one byte per code
  // and kernels::streams_byte_output.
  bool streams_codes(std::int64_t n) const {
    const Storage storage = qparams.qdtype.storage();
    return detail::packed_bits(storage) == 0 && detail::code_bytes(storage) == 1 &&
           kernels::streams_byte_output(n, static_cast<std::int64_t>(x_element_size));
  }

  // Groups along the last axis whose codes the per-group kernels make, many groups a call: 8-bit
  // codes, or 4-bit codes packed when every group starts on a byte (even dim and group size).
  bool codes_by_groups() const {
    if (!layout.groups_contiguous() || std::int64_t{grid.quant_max} - grid.quant_min > 255)
      return false;
    const Storage storage = qparams.qdtype.storage();
    const int bits = detail::packed_bits(storage);
    return bits == 0 ? detail::code_bytes(storage) == 1
                     : bits == 4 && layout.dim % 2 == 0 && layout.group_size % 2 == 0;
  }

  // The codes of elements [begin, end) (begin byte aligned) by codes_by_groups: runs of whole
  // groups (ParamLayout::groups_per_run a call), a cut group on its own. The parameters are the
  // caller's: GroupValues::any.
  void quantize_groups(std::int64_t begin, std::int64_t end, std::uint8_t* out) const {
    const bool packed = detail::packed_bits(qparams.qdtype.storage()) == 4;
    const std::int64_t max_groups =
        layout.groups_per_run(static_cast<std::int64_t>(x_element_size));
    const auto groups = [&](std::int64_t b, std::int64_t count, std::int64_t size,
                            std::int64_t slot) {
      const auto s = static_cast<std::size_t>(slot);
      const float* inv = inverse.data() + s;
      const float* scale = qparams.scale.data() + s;
      const std::int32_t* zero_point = qparams.zero_point.data() + s;
      if (packed) {
        kernels.quantize_groups_int4[float_index](input_at(b), count, size, inv, scale, zero_point,
                                                  grid, kernels::GroupValues::any, out + b / 2);
      } else {
        kernels.quantize_groups[float_index](input_at(b), count, size, inv, scale, zero_point, grid,
                                             kernels::GroupValues::any,
                                             reinterpret_cast<std::int8_t*>(out) + b);
      }
    };
    layout.for_each_group_run(
        begin, end, max_groups,
        [&](std::int64_t b, std::int64_t count, std::int64_t slot) {
          groups(b, count, layout.group_size, slot);
        },
        [&](std::int64_t b, std::int64_t e, std::int64_t slot) { groups(b, 1, e - b, slot); });
  }

  // The codes of elements [begin, end) into storage `out` (begin byte aligned); streaming: as
  // streams_codes of the whole output.
  void quantize_range(std::int64_t begin, std::int64_t end, bool streaming,
                      std::uint8_t* out) const {
    if (codes_by_groups()) {
      quantize_groups(begin, end, out);
      return;
    }
    const Storage storage = qparams.qdtype.storage();
    const int bits = detail::packed_bits(storage);
    if (bits == 0) {
      const int width = detail::code_width_index(storage);
      const int bytes = detail::code_bytes(storage);
      layout.for_each_run(
          begin, end, [&](std::int64_t b, std::int64_t e, std::int64_t slot, bool per_element) {
            quantize_run(b, e, slot, per_element, width, streaming, out + b * bytes);
          });
      return;
    }
    // Packed: codes into an int8 scratch that stays in L1, then packed.
    std::int8_t scratch[detail::scratch_codes];
    const kernels::PackFn pack = bits == 4 ? kernels.pack4 : kernels.pack2;
    const int per_byte = 8 / bits;
    for (std::int64_t chunk = begin; chunk < end; chunk += detail::scratch_codes) {
      const std::int64_t stop = std::min(end, chunk + detail::scratch_codes);
      layout.for_each_run(
          chunk, stop, [&](std::int64_t b, std::int64_t e, std::int64_t slot, bool per_element) {
            quantize_run(b, e, slot, per_element, static_cast<int>(kernels::CodeWidth::b8), false,
                         scratch + (b - chunk));
          });
      pack(scratch, stop - chunk, out + chunk / per_byte);
    }
  }

  // fake_quantize of elements [begin, end); mask may be null. streaming: as dequantize_range.
  void fake_quantize_range(std::int64_t begin, std::int64_t end, bool streaming, float* out,
                           std::uint8_t* mask) const {
    const int wide = qparams.qdtype.bits() > 16 ? 1 : 0;
    layout.for_each_run(
        begin, end, [&](std::int64_t b, std::int64_t e, std::int64_t slot, bool per_element) {
          std::uint8_t* mask_at = mask ? mask + b : nullptr;
          if (per_element) {
            kernels.fake_quantize_vec[float_index][wide](
                input_at(b), e - b, inverse.data() + slot, qparams.scale.data() + slot,
                qparams.zero_point.data() + slot, grid, out + b, mask_at);
          } else {
            const auto& uniform =
                streaming ? kernels.fake_quantize_streaming : kernels.fake_quantize;
            uniform[float_index][wide](input_at(b), e - b, affine(slot), grid, out + b, mask_at);
          }
        });
  }
};

int code_type_index(Storage storage) {
  switch (storage) {
    case Storage::uint8:
      return static_cast<int>(kernels::CodeType::u8);
    case Storage::int16:
      return static_cast<int>(kernels::CodeType::i16);
    case Storage::uint16:
      return static_cast<int>(kernels::CodeType::u16);
    case Storage::int32:
      return static_cast<int>(kernels::CodeType::i32);
    default:  // int8, and packed codes unpacked to int8
      return static_cast<int>(kernels::CodeType::i8);
  }
}

// The reconstructions of codes [begin, end) of `q` (begin byte aligned); `streaming`: through
// the non-temporal kernels (kernels::streams_float_output of the whole output).
void dequantize_range(const KernelTable& k, const QuantizedTensor& q, const ParamLayout& layout,
                      std::int64_t begin, std::int64_t end, bool streaming, float* out) {
  const QParams& qp = q.qparams();
  const Storage storage = qp.qdtype.storage();
  const int code_type = code_type_index(storage);
  const kernels::DequantizeFn dequantize =
      streaming ? k.dequantize_streaming[code_type] : k.dequantize[code_type];
  auto run = [&](const void* codes, std::int64_t b, std::int64_t e, std::int64_t slot,
                 bool per_element) {
    const auto s = static_cast<std::size_t>(slot);
    if (per_element) {
      k.dequantize_vec[code_type](codes, e - b, qp.scale.data() + s, qp.zero_point.data() + s,
                                  out + b);
    } else {
      dequantize(codes, e - b, qp.scale[s], qp.zero_point[s], out + b);
    }
  };
  const std::uint8_t* storage_bytes = q.storage().data();
  const int bits = detail::packed_bits(storage);
  if (bits == 0) {
    const int bytes = detail::code_bytes(storage);
    layout.for_each_run(begin, end,
                        [&](std::int64_t b, std::int64_t e, std::int64_t slot, bool per_element) {
                          run(storage_bytes + b * bytes, b, e, slot, per_element);
                        });
    return;
  }
  std::int8_t scratch[detail::scratch_codes];
  const kernels::UnpackFn unpack = detail::unpack_kernel(k, qp.qdtype);
  const int per_byte = 8 / bits;
  for (std::int64_t chunk = begin; chunk < end; chunk += detail::scratch_codes) {
    const std::int64_t stop = std::min(end, chunk + detail::scratch_codes);
    unpack(storage_bytes + chunk / per_byte, stop - chunk, scratch);
    layout.for_each_run(chunk, stop,
                        [&](std::int64_t b, std::int64_t e, std::int64_t slot, bool per_element) {
                          run(scratch + (b - chunk), b, e, slot, per_element);
                        });
  }
}

void quantize_unchecked(const TensorView& x, const QParams& qparams, std::uint8_t* out) {
  const AffineJob job(kernels::active(), x, qparams);
  const std::int64_t n = x.numel();
  const bool streaming = job.streams_codes(n);
  kernels::parallel_pieces(n, kernels::threads_for(n), detail::piece_alignment,
                           [&](int, std::int64_t begin, std::int64_t end) {
                             job.quantize_range(begin, end, streaming, out);
                           });
}

void fake_quantize_unchecked(const TensorView& x, const QParams& qparams, float* out,
                             std::uint8_t* mask) {
  const AffineJob job(kernels::active(), x, qparams);
  const std::int64_t n = x.numel();
  const bool streaming = kernels::streams_float_output(n);
  kernels::parallel_pieces(n, kernels::threads_for(n), detail::piece_alignment,
                           [&](int, std::int64_t begin, std::int64_t end) {
                             job.fake_quantize_range(begin, end, streaming, out, mask);
                           });
}

}  // namespace

std::int32_t quantize_value(float x, float scale, std::int32_t zero_point, const QDtype& qdtype) {
  return kernels::clamp_code(kernels::unclamped_code(x, 1.0f / scale, zero_point), zero_point,
                             detail::grid_of(qdtype));
}

float dequantize_value(std::int32_t code, float scale, std::int32_t zero_point) {
  return kernels::dequantize_code(code, scale, zero_point);
}

QuantizedTensor quantize(const TensorView& x, const QParams& qparams) {
  check_input(x, qparams, "quantize");
  // Uninitialised: the parallel kernel writes every byte, and is the first to touch each page.
  ByteBuffer storage =
      ByteBuffer::uninitialized(static_cast<std::size_t>(qparams.qdtype.storage_bytes(x.numel())));
  quantize_unchecked(x, qparams, storage.data());
  return QuantizedTensor(x.shape, qparams, std::move(storage), detail::ValidParams{});  // checked
}

void quantize_into(const TensorView& x, const QParams& qparams, std::span<std::uint8_t> out) {
  check_input(x, qparams, "quantize_into");
  check_output_size(out, qparams.qdtype.storage_bytes(x.numel()), "quantize_into", "bytes");
  quantize_unchecked(x, qparams, out.data());
}

QuantizedTensor quantize(const TensorView& x, QScheme qscheme, QDtype qdtype, int ch_axis,
                         std::int64_t group_size) {
  if (group_size > 0 && is_per_channel(qscheme) && detail::is_kernel_input(x.type)) {
    return quantize_per_group(x, qscheme, qdtype, ch_axis, group_size);
  }
  return quantize(x, choose_qparams(x, qscheme, qdtype, ch_axis, group_size));
}

void dequantize_into(const QuantizedTensor& q, std::span<float> out) {
  check_output_size(out, q.numel(), "dequantize_into", "floats");
  const KernelTable& k = kernels::active();
  const ParamLayout layout = layout_for(q.shape(), q.qparams());
  const std::int64_t n = q.numel();
  const bool streaming = kernels::streams_float_output(n);
  kernels::parallel_pieces(n, kernels::threads_for(n), detail::piece_alignment,
                           [&](int, std::int64_t begin, std::int64_t end) {
                             dequantize_range(k, q, layout, begin, end, streaming, out.data());
                           });
}

Tensor dequantize(const QuantizedTensor& q) {
  Tensor out = Tensor::uninitialized(ScalarType::float32, q.shape());
  dequantize_into(q, {out.data_as<float>(), static_cast<std::size_t>(q.numel())});
  return out;
}

FakeQuantizeResult fake_quantize_with_mask(const TensorView& x, const QParams& qparams) {
  check_input(x, qparams, "fake_quantize");
  FakeQuantizeResult result{Tensor::uninitialized(ScalarType::float32, x.shape),
                            Tensor::uninitialized(ScalarType::boolean, x.shape)};
  fake_quantize_unchecked(x, qparams, result.output.data_as<float>(),
                          result.mask.data_as<std::uint8_t>());
  return result;
}

Tensor fake_quantize(const TensorView& x, const QParams& qparams) {
  check_input(x, qparams, "fake_quantize");
  Tensor out = Tensor::uninitialized(ScalarType::float32, x.shape);
  fake_quantize_unchecked(x, qparams, out.data_as<float>(), nullptr);
  return out;
}

void fake_quantize_into(const TensorView& x, const QParams& qparams, std::span<float> out,
                        std::span<std::uint8_t> mask) {
  check_input(x, qparams, "fake_quantize_into");
  check_output_size(out, x.numel(), "fake_quantize_into", "floats");
  if (!mask.empty()) check_output_size(mask, x.numel(), "fake_quantize_into: mask", "bytes");
  fake_quantize_unchecked(x, qparams, out.data(), mask.empty() ? nullptr : mask.data());
}

Tensor fake_quantize_backward(const TensorView& grad_out, const TensorView& mask) {
  if (grad_out.type != ScalarType::float32) {
    throw Error("fake_quantize_backward: grad_out has element type " + to_string(grad_out.type) +
                " (expected float32)");
  }
  if (mask.type != ScalarType::boolean) {
    throw Error("fake_quantize_backward: mask has element type " + to_string(mask.type) +
                " (expected bool)");
  }
  if (grad_out.shape != mask.shape) {
    throw Error("fake_quantize_backward: grad_out shape " + to_string(grad_out.shape) +
                " differs from mask shape " + to_string(mask.shape) + " (expected equal shapes)");
  }
  const std::vector<float> grad = to_float32(grad_out, "fake_quantize_backward: grad_out");
  const auto* keep = mask.data_as<std::uint8_t>();
  Tensor out(ScalarType::float32, grad_out.shape);
  float* dst = out.data_as<float>();
  // A product, as PyTorch computes it: a NaN or Inf gradient stays visible (Inf * 0 = NaN).
  for (std::size_t i = 0; i < grad.size(); ++i)
    dst[i] = grad[i] * (keep[i] ? 1.0f : 0.0f);
  return out;
}

}  // namespace lucid::quantization
