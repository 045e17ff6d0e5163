// MseObserver: the clipping range whose qparams minimise the quantization MSE of the histogram.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/observer_calibrators.hpp"
#include "observers/dyadic_histogram.hpp"
#include "observers/state.hpp"

namespace lucid::quantization {
namespace {

constexpr int kCoarseSteps = 128;  // candidates per 1-D sweep
constexpr int kFineSteps = 32;     // refinement between the neighbours of the best

// Squared error of fake-quantizing x, integrated over intervals, for one (scale, zero point).
struct Quantizer {
  double s;
  double low_level;   // s * (qmin - z): where everything below saturates
  double high_level;  // s * (qmax - z)

  // Integral of (x - c)^2 over [a, b].
  static double around(double a, double b, double c) {
    const double hi = b - c;
    const double lo = a - c;
    return (hi * hi * hi - lo * lo * lo) / 3.0;
  }
  // Integral of the rounding sawtooth (x - s * round(x / s))^2 from 0 to x.
  double sawtooth(double x) const {
    const double u = x / s + 0.5;
    const double n = std::floor(u);
    const double f = u - n - 0.5;
    return s * s * s * (n / 12.0 + (f * f * f + 0.125) / 3.0);
  }
  // Integral of (x - fake_quantize(x))^2 over [a, b], a <= b.
  double error(double a, double b) const {
    const double low_edge = low_level + s / 2;    // below: saturates to low_level
    const double high_edge = high_level - s / 2;  // above: saturates to high_level
    double e = 0.0;
    if (a < low_edge) e += around(a, std::min(b, low_edge), low_level);
    if (b > high_edge) e += around(std::max(a, high_edge), b, high_level);
    const double mid_lo = std::max(a, low_edge);
    const double mid_hi = std::min(b, high_edge);
    if (mid_hi > mid_lo) e += sawtooth(mid_hi) - sawtooth(mid_lo);
    return e;
  }
  // (x - fake_quantize(x))^2 at one point.
  double point(double x) const {
    const double q = std::clamp(s * std::nearbyint(x / s), low_level, high_level);
    return (x - q) * (x - q);
  }
};

// Expected squared error of the histogram (counts uniform over each bin cut to [data_min,
// data_max]) under the qparams that calculate_qparams gives for [lo, hi].
double histogram_mse(const detail::DyadicHistogram::Occupied& h, float data_min, float data_max,
                     float lo, float hi, QScheme scheme, const QDtype& qdtype, float eps) {
  const QParams qp = calculate_qparams(lo, hi, scheme, qdtype, eps);
  const double s = qp.scale[0];
  const double z = qp.zero_point[0];
  const Quantizer quantizer{s, s * (static_cast<double>(qdtype.quant_min()) - z),
                            s * (static_cast<double>(qdtype.quant_max()) - z)};
  double total = 0.0;
  for (std::size_t j = 0; j < h.counts.size(); ++j) {
    if (h.counts[j] == 0) continue;
    const double a = std::max<double>(data_min, h.lo + static_cast<double>(j) * h.width);
    const double b = std::min<double>(data_max, h.lo + static_cast<double>(j + 1) * h.width);
    const auto c = static_cast<double>(h.counts[j]);
    total += b > a ? c * quantizer.error(a, b) / (b - a) : c * quantizer.point(a);
  }
  return total;
}

QScheme per_tensor(QScheme scheme) {
  return is_symmetric(scheme) ? QScheme::PER_TENSOR_SYMMETRIC : QScheme::PER_TENSOR_AFFINE;
}

// The t in (0, 1] minimising cost(t): a sweep of kCoarseSteps, then kFineSteps around the best.
template <class Cost>
double search_fraction(Cost&& cost) {
  double best_t = 1.0;
  double best = cost(1.0);
  for (int j = 1; j < kCoarseSteps; ++j) {
    const double t = static_cast<double>(j) / kCoarseSteps;
    const double e = cost(t);
    if (e < best) best = e, best_t = t;
  }
  const double step = 1.0 / kCoarseSteps;
  const double from = std::max(step / kFineSteps, best_t - step);
  const double to = std::min(1.0, best_t + step);
  for (int j = 0; j <= 2 * kFineSteps; ++j) {
    const double t = from + (to - from) * j / (2 * kFineSteps);
    const double e = cost(t);
    if (e < best) best = e, best_t = t;
  }
  return best_t;
}

}  // namespace

MseObserver::MseObserver(const QuantGrid& grid, const Options& options)
    : CalibratorWithOptions("MseObserver", grid, options.ch_axis, false, options) {}

ClipRange MseObserver::clipping_range() const {
  require_data("clipping_range");
  const QScheme scheme = per_tensor(qscheme());
  ClipRange range;
  for (std::size_t c = 0; c < histograms().size(); ++c) {
    const detail::DyadicHistogram& h = histograms()[c];
    float lo = 0.0f;
    float hi = 0.0f;
    if (!h.empty()) {
      const auto occupied = h.occupied();
      const float data_min = min_val()[c];
      const float data_max = max_val()[c];
      lo = data_min;
      hi = data_max;
      if (occupied.width > 0.0) {
        auto mse = [&](float a, float b) {
          return histogram_mse(occupied, data_min, data_max, a, b, scheme, qdtype(), grid().eps);
        };
        const double lo0 = std::min(data_min, 0.0f);
        const double hi0 = std::max(data_max, 0.0f);
        if (is_symmetric(scheme)) {
          const double amax = std::max(-lo0, hi0);
          const auto a = static_cast<float>(amax * search_fraction([&](double t) {
                                              return mse(static_cast<float>(-amax * t),
                                                         static_cast<float>(amax * t));
                                            }));
          lo = -a;
          hi = a;
        } else {
          const double t = search_fraction([&](double u) {
            return mse(static_cast<float>(lo0 * u), static_cast<float>(hi0 * u));
          });
          lo = static_cast<float>(lo0 * t);
          hi = static_cast<float>(hi0 * t);
          for (int round = 0; round < 2; ++round) {  // refine each end with the other fixed
            if (lo0 < 0.0) {
              lo = static_cast<float>(lo0 * search_fraction([&](double u) {
                                        return mse(static_cast<float>(lo0 * u), hi);
                                      }));
            }
            if (hi0 > 0.0) {
              hi = static_cast<float>(hi0 * search_fraction([&](double u) {
                                        return mse(lo, static_cast<float>(hi0 * u));
                                      }));
            }
          }
        }
      }
    }
    range.min.push_back(lo);
    range.max.push_back(hi);
  }
  return range;
}

}  // namespace lucid::quantization
