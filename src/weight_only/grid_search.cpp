// The error-minimizing grid of one weight-only group: candidate scales around the signed-extreme
// rule (symmetric) or the min/max range (affine), each refitted by least squares.
#include "weight_only/grid_search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/affine_spec.hpp"
#include "lucid/quantization/qparams.hpp"

namespace lucid::quantization::weight_only {
namespace {

// Candidates on either side of the base grid: the base divisor times 1 + relative_step(bits) · i
// for i in [−steps, steps] (int4: 7 .. 9 around ggml's 8; int8: 124.8 .. 131.2 around 128, where
// clipping pays less). Measured (bench/bench_weight_only.cpp): twice finer steps gain < 1 %.
constexpr int steps = 5;
constexpr double relative_step(int bits) {
  return bits == 4 ? 0.025 : 0.005;
}

// clamp(nearbyint(x · inverse) + zero, lo, hi): the product clamped first (one step past the
// grid changes nothing), so the two-addition rounding is exact for any finite x.
inline double code_of(double x, double inverse, std::int32_t zero, std::int32_t lo,
                      std::int32_t hi) {
  const double t = std::clamp(x * inverse, lo - zero - 1.0, hi - zero + 1.0);
  return std::clamp(kernels::round_half_even(t) + zero, 1.0 * lo, 1.0 * hi);
}

// The best grid seen so far.
struct Best {
  double error = std::numeric_limits<double>::infinity();
  GroupParams params{std::numeric_limits<float>::infinity(), 0};
};

// Σ (x − s · (q − z))² for the codes rounded to the stored scale; keeps the grid when it is the
// best so far (the first of equals wins). Non-finite stored scales are skipped.
void evaluate(const float* x, std::int64_t n, double scale, std::int32_t zero, std::int32_t lo,
              std::int32_t hi, ScaleRounding round_scale, Best& best) {
  float s = round_scale(static_cast<float>(scale));
  if (!std::isfinite(s)) return;
  if (std::abs(s) < default_eps) s = std::copysign(default_eps, s);
  const double inverse = 1.0 / s;
  double error = 0;
  for (std::int64_t t = 0; t < n; ++t) {
    const double d = x[t] - static_cast<double>(s) * (code_of(x[t], inverse, zero, lo, hi) - zero);
    error += d * d;
  }
  if (error < best.error) {
    best.error = error;
    best.params = GroupParams{s, zero};
  }
}

// The least-squares scale Σ x q / Σ q² of the codes of x on the grid of scale s (symmetric).
double refit_symmetric(const float* x, std::int64_t n, double s, std::int32_t lo, std::int32_t hi) {
  const double inverse = 1.0 / s;
  double xq = 0, qq = 0;
  for (std::int64_t t = 0; t < n; ++t) {
    const double q = code_of(x[t], inverse, 0, lo, hi);
    xq += x[t] * q;
    qq += q * q;
  }
  return qq > 0 ? xq / qq : s;
}

void search_symmetric(const float* x, std::int64_t n, int bits, ScaleRounding round_scale,
                      Best& best) {
  const std::int32_t lo = -(std::int32_t{1} << (bits - 1));
  const std::int32_t hi = -lo - 1;
  float extreme = 0;  // the signed element of largest magnitude (the first of equals)
  for (std::int64_t t = 0; t < n; ++t) {
    if (std::abs(x[t]) > std::abs(extreme)) extreme = x[t];
  }
  if (extreme == 0) return;
  for (int i = -steps; i <= steps; ++i) {
    const double s = extreme / (lo * (1.0 + relative_step(bits) * i));  // i = 0: ggml's d = e / −8
    evaluate(x, n, s, 0, lo, hi, round_scale, best);
    evaluate(x, n, refit_symmetric(x, n, s, lo, hi), 0, lo, hi, round_scale, best);
  }
}

void search_affine(const float* x, std::int64_t n, int bits, ScaleRounding round_scale,
                   Best& best) {
  const std::int32_t top = (std::int32_t{1} << bits) - 1;
  double lo = 0, hi = 0;  // the range widened to 0: the zero point lies on the grid
  for (std::int64_t t = 0; t < n; ++t) {
    lo = std::min(lo, static_cast<double>(x[t]));
    hi = std::max(hi, static_cast<double>(x[t]));
  }
  if (hi == lo) return;
  for (int i = -steps; i <= steps; ++i) {
    const double s = (hi - lo) / (top * (1.0 + relative_step(bits) * i));
    const auto z = static_cast<std::int32_t>(code_of(-lo, 1.0 / s, 0, 0, top));
    evaluate(x, n, s, z, 0, top, round_scale, best);
    // Least squares of x ≈ a · q + b over the codes of this grid, then z' = −b / a rounded.
    const double inverse = 1.0 / s;
    double sq = 0, sqq = 0, sx = 0, sxq = 0;
    for (std::int64_t t = 0; t < n; ++t) {
      const double q = code_of(x[t], inverse, z, 0, top);
      sq += q;
      sqq += q * q;
      sx += x[t];
      sxq += x[t] * q;
    }
    const double det = static_cast<double>(n) * sqq - sq * sq;
    if (det <= 0) continue;
    const double a = (static_cast<double>(n) * sxq - sq * sx) / det;
    const double b = (sx - a * sq) / static_cast<double>(n);
    if (!(a > 0)) continue;
    evaluate(x, n, a, static_cast<std::int32_t>(code_of(-b, 1.0 / a, 0, 0, top)), 0, top,
             round_scale, best);
  }
}

}  // namespace

GroupParams search_group(const float* x, std::int64_t n, int bits, bool symmetric,
                         ScaleRounding round_scale, std::int32_t* q) {
  Best best;
  if (symmetric) {
    search_symmetric(x, n, bits, round_scale, best);
  } else {
    search_affine(x, n, bits, round_scale, best);
  }
  if (best.error == std::numeric_limits<double>::infinity()) {
    const bool all_zero = std::all_of(x, x + n, [](float v) { return v == 0.0f; });
    // An all-zero group; otherwise every candidate's stored scale overflowed (the caller reports).
    if (!all_zero) return best.params;
    best.params = GroupParams{default_eps, 0};
  }
  const double inverse = 1.0 / static_cast<double>(best.params.scale);
  const std::int32_t lo = symmetric ? -(std::int32_t{1} << (bits - 1)) : 0;
  const std::int32_t hi = symmetric ? -lo - 1 : (std::int32_t{1} << bits) - 1;
  for (std::int64_t t = 0; t < n; ++t)
    q[t] = static_cast<std::int32_t>(code_of(x[t], inverse, best.params.zero_point, lo, hi));
  return best.params;
}

}  // namespace lucid::quantization::weight_only
