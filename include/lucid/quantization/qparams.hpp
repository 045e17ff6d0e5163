// QParams (scheme + dtype + scales + zero points + granularity) and calculate_qparams.
#pragma once

#include <cfloat>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lucid/quantization/param_array.hpp"
#include "lucid/quantization/qdtype.hpp"
#include "lucid/quantization/qscheme.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// The default lower bound on a scale: float32 machine epsilon, as PyTorch's observers use.
inline constexpr float default_eps = FLT_EPSILON;

/// A scheme together with its derived parameters.
///
/// Granularity follows the scheme and group_size:
/// - per-tensor schemes: one scale / zero_point;
/// - per-channel schemes, group_size == 0: one pair per index along ch_axis;
/// - per-channel schemes, group_size > 0 (per-group, ONNX "blocked"): the
///   input is cut along ch_axis into contiguous blocks of group_size (the last
///   may be shorter), one pair per block and per index of every other axis.
///   The parameters then have the input's shape with dimension D along ch_axis
///   replaced by ceil(D / group_size), stored row-major.
struct QParams {
  QScheme qscheme = QScheme::PER_TENSOR_AFFINE;
  QDtype qdtype = quint8;
  ParamArray<float> scale{1.0f};
  ParamArray<std::int32_t> zero_point{0};
  int ch_axis = 0;
  std::int64_t group_size = 0;

  /// One (scale, zero_point) for the whole tensor; validated.
  static QParams per_tensor(float scale, std::int32_t zero_point, QDtype qdtype,
                            QScheme qscheme = QScheme::PER_TENSOR_AFFINE);
  /// One pair per channel along ch_axis; validated (lengths must agree).
  static QParams per_channel(std::vector<float> scale, std::vector<std::int32_t> zero_point,
                             int ch_axis, QDtype qdtype,
                             QScheme qscheme = QScheme::PER_CHANNEL_AFFINE);
  /// One pair per block of group_size along ch_axis (see the struct comment); validated.
  static QParams per_group(std::vector<float> scale, std::vector<std::int32_t> zero_point,
                           int ch_axis, std::int64_t group_size, QDtype qdtype,
                           QScheme qscheme = QScheme::PER_CHANNEL_SYMMETRIC);

  bool is_per_group() const { return group_size > 0; }
  /// The shape of scale / zero_point for an input of `input_shape`.
  Shape param_shape(const Shape& input_shape) const;
  /// Checks the parameters on their own: every scale finite and > 0, zero
  /// points inside the dtype's range (and pinned for symmetric schemes),
  /// equal lengths, group_size >= 0. Throws Error naming the field and value.
  void validate() const;
  /// validate() plus the fit to an input: ch_axis inside the rank and the
  /// parameter count equal to the count param_shape() implies.
  void validate_for(const Shape& input_shape) const;
};

/// Derives (scale, zero_point) from an observed range, as Lucid's
/// lucid.quantization and PyTorch's observers do, in float32 arithmetic:
/// - the range is widened to include 0: min' = min(min, 0), max' = max(max, 0);
/// - affine: s = (max' - min') / (qmax - qmin), z = clamp(qmin - round(min' / s), qmin, qmax);
/// - symmetric: s = max(-min', max') / ((qmax - qmin) / 2), z = 0 for signed
///   dtypes, 2^(bits-1) for unsigned full-range dtypes (128 for quint8) and
///   floor((qmin + qmax) / 2) for unsigned custom ranges;
/// - s = max(s, eps).
/// `qscheme` must be per-tensor. Throws Error when min or max is NaN or
/// infinite, min > max, or eps is not finite and > 0.
QParams calculate_qparams(float min_val, float max_val, QScheme qscheme, QDtype qdtype,
                          float eps = default_eps);

/// The per-channel form: one pair per (min_vals[c], max_vals[c]); `qscheme`
/// must be per-channel and the two spans of equal length.
QParams calculate_qparams(std::span<const float> min_vals, std::span<const float> max_vals,
                          QScheme qscheme, QDtype qdtype, int ch_axis = 0, float eps = default_eps);

/// Observed ranges of a tensor at some granularity. Non-finite elements are
/// skipped and counted; a slot that saw no finite value has min = max = 0, and
/// a zero bound is always +0 (independent of tier and thread count).
/// The arrays are ParamArrays, as QParams' are (param_array.hpp).
struct RangeStats {
  ParamArray<float> min;
  ParamArray<float> max;
  std::int64_t nonfinite_count = 0;
};

/// Min / max of `x` (float32, float16 or bfloat16) for the granularity that
/// (qscheme, ch_axis, group_size) describe, with slots laid out as
/// QParams::param_shape() says.
RangeStats observe_range(const TensorView& x, QScheme qscheme, int ch_axis = 0,
                         std::int64_t group_size = 0);

/// The largest |x| over the finite elements of x per slot (0 for a slot with
/// none), laid out like observe_range(); what a symmetric scheme's scale needs.
struct AbsMaxStats {
  ParamArray<float> abs_max;
  std::int64_t nonfinite_count = 0;
};
AbsMaxStats observe_abs_max(const TensorView& x, QScheme qscheme, int ch_axis = 0,
                            std::int64_t group_size = 0);

/// observe_range() then calculate_qparams(): the qparams a MinMax observer
/// would pick after seeing `x` once.
QParams choose_qparams(const TensorView& x, QScheme qscheme, QDtype qdtype, int ch_axis = 0,
                       std::int64_t group_size = 0, float eps = default_eps);

/// "per_channel_symmetric qint8 ch_axis=0" (plus " group_size=G" when grouped), for messages.
std::string describe(const QParams& qparams);

}  // namespace lucid::quantization
