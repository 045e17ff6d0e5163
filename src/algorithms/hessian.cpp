// HessianAccumulator: H = Σ x xᵀ in float64 through OpenBLAS dsyrk.
#include "lucid/quantization/hessian.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "algorithms/weight_matrix.hpp"
#include "lucid/quantization/error.hpp"

namespace lucid::quantization {
namespace {

// The rows of x as float64 [T, K], after checking the shape and finiteness.
std::vector<double> read_rows(const TensorView& x, std::int64_t features, const char* what) {
  if (x.shape.empty() || x.shape.back() != features) {
    throw Error(
        std::string(what) + ": the last dimension is " +
        (x.shape.empty() ? std::string("missing (a scalar)") : std::to_string(x.shape.back())) +
        "; expected the layer's " + std::to_string(features) + " input features");
  }
  const auto values = to_float32(x, what);
  std::vector<double> rows(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw Error(std::string(what) + ": calibration element " + std::to_string(i) + " is " +
                  std::to_string(values[i]) + "; expected finite activations");
    }
    rows[i] = values[i];
  }
  return rows;
}

}  // namespace

HessianAccumulator::HessianAccumulator(std::int64_t features) : features_(features) {
  if (features < 1) {
    throw Error("HessianAccumulator: features is " + std::to_string(features) + "; expected >= 1");
  }
  upper_.assign(static_cast<std::size_t>(features * features), 0.0);
}

HessianAccumulator::HessianAccumulator(std::int64_t features, std::vector<double> sum,
                                       std::int64_t rows)
    : HessianAccumulator(features) {
  detail::check_hessian(sum, features, "HessianAccumulator sum");
  if (rows < 0) {
    throw Error("HessianAccumulator: rows is " + std::to_string(rows) + "; expected >= 0");
  }
  upper_ = std::move(sum);
  rows_ = rows;
}

void HessianAccumulator::add_rows(const TensorView& x) {
  const auto rows = read_rows(x, features_, "HessianAccumulator.add_rows");
  const auto t = static_cast<std::int64_t>(rows.size()) / features_;
  if (t == 0) return;
  const auto k = static_cast<int>(features_);
  // H (upper) += Xᵀ X with X [T, K] row-major.
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, k, static_cast<int>(t), 1.0, rows.data(), k,
              1.0, upper_.data(), k);
  rows_ += t;
}

void HessianAccumulator::merge(const HessianAccumulator& other) {
  if (other.features_ != features_) {
    throw Error("HessianAccumulator.merge: the other accumulator has " +
                std::to_string(other.features_) + " features, expected " +
                std::to_string(features_));
  }
  for (std::size_t i = 0; i < upper_.size(); ++i)
    upper_[i] += other.upper_[i];
  rows_ += other.rows_;
}

std::vector<double> HessianAccumulator::sum() const {
  std::vector<double> full(upper_);
  const auto k = static_cast<std::size_t>(features_);
  for (std::size_t i = 0; i < k; ++i) {
    for (std::size_t j = i + 1; j < k; ++j)
      full[j * k + i] = full[i * k + j];
  }
  return full;
}

std::vector<double> HessianAccumulator::second_moments() const {
  const auto k = static_cast<std::size_t>(features_);
  std::vector<double> out(k, 0.0);
  if (rows_ == 0) return out;
  for (std::size_t j = 0; j < k; ++j)
    out[j] = upper_[j * k + j] / static_cast<double>(rows_);
  return out;
}

}  // namespace lucid::quantization
