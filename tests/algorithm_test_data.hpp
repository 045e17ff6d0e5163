// Shared synthetic data for the weight-algorithm tests: a Linear layer and correlated or
// independent inputs.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "lucid/quantization/hessian.hpp"
#include "lucid/quantization/quantize.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization::testing {

/// Gaussian values [rows, cols] with standard deviation `sigma`.
inline std::vector<float> gaussian(std::mt19937_64& rng, std::int64_t rows, std::int64_t cols,
                                   float sigma = 1.0f) {
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  for (float& v : out)
    v = normal(rng);
  return out;
}

/// Activation rows [T, K]: AR(1) across features with coefficient `rho`
/// (rho = 0: independent), unit variance, and `outliers` channels scaled ×10
/// (the §7.4 recipe of the algorithms reference).
inline std::vector<float> activations(std::mt19937_64& rng, std::int64_t t, std::int64_t k,
                                      double rho, int outliers = 8) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<float> x(static_cast<std::size_t>(t * k));
  const double innovation = std::sqrt(1 - rho * rho);
  for (std::int64_t r = 0; r < t; ++r) {
    double prev = normal(rng);
    for (std::int64_t j = 0; j < k; ++j) {
      const double v = j == 0 ? prev : rho * prev + innovation * normal(rng);
      prev = v;
      x[r * k + j] = static_cast<float>(v);
    }
  }
  for (int o = 0; o < outliers; ++o) {
    const std::int64_t j = (o * 61 + 7) % k;
    for (std::int64_t r = 0; r < t; ++r)
      x[r * k + j] *= 10.0f;
  }
  return x;
}

/// H = Σ x xᵀ of rows [T, K].
inline std::vector<double> hessian_of(const std::vector<float>& x, std::int64_t k) {
  HessianAccumulator acc(k);
  acc.add_rows(TensorView(x, Shape{static_cast<std::int64_t>(x.size()) / k, k}));
  return acc.sum();
}

/// ‖(W − Ŵ) Xᵀ‖² / ‖W Xᵀ‖² through H = XᵀX.
inline double relative_output_error(const std::vector<float>& w, const Tensor& reconstructed,
                                    std::int64_t k, const std::vector<double>& h) {
  const std::int64_t n = static_cast<std::int64_t>(w.size()) / k;
  const float* r = reconstructed.data_as<float>();
  double err = 0;
  double ref = 0;
  std::vector<double> dh(static_cast<std::size_t>(k));
  std::vector<double> wh(static_cast<std::size_t>(k));
  for (std::int64_t row = 0; row < n; ++row) {
    std::fill(dh.begin(), dh.end(), 0.0);
    std::fill(wh.begin(), wh.end(), 0.0);
    for (std::int64_t a = 0; a < k; ++a) {
      const double d = static_cast<double>(w[row * k + a]) - r[row * k + a];
      const double v = w[row * k + a];
      for (std::int64_t b = 0; b < k; ++b) {
        dh[b] += d * h[a * k + b];
        wh[b] += v * h[a * k + b];
      }
    }
    for (std::int64_t b = 0; b < k; ++b) {
      err += dh[b] * (static_cast<double>(w[row * k + b]) - r[row * k + b]);
      ref += wh[b] * w[row * k + b];
    }
  }
  return err / ref;
}

}  // namespace lucid::quantization::testing
