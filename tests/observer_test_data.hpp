// Shared data for the observer tests: seeded batches of the distributions calibration meets.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization::testing {

enum class Distribution { normal, uniform, relu, laplace, student_t3 };

/// `n` float32 values of `kind` scaled by `scale`, drawn from `rng`.
inline std::vector<float> sample(std::mt19937_64& rng, Distribution kind, std::size_t n,
                                 double scale = 1.0) {
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(-0.3, 1.0);
  std::exponential_distribution<double> exponential;
  std::student_t_distribution<double> student(3.0);
  std::vector<float> out(n);
  for (float& v : out) {
    double x = 0;
    switch (kind) {
      case Distribution::normal:
        x = normal(rng);
        break;
      case Distribution::uniform:
        x = uniform(rng);
        break;
      case Distribution::relu:
        x = std::max(0.0, normal(rng));
        break;
      case Distribution::laplace:
        x = exponential(rng) - exponential(rng);
        break;
      case Distribution::student_t3:
        x = student(rng);
        break;
    }
    v = static_cast<float>(x * scale);
  }
  return out;
}

/// A 1-D float32 view of `values`.
inline TensorView view_of(const std::vector<float>& values) {
  return TensorView(values.data(), ScalarType::float32, {static_cast<std::int64_t>(values.size())});
}

}  // namespace lucid::quantization::testing
