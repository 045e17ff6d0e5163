// WeightGrid checks, RTN on the grid, and the output-error proxy tr(ΔW H ΔWᵀ).
#include "lucid/quantization/weight_grid.hpp"

#include <string>

#include "algorithms/weight_matrix.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/quantize.hpp"

namespace lucid::quantization {

void WeightGrid::validate() const {
  if (group_size < 0) {
    throw Error("weight grid: group_size is " + std::to_string(group_size) +
                "; expected 0 (per output channel) or a positive group length");
  }
}

std::int64_t WeightGrid::groups(std::int64_t features) const {
  return group_size == 0 ? 1 : (features + group_size - 1) / group_size;
}

QParams WeightGrid::make_qparams(std::vector<float> scale,
                                 std::vector<std::int32_t> zero_point) const {
  if (group_size == 0) {
    return QParams::per_channel(std::move(scale), std::move(zero_point), 0, qdtype, qscheme());
  }
  return QParams::per_group(std::move(scale), std::move(zero_point), 1, group_size, qdtype,
                            qscheme());
}

QuantizedTensor quantize_rtn(const TensorView& weight, const WeightGrid& grid) {
  grid.validate();
  const auto w = detail::read_weight(weight, "quantize_rtn weight");
  const TensorView view(w.values, Shape{w.rows, w.cols});
  if (grid.group_size == 0) return quantize(view, grid.qscheme(), grid.qdtype, 0);
  return quantize_per_group(view, grid.qscheme(), grid.qdtype, 1, grid.group_size);
}

double output_error_proxy(const TensorView& weight, const TensorView& reconstructed,
                          std::span<const double> hessian) {
  const auto w = detail::read_weight(weight, "output_error_proxy weight");
  const auto r = detail::read_weight(reconstructed, "output_error_proxy reconstructed");
  if (w.rows != r.rows || w.cols != r.cols) {
    throw Error("output_error_proxy: reconstructed is [" + std::to_string(r.rows) + ", " +
                std::to_string(r.cols) + "], expected the weight's shape [" +
                std::to_string(w.rows) + ", " + std::to_string(w.cols) + "]");
  }
  detail::check_hessian(hessian, w.cols, "output_error_proxy hessian");
  std::vector<double> delta(w.values.size());
  for (std::size_t i = 0; i < delta.size(); ++i) {
    delta[i] = static_cast<double>(w.values[i]) - static_cast<double>(r.values[i]);
  }
  return detail::trace_quadratic(delta, w.rows, w.cols, hessian);
}

}  // namespace lucid::quantization
