// QParams construction and validation, and calculate_qparams (the formulas of Lucid's
// lucid.quantization and PyTorch).
#include "lucid/quantization/qparams.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>

#include "core/qparams_formula.hpp"
#include "kernels/qparams_spec.hpp"
#include "lucid/quantization/error.hpp"
#include "support/param_layout.hpp"

namespace lucid::quantization {
namespace {

std::string float_text(double value) {
  std::ostringstream out;
  out.precision(9);
  out << value;
  return out.str();
}

void check_min_max(float min_val, float max_val, const std::string& where) {
  if (!std::isfinite(min_val)) {
    throw Error(where + ": min = " + float_text(min_val) + " (expected a finite value)");
  }
  if (!std::isfinite(max_val)) {
    throw Error(where + ": max = " + float_text(max_val) + " (expected a finite value)");
  }
  if (min_val > max_val) {
    throw Error(where + ": min = " + float_text(min_val) +
                " is greater than max = " + float_text(max_val) + " (expected min <= max)");
  }
}

void check_eps(float eps) {
  if (!(std::isfinite(eps) && eps > 0.0f)) {
    throw Error("calculate_qparams: eps = " + float_text(eps) + " (expected a finite value > 0)");
  }
}

// The per-entry checks of validate() in one branch-free pass that the compiler vectorises (a
// per-group QParams of a large tensor has millions of entries); validate() then looks for the
// entry to name only when this fails.
bool entries_valid(const QParams& q) {
  const auto quant_min = static_cast<std::int32_t>(q.qdtype.quant_min());
  const auto quant_max = static_cast<std::int32_t>(q.qdtype.quant_max());
  const int symmetric = is_symmetric(q.qscheme) ? 1 : 0;
  const auto pinned = static_cast<std::int32_t>(q.qdtype.symmetric_zero_point());
  const float largest = std::numeric_limits<float>::max();
  const float* scales = q.scale.data();
  const std::int32_t* zero_points = q.zero_point.data();
  int bad = 0;
  for (std::size_t i = 0; i < q.scale.size(); ++i) {
    const float s = scales[i];
    const std::int32_t z = zero_points[i];
    bad |= !(s > 0.0f) | !(s <= largest) | (z < quant_min) | (z > quant_max) |
           (symmetric & (z != pinned));
  }
  return bad == 0;
}

}  // namespace

namespace detail {

kernels::RangeRule range_rule(QScheme qscheme, const QDtype& qdtype, float eps) {
  return {is_symmetric(qscheme), static_cast<std::int32_t>(qdtype.quant_min()),
          static_cast<std::int32_t>(qdtype.quant_max()),
          static_cast<std::int32_t>(qdtype.symmetric_zero_point()), eps};
}

std::pair<float, std::int32_t> qparams_for_range(float min_val, float max_val, QScheme qscheme,
                                                 const QDtype& qdtype, float eps) {
  return kernels::qparams_of_range(min_val, max_val, range_rule(qscheme, qdtype, eps));
}

}  // namespace detail

QParams QParams::per_tensor(float scale, std::int32_t zero_point, QDtype qdtype, QScheme qscheme) {
  QParams q;
  q.qscheme = qscheme;
  q.qdtype = qdtype;
  q.scale = {scale};
  q.zero_point = {zero_point};
  if (is_per_channel(qscheme)) {
    throw Error("QParams::per_tensor: qscheme = " + to_string(qscheme) +
                " (expected per_tensor_affine or per_tensor_symmetric)");
  }
  q.validate();
  return q;
}

QParams QParams::per_channel(std::vector<float> scale, std::vector<std::int32_t> zero_point,
                             int ch_axis, QDtype qdtype, QScheme qscheme) {
  if (!is_per_channel(qscheme)) {
    throw Error("QParams: qscheme = " + to_string(qscheme) +
                " with per-channel parameters (expected per_channel_affine or "
                "per_channel_symmetric)");
  }
  QParams q;
  q.qscheme = qscheme;
  q.qdtype = qdtype;
  q.scale.assign(scale.begin(), scale.end());
  q.zero_point.assign(zero_point.begin(), zero_point.end());
  q.ch_axis = ch_axis;
  q.validate();
  return q;
}

QParams QParams::per_group(std::vector<float> scale, std::vector<std::int32_t> zero_point,
                           int ch_axis, std::int64_t group_size, QDtype qdtype, QScheme qscheme) {
  if (group_size <= 0) {
    throw Error("QParams::per_group: group_size = " + std::to_string(group_size) +
                " (expected > 0; use per_channel for one pair per channel)");
  }
  QParams q = per_channel(std::move(scale), std::move(zero_point), ch_axis, qdtype, qscheme);
  q.group_size = group_size;
  return q;
}

Shape QParams::param_shape(const Shape& input_shape) const {
  if (!is_per_channel(qscheme)) return {};
  const auto axis =
      static_cast<std::size_t>(normalize_axis(ch_axis, input_shape.size(), "ch_axis"));
  if (group_size == 0) return {input_shape[axis]};
  Shape shape = input_shape;
  shape[axis] = (shape[axis] + group_size - 1) / group_size;
  return shape;
}

namespace {

// The checks of validate() that do not read the entries: lengths, scheme and group_size.
void check_structure(const QParams& q) {
  if (q.scale.size() != q.zero_point.size()) {
    throw Error("QParams: scale has " + std::to_string(q.scale.size()) +
                " entries but zero_point has " + std::to_string(q.zero_point.size()) +
                " (expected equal lengths)");
  }
  if (!is_per_channel(q.qscheme) && q.scale.size() != 1) {
    throw Error("QParams: " + to_string(q.qscheme) + " has " + std::to_string(q.scale.size()) +
                " scales (expected exactly 1)");
  }
  if (q.group_size < 0 || (q.group_size > 0 && !is_per_channel(q.qscheme))) {
    throw Error("QParams: group_size = " + std::to_string(q.group_size) + " with " +
                to_string(q.qscheme) +
                " (expected 0, or > 0 together with a per-channel scheme for per-group)");
  }
}

// The per-entry checks of validate(), naming the first bad entry.
void check_entries(const QParams& q) {
  if (entries_valid(q)) return;
  for (std::size_t i = 0; i < q.scale.size(); ++i) {
    if (!(std::isfinite(q.scale[i]) && q.scale[i] > 0.0f)) {
      throw Error("QParams: scale[" + std::to_string(i) + "] = " + float_text(q.scale[i]) +
                  " (expected a finite value > 0)");
    }
    const std::int64_t z = q.zero_point[i];
    if (z < q.qdtype.quant_min() || z > q.qdtype.quant_max()) {
      throw Error("QParams: zero_point[" + std::to_string(i) + "] = " + std::to_string(z) +
                  " is outside " + q.qdtype.name() + " (expected " +
                  std::to_string(q.qdtype.quant_min()) +
                  " <= zero_point <= " + std::to_string(q.qdtype.quant_max()) + ")");
    }
    if (is_symmetric(q.qscheme) && z != q.qdtype.symmetric_zero_point()) {
      throw Error("QParams: zero_point[" + std::to_string(i) + "] = " + std::to_string(z) +
                  " with " + to_string(q.qscheme) + " on " + q.qdtype.name() + " (expected " +
                  std::to_string(q.qdtype.symmetric_zero_point()) + ", the pinned zero point)");
    }
  }
}

// The fit of validate_for(): the parameter count param_shape() implies (a per-tensor scheme's
// one pair needs no shape).
void check_fit(const QParams& q, const Shape& input_shape) {
  if (!is_per_channel(q.qscheme)) return;
  const Shape expected_shape = q.param_shape(input_shape);
  const std::int64_t expected = shape_numel(expected_shape);
  if (static_cast<std::int64_t>(q.scale.size()) != expected) {
    throw Error("QParams: " + std::to_string(q.scale.size()) + " scales for input shape " +
                to_string(input_shape) + " with " + describe(q) + " (expected " +
                std::to_string(expected) + ", parameter shape " + to_string(expected_shape) + ")");
  }
}

}  // namespace

void QParams::validate() const {
  check_structure(*this);
  check_entries(*this);
}

void QParams::validate_for(const Shape& input_shape) const {
  validate();
  check_fit(*this, input_shape);
}

void detail::validate_layout_for(const QParams& qparams, const Shape& input_shape) {
  check_structure(qparams);
  check_fit(qparams, input_shape);
}

QParams calculate_qparams(float min_val, float max_val, QScheme qscheme, QDtype qdtype, float eps) {
  if (is_per_channel(qscheme)) {
    throw Error("calculate_qparams: qscheme = " + to_string(qscheme) +
                " with a scalar min / max (expected per-channel min / max vectors)");
  }
  check_eps(eps);
  check_min_max(min_val, max_val, "calculate_qparams");
  const auto [scale, zero_point] =
      detail::qparams_for_range(min_val, max_val, qscheme, qdtype, eps);
  QParams q;
  q.qscheme = qscheme;
  q.qdtype = qdtype;
  q.scale = {scale};
  q.zero_point = {zero_point};
  return q;
}

QParams calculate_qparams(std::span<const float> min_vals, std::span<const float> max_vals,
                          QScheme qscheme, QDtype qdtype, int ch_axis, float eps) {
  if (!is_per_channel(qscheme)) {
    throw Error("calculate_qparams: qscheme = " + to_string(qscheme) +
                " with per-channel min / max vectors (expected a per-channel scheme)");
  }
  if (min_vals.size() != max_vals.size()) {
    throw Error("calculate_qparams: min has " + std::to_string(min_vals.size()) +
                " channels but max has " + std::to_string(max_vals.size()) +
                " (expected equal lengths)");
  }
  check_eps(eps);
  QParams q;
  q.qscheme = qscheme;
  q.qdtype = qdtype;
  q.ch_axis = ch_axis;
  q.scale.resize(min_vals.size());
  q.zero_point.resize(min_vals.size());
  for (std::size_t c = 0; c < min_vals.size(); ++c) {
    const bool valid = std::isfinite(min_vals[c]) && std::isfinite(max_vals[c]) &&
                       min_vals[c] <= max_vals[c];  // builds the message only when needed
    if (!valid) {
      check_min_max(min_vals[c], max_vals[c], "calculate_qparams: channel " + std::to_string(c));
    }
    std::tie(q.scale[c], q.zero_point[c]) =
        detail::qparams_for_range(min_vals[c], max_vals[c], qscheme, qdtype, eps);
  }
  return q;
}

std::string describe(const QParams& qparams) {
  std::string text = to_string(qparams.qscheme) + " " + qparams.qdtype.name();
  if (is_per_channel(qparams.qscheme)) {
    text += " ch_axis=" + std::to_string(qparams.ch_axis);
    if (qparams.group_size > 0) text += " group_size=" + std::to_string(qparams.group_size);
  }
  return text;
}

}  // namespace lucid::quantization
