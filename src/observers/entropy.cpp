// EntropyObserver: TensorRT's KL-divergence threshold search on the histogram of |x|.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/observer_calibrators.hpp"
#include "observers/dyadic_histogram.hpp"
#include "observers/state.hpp"

namespace lucid::quantization {
namespace {

// Replaces zeros by eps and takes their mass from the non-zeros (MXNet's _smooth_distribution),
// so that the divergence stays finite. False when every entry is zero.
bool smooth(std::vector<double>& p) {
  constexpr double eps = 1e-4;
  std::size_t zeros = 0;
  for (const double v : p)
    zeros += v == 0.0 ? 1 : 0;
  if (zeros == p.size()) return false;
  const double take = eps * static_cast<double>(zeros) / static_cast<double>(p.size() - zeros);
  for (double& v : p)
    v += v == 0.0 ? eps : -take;
  return true;
}

// KL(p || q) of two unnormalised distributions (scipy.stats.entropy).
double kl_divergence(const std::vector<double>& p, const std::vector<double>& q) {
  double p_total = 0.0;
  double q_total = 0.0;
  for (std::size_t j = 0; j < p.size(); ++j) {
    p_total += p[j];
    q_total += q[j];
  }
  double kl = 0.0;
  for (std::size_t j = 0; j < p.size(); ++j) {
    const double pj = p[j] / p_total;
    if (pj > 0.0) kl += pj * std::log(pj / (q[j] / q_total));
  }
  return kl;
}

// The number of bins T (a threshold at T bin widths) minimising KL(P || Q), where P is the
// histogram cut at T with the tail added to its last bin and Q is that histogram quantized
// to `levels` bins and expanded back over P's non-zero bins (TensorRT / MXNet).
std::size_t best_threshold_bins(std::span<const std::int64_t> hist, std::size_t levels) {
  const std::size_t bins = hist.size();
  if (bins <= levels) return bins;
  std::vector<double> suffix(bins + 1, 0.0);  // suffix[i] = sum of hist[i:]
  for (std::size_t j = bins; j-- > 0;)
    suffix[j] = suffix[j + 1] + static_cast<double>(hist[j]);
  std::size_t best = bins;
  double best_kl = std::numeric_limits<double>::infinity();
  std::vector<double> p;
  std::vector<double> q;
  for (std::size_t i = levels; i <= bins; ++i) {
    p.assign(hist.begin(), hist.begin() + static_cast<std::ptrdiff_t>(i));
    p[i - 1] += suffix[i];
    q.assign(i, 0.0);
    const std::size_t merged = i / levels;
    for (std::size_t g = 0; g < levels; ++g) {
      const std::size_t start = g * merged;
      const std::size_t stop = g + 1 == levels ? i : start + merged;
      double sum = 0.0;
      std::size_t nonzero = 0;
      for (std::size_t j = start; j < stop; ++j) {
        sum += static_cast<double>(hist[j]);
        nonzero += p[j] != 0.0 ? 1 : 0;
      }
      if (nonzero == 0) continue;
      for (std::size_t j = start; j < stop; ++j)
        q[j] = p[j] != 0.0 ? sum / static_cast<double>(nonzero) : 0.0;
    }
    if (!smooth(p) || !smooth(q)) continue;
    const double kl = kl_divergence(p, q);
    if (kl < best_kl) {
      best_kl = kl;
      best = i;
    }
  }
  return best;
}

}  // namespace

EntropyObserver::EntropyObserver(const QuantGrid& grid, const Options& options)
    : CalibratorWithOptions("EntropyObserver", grid, 0, /*absolute=*/true, options) {
  if (is_per_channel(grid.qscheme)) {
    throw Error("EntropyObserver: qscheme = " + to_string(grid.qscheme) +
                " (expected per_tensor_affine or per_tensor_symmetric: the KL search needs a "
                "well-filled histogram, which per-channel weights rarely give)");
  }
}

ClipRange EntropyObserver::clipping_range() const {
  require_data("clipping_range");
  const detail::DyadicHistogram& h = histograms()[0];
  const float data_min = min_val()[0];
  const float data_max = max_val()[0];
  const float amax = std::max(-data_min, data_max);
  const auto occupied = h.occupied();
  if (occupied.width == 0.0) return {{data_min}, {data_max}};
  // Levels on one side of zero: half the grid when the range (or the scheme) is two-sided.
  const auto grid_levels =
      static_cast<std::size_t>(qdtype().quant_max() - qdtype().quant_min() + 1);
  const bool two_sided = is_symmetric(qscheme()) || (data_min < 0.0f && data_max > 0.0f);
  const std::size_t levels = std::max<std::size_t>(1, two_sided ? grid_levels / 2 : grid_levels);
  const std::size_t kept = best_threshold_bins(occupied.counts, levels);
  const auto threshold =
      std::min(static_cast<float>(occupied.lo + static_cast<double>(kept) * occupied.width), amax);
  if (is_symmetric(qscheme())) return {{-threshold}, {threshold}};
  return {{std::max(data_min, -threshold)}, {std::min(data_max, threshold)}};
}

}  // namespace lucid::quantization
