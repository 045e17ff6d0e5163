// ChannelStats: per-input-channel max |x|, Σ|x| and Σx² over calibration rows.
#include "lucid/quantization/channel_stats.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "lucid/quantization/error.hpp"

namespace lucid::quantization {

ChannelStats::ChannelStats(std::int64_t features) {
  if (features < 1) {
    throw Error("ChannelStats: features is " + std::to_string(features) + "; expected >= 1");
  }
  const auto k = static_cast<std::size_t>(features);
  abs_max_.assign(k, 0.0f);
  abs_sum_.assign(k, 0.0);
  square_sum_.assign(k, 0.0);
}

ChannelStats::ChannelStats(std::vector<float> abs_max, std::vector<double> abs_sum,
                           std::vector<double> square_sum, std::int64_t rows)
    : abs_max_(std::move(abs_max)),
      abs_sum_(std::move(abs_sum)),
      square_sum_(std::move(square_sum)),
      rows_(rows) {
  const auto k = abs_max_.size();
  if (k == 0 || abs_sum_.size() != k || square_sum_.size() != k) {
    throw Error("ChannelStats: abs_max, abs_sum and square_sum have " + std::to_string(k) + ", " +
                std::to_string(abs_sum_.size()) + " and " + std::to_string(square_sum_.size()) +
                " entries; expected the same non-zero count");
  }
  if (rows < 0) throw Error("ChannelStats: rows is " + std::to_string(rows) + "; expected >= 0");
  for (std::size_t j = 0; j < k; ++j) {
    const bool ok = std::isfinite(abs_max_[j]) && abs_max_[j] >= 0 && std::isfinite(abs_sum_[j]) &&
                    abs_sum_[j] >= 0 && std::isfinite(square_sum_[j]) && square_sum_[j] >= 0;
    if (!ok) {
      throw Error("ChannelStats: channel " + std::to_string(j) +
                  " has a negative or non-finite statistic; expected finite values >= 0");
    }
  }
}

void ChannelStats::add_rows(const TensorView& x) {
  const auto k = features();
  if (x.shape.empty() || x.shape.back() != k) {
    throw Error(
        "ChannelStats.add_rows: the last dimension is " +
        (x.shape.empty() ? std::string("missing (a scalar)") : std::to_string(x.shape.back())) +
        "; expected the layer's " + std::to_string(k) + " input features");
  }
  const auto values = to_float32(x, "ChannelStats.add_rows");
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw Error("ChannelStats.add_rows: calibration element " + std::to_string(i) + " is " +
                  std::to_string(values[i]) + "; expected finite activations");
    }
  }
  const auto rows = static_cast<std::int64_t>(values.size()) / k;
  for (std::int64_t t = 0; t < rows; ++t) {
    const float* row = values.data() + t * k;
    for (std::int64_t j = 0; j < k; ++j) {
      const float a = std::abs(row[j]);
      abs_max_[j] = std::max(abs_max_[j], a);
      abs_sum_[j] += a;
      square_sum_[j] += static_cast<double>(row[j]) * row[j];
    }
  }
  rows_ += rows;
}

void ChannelStats::merge(const ChannelStats& other) {
  if (other.features() != features()) {
    throw Error("ChannelStats.merge: the other statistics have " +
                std::to_string(other.features()) + " features, expected " +
                std::to_string(features()));
  }
  for (std::size_t j = 0; j < abs_max_.size(); ++j) {
    abs_max_[j] = std::max(abs_max_[j], other.abs_max_[j]);
    abs_sum_[j] += other.abs_sum_[j];
    square_sum_[j] += other.square_sum_[j];
  }
  rows_ += other.rows_;
}

std::vector<double> ChannelStats::mean_abs() const {
  std::vector<double> out(abs_sum_.size(), 0.0);
  if (rows_ == 0) return out;
  for (std::size_t j = 0; j < out.size(); ++j)
    out[j] = abs_sum_[j] / static_cast<double>(rows_);
  return out;
}

std::vector<double> ChannelStats::second_moments() const {
  std::vector<double> out(square_sum_.size(), 0.0);
  if (rows_ == 0) return out;
  for (std::size_t j = 0; j < out.size(); ++j) {
    out[j] = square_sum_[j] / static_cast<double>(rows_);
  }
  return out;
}

}  // namespace lucid::quantization
