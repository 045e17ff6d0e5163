// DyadicHistogram: exact counts on a grid chosen from the overall range, so merging is exact.
#include "observers/dyadic_histogram.hpp"

#include <algorithm>
#include <array>
#include <cfloat>

#include "lucid/quantization/error.hpp"
#include "observers/bin_counter.hpp"
#include "support/json_excerpt.hpp"

namespace lucid::quantization::detail {
namespace {

// floor(value / 2^level), exactly (the scaling is exact in double, as is the floor).
std::int64_t floor_scaled(double value, int level) {
  return static_cast<std::int64_t>(std::floor(std::ldexp(value, -level)));
}

// floor(index / 2^shift) for shift >= 0.
std::int64_t floor_shift(std::int64_t index, int shift) {
  if (shift >= 63) return index < 0 ? -1 : 0;
  return index >> shift;  // arithmetic shift: floor division (C++20)
}

// The smallest level at which [lo, hi] (lo < hi) spans at most `bins` bins.
int level_for(float lo, float hi, std::int64_t bins) {
  auto fits = [&](int level) { return floor_scaled(hi, level) - floor_scaled(lo, level) < bins; };
  int level = std::ilogb((static_cast<double>(hi) - lo) / static_cast<double>(bins));
  while (!fits(level))
    ++level;
  while (fits(level - 1))
    --level;
  return level;
}

}  // namespace

DyadicHistogram::DyadicHistogram(std::int64_t bins) : bins_(bins) {
  if (bins < 1 || bins > kMaxBins) {
    throw Error("histogram: bins = " + std::to_string(bins) + " (expected 1 <= bins <= 2^24)");
  }
  counts_.assign(static_cast<std::size_t>(bins), 0);
}

std::int64_t DyadicHistogram::bin_of(float value) const {
  return gridded_ ? floor_scaled(value, level_) - base_ : 0;
}

void DyadicHistogram::regrid(float new_min, float new_max) {
  if (new_min == new_max) return;  // one distinct value so far: bin 0 holds it
  const int level = level_for(new_min, new_max, bins_);
  const std::int64_t base = floor_scaled(new_min, level);
  if (gridded_ && level == level_ && base == base_) return;
  std::vector<std::int64_t> fresh(counts_.size(), 0);
  if (!gridded_) {
    if (total_ > 0) fresh[static_cast<std::size_t>(floor_scaled(min_, level) - base)] = counts_[0];
  } else {
    for (std::size_t j = 0; j < counts_.size(); ++j) {
      if (counts_[j] == 0) continue;
      const std::int64_t index = floor_shift(base_ + static_cast<std::int64_t>(j), level - level_);
      fresh[static_cast<std::size_t>(index - base)] += counts_[j];
    }
  }
  counts_ = std::move(fresh);
  level_ = level;
  base_ = base;
  gridded_ = true;
}

void DyadicHistogram::add(const kernels::KernelTable& kt, const float* v, std::int64_t n,
                          std::int64_t finite, float lo, float hi, bool absolute) {
  const float new_min = std::min(min_, lo);
  const float new_max = std::max(max_, hi);
  regrid(new_min, new_max);
  min_ = new_min;
  max_ = new_max;
  const auto skip = static_cast<std::int32_t>(bins_);
  const double scale = std::ldexp(1.0, -level_);
  const auto base = static_cast<double>(gridded_ ? base_ : 0);
  const kernels::GridIndicesFn grid_indices = kt.grid_indices;
  BinCounter counter(bins_);
  std::array<std::int32_t, kIndexChunk> idx;
  for (std::int64_t start = 0; start < n; start += kIndexChunk) {
    const std::int64_t m = std::min(kIndexChunk, n - start);
    grid_indices(v + start, m, absolute, gridded_, scale, base, skip, idx.data());
    counter.add(idx.data(), m);
  }
  const std::vector<std::int64_t> counts = counter.counts();
  for (std::size_t b = 0; b < counts.size(); ++b)
    counts_[b] += counts[b];
  total_ += finite;
}

void DyadicHistogram::merge(const DyadicHistogram& other) {
  if (other.empty()) return;
  if (empty()) {
    *this = other;
    return;
  }
  regrid(std::min(min_, other.min_), std::max(max_, other.max_));
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  if (!other.gridded_) {
    counts_[static_cast<std::size_t>(bin_of(other.min_))] += other.counts_[0];
  } else {
    for (std::size_t j = 0; j < other.counts_.size(); ++j) {
      if (other.counts_[j] == 0) continue;
      const std::int64_t index =
          floor_shift(other.base_ + static_cast<std::int64_t>(j), level_ - other.level_);
      counts_[static_cast<std::size_t>(index - base_)] += other.counts_[j];
    }
  }
  total_ += other.total_;
}

DyadicHistogram::Occupied DyadicHistogram::occupied() const {
  if (!gridded_) return {std::span<const std::int64_t>(counts_.data(), 1), min_, 0.0};
  const auto last = static_cast<std::size_t>(bin_of(max_));
  return {std::span<const std::int64_t>(counts_.data(), last + 1),
          std::ldexp(static_cast<double>(base_), level_), std::ldexp(1.0, level_)};
}

Json DyadicHistogram::to_json() const {
  Json counts = Json::array();
  for (std::size_t j = 0; j < counts_.size(); ++j) {
    if (counts_[j] != 0) counts.push_back(Json::array({j, counts_[j]}));
  }
  Json out = Json::object();
  out["total"] = total_;
  out["min"] = float_to_json(min_);
  out["max"] = float_to_json(max_);
  out["counts"] = std::move(counts);
  return out;
}

DyadicHistogram DyadicHistogram::from_json(const Json& value, std::int64_t bins,
                                           std::string_view who) {
  DyadicHistogram h(bins);
  const auto total = field<std::int64_t>(value, "total", who);
  const Json counts = field<Json>(value, "counts", who);
  if (total < 0 || !counts.is_array()) bad_state(who, "histogram total < 0 or counts not a list");
  if (total == 0) {
    if (!counts.empty()) bad_state(who, "an empty histogram with counts");
    return h;
  }
  const float lo = float_from_json(field<Json>(value, "min", who), who);
  const float hi = float_from_json(field<Json>(value, "max", who), who);
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo <= hi)) {
    bad_state(who, "histogram range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                       "] (expected finite min <= max)");
  }
  h.regrid(lo, hi);
  h.min_ = lo;
  h.max_ = hi;
  const std::int64_t last = h.bin_of(hi);
  std::int64_t sum = 0;
  for (const Json& pair : counts) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() ||
        !pair[1].is_number_integer()) {
      bad_state(who, "histogram count " + detail::json_excerpt(pair) + " (expected [bin, count])");
    }
    const auto bin = pair[0].get<std::int64_t>();
    const auto count = pair[1].get<std::int64_t>();
    if (bin < 0 || bin > last || count <= 0 || count > total - sum) {
      bad_state(who,
                "histogram count " + detail::json_excerpt(pair) + " outside the grid or the total");
    }
    h.counts_[static_cast<std::size_t>(bin)] += count;
    sum += count;
  }
  if (sum != total) bad_state(who, "histogram counts do not add up to its total");
  h.total_ = total;
  return h;
}

}  // namespace lucid::quantization::detail
