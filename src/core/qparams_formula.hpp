// Internal: the (scale, zero_point) formula of calculate_qparams, for fused callers, and the checks
// its parameters still need.
#pragma once

#include <cstdint>
#include <utility>

#include "kernels/kernel_table.hpp"
#include "lucid/quantization/qparams.hpp"

namespace lucid::quantization::detail {

/// The kernels' form of calculate_qparams's rule (kernels/qparams_spec.hpp).
kernels::RangeRule range_rule(QScheme qscheme, const QDtype& qdtype, float eps);

/// One (scale, zero_point) from a validated range (finite, min <= max), exactly
/// as calculate_qparams computes it (docs/numerics.md, "calculate_qparams").
std::pair<float, std::int32_t> qparams_for_range(float min_val, float max_val, QScheme qscheme,
                                                 const QDtype& qdtype, float eps);

/// choose_qparams for per-group schemes on float32 / float16 / bfloat16 input: the parameters of
/// quantize_per_group without its codes (runs of groups through the range and qparams kernels;
/// src/core/quantize_per_group.cpp). The same QParams as observe_range then calculate_qparams.
/// Throws Error (named choose_qparams) for a bad axis, group size or eps.
QParams choose_group_qparams(const TensorView& x, QScheme qscheme, QDtype qdtype, int ch_axis,
                             std::int64_t group_size, float eps);

/// QParams::validate_for without the per-entry checks (lengths, scheme, group_size and the count
/// input_shape implies): for parameters this formula made, whose every entry is valid by
/// construction. Throws Error as validate_for does.
void validate_layout_for(const QParams& qparams, const Shape& input_shape);

}  // namespace lucid::quantization::detail
