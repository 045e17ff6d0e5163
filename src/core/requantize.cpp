// requantize: validation, per-channel layout, threading and dispatch of the requantize kernels.
#include "lucid/quantization/requantize.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "core/kernel_args.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/parallel.hpp"
#include "lucid/quantization/error.hpp"
#include "support/param_layout.hpp"

namespace lucid::quantization {
namespace {

void check_qdtype(const QDtype& qdtype, const char* what) {
  if (qdtype.bits() != 8) {
    throw Error(std::string(what) + ": qdtype = " + qdtype.name() +
                " (expected an 8-bit grid: qint8 or quint8)");
  }
}

void check_parameters(std::span<const float> multipliers, std::span<const std::int32_t> zero_points,
                      const QDtype& qdtype) {
  for (std::size_t c = 0; c < multipliers.size(); ++c) {
    if (!(std::isfinite(multipliers[c]) && multipliers[c] > 0.0f)) {
      throw Error("requantize: multiplier[" + std::to_string(c) +
                  "] = " + std::to_string(multipliers[c]) + " (expected a finite value > 0)");
    }
    if (zero_points[c] < qdtype.quant_min() || zero_points[c] > qdtype.quant_max()) {
      throw Error("requantize: zero_point[" + std::to_string(c) +
                  "] = " + std::to_string(zero_points[c]) + " is outside " + qdtype.name());
    }
  }
}

Tensor requantize_with_layout(const TensorView& acc, std::span<const float> multipliers,
                              std::span<const std::int32_t> zero_points,
                              const detail::ParamLayout& layout, const QDtype& qdtype) {
  // Every code is written below: a reused mapping, no fresh page faults (tensor.hpp).
  Tensor out =
      Tensor::uninitialized(qdtype.is_signed() ? ScalarType::int8 : ScalarType::uint8, acc.shape);
  const kernels::KernelTable& k = kernels::active();
  const kernels::Grid grid = detail::grid_of(qdtype);
  const auto* in = acc.data_as<std::int32_t>();
  auto* codes = out.data_as<std::uint8_t>();
  const std::int64_t n = acc.numel();
  const kernels::RequantizeFn uniform =
      kernels::streams_byte_output(n, sizeof(std::int32_t)) ? k.requantize_streaming : k.requantize;
  kernels::parallel_pieces(
      n, kernels::threads_for(n), detail::piece_alignment,
      [&](int, std::int64_t begin, std::int64_t end) {
        layout.for_each_run(
            begin, end, [&](std::int64_t b, std::int64_t e, std::int64_t slot, bool per_element) {
              const auto s = static_cast<std::size_t>(slot);
              if (per_element) {
                k.requantize_vec(in + b, e - b, multipliers.data() + s, zero_points.data() + s,
                                 grid, codes + b);
              } else {
                uniform(in + b, e - b, multipliers[s], zero_points[s], grid, codes + b);
              }
            });
      });
  return out;
}

void check_acc(const TensorView& acc) {
  if (acc.type != ScalarType::int32) {
    throw Error("requantize: acc has element type " + to_string(acc.type) + " (expected int32)");
  }
}

}  // namespace

Tensor requantize(const TensorView& acc, float multiplier, std::int32_t zero_point,
                  const QDtype& qdtype) {
  check_acc(acc);
  check_qdtype(qdtype, "requantize");
  check_parameters({&multiplier, 1}, {&zero_point, 1}, qdtype);
  const auto layout = detail::ParamLayout::make(acc.shape, QScheme::PER_TENSOR_AFFINE, 0, 0);
  return requantize_with_layout(acc, {&multiplier, 1}, {&zero_point, 1}, layout, qdtype);
}

Tensor requantize(const TensorView& acc, std::span<const float> multipliers,
                  std::span<const std::int32_t> zero_points, int axis, const QDtype& qdtype) {
  check_acc(acc);
  check_qdtype(qdtype, "requantize");
  const auto layout = detail::ParamLayout::make(acc.shape, QScheme::PER_CHANNEL_AFFINE, axis, 0);
  if (static_cast<std::int64_t>(multipliers.size()) != layout.dim ||
      zero_points.size() != multipliers.size()) {
    throw Error("requantize: " + std::to_string(multipliers.size()) + " multipliers and " +
                std::to_string(zero_points.size()) + " zero points for axis " +
                std::to_string(axis) + " of shape " + to_string(acc.shape) + " (expected " +
                std::to_string(layout.dim) + " of each)");
  }
  check_parameters(multipliers, zero_points, qdtype);
  return requantize_with_layout(acc, multipliers, zero_points, layout, qdtype);
}

void requantize_row(const std::int32_t* acc, std::int64_t count, float multiplier,
                    std::int32_t zero_point, const QDtype& qdtype, void* out) {
  check_qdtype(qdtype, "requantize_row");
  kernels::active().requantize(acc, count, multiplier, zero_point, detail::grid_of(qdtype),
                               static_cast<std::uint8_t*>(out));
}

void requantize_row(const std::int32_t* acc, std::int64_t count, const float* multipliers,
                    const std::int32_t* zero_points, const QDtype& qdtype, void* out) {
  check_qdtype(qdtype, "requantize_row");
  kernels::active().requantize_vec(acc, count, multipliers, zero_points, detail::grid_of(qdtype),
                                   static_cast<std::uint8_t*>(out));
}

}  // namespace lucid::quantization
