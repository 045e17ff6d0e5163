// The min / max observers of torch.ao.quantization: running and moving-average, per tensor and per
// channel.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lucid/quantization/observer.hpp"

namespace lucid::quantization {

/// The default grid of the per-channel observers: quint8, per_channel_affine.
inline constexpr QScheme default_per_channel_qscheme = QScheme::PER_CHANNEL_AFFINE;

/// Running min and max of everything observed (PyTorch's MinMaxObserver):
/// min = min(min, min(x)), max = max(max, max(x)); per-tensor schemes only.
/// merge(a, b) equals observing a's and b's batches in one observer, exactly.
///
///   Q::MinMaxObserver obs({.dtype = Q::qint8, .qscheme = Q::per_tensor_symmetric});
///   obs.observe(batch);
///   Q::QParams q = obs.calculate_qparams();
class MinMaxObserver : public RangeObserver {
 public:
  explicit MinMaxObserver(const QuantGrid& grid = {});

  std::string_view name() const override { return "MinMaxObserver"; }
  void observe(const TensorView& x) override;
  void merge(const Observer& other) override;
  void reset() override;
  std::string save_state() const override;
  void load_state(std::string_view state) override;
  std::unique_ptr<Observer> clone() const override;
  ClipRange clipping_range() const override;

 protected:
  MinMaxObserver(std::string_view name, const QuantGrid& grid);
};

/// Exponential moving averages of the batch min and max (PyTorch's
/// MovingAverageMinMaxObserver): the first batch sets them, each later one
/// moves them by c: min += c * (min(x) - min), in float32 like PyTorch.
/// A batch without finite values changes nothing. The average depends on batch
/// order, so merge() cannot equal sequential observation: it takes the mean of
/// the two observers' averages weighted by their batch counts (documented in
/// docs/calibration.md).
class MovingAverageMinMaxObserver : public MinMaxObserver {
 public:
  /// averaging_constant c must lie in (0, 1]; PyTorch's default is 0.01.
  explicit MovingAverageMinMaxObserver(const QuantGrid& grid = {},
                                       float averaging_constant = 0.01f);

  std::string_view name() const override { return "MovingAverageMinMaxObserver"; }
  void observe(const TensorView& x) override;
  void merge(const Observer& other) override;
  void reset() override;
  std::string save_state() const override;
  void load_state(std::string_view state) override;
  std::unique_ptr<Observer> clone() const override;

  float averaging_constant() const { return averaging_constant_; }
  /// Batches that contributed (had at least one finite value).
  std::int64_t batch_count() const { return batches_; }

 private:
  float averaging_constant_;
  std::int64_t batches_ = 0;
};

/// Running min and max per index along ch_axis (PyTorch's
/// PerChannelMinMaxObserver); per-channel schemes only, any axis (negative
/// counts from the end). The channel count is fixed by the first batch.
/// merge(a, b) equals observing both, exactly.
class PerChannelMinMaxObserver : public RangeObserver {
 public:
  explicit PerChannelMinMaxObserver(
      const QuantGrid& grid = {.qscheme = default_per_channel_qscheme}, int ch_axis = 0);

  std::string_view name() const override { return "PerChannelMinMaxObserver"; }
  void observe(const TensorView& x) override;
  void merge(const Observer& other) override;
  void reset() override;
  std::string save_state() const override;
  void load_state(std::string_view state) override;
  std::unique_ptr<Observer> clone() const override;
  ClipRange clipping_range() const override;

 protected:
  PerChannelMinMaxObserver(std::string_view name, const QuantGrid& grid, int ch_axis);
  /// The per-channel finite min / max of x (channels without finite values: +inf / -inf).
  ClipRange batch_ranges(const TensorView& x);
};

/// Per-channel moving averages (PyTorch's MovingAveragePerChannelMinMaxObserver):
/// MovingAverageMinMaxObserver's rule applied to every channel; a channel that
/// has no finite value in a batch keeps its averages.
class MovingAveragePerChannelMinMaxObserver : public PerChannelMinMaxObserver {
 public:
  explicit MovingAveragePerChannelMinMaxObserver(
      const QuantGrid& grid = {.qscheme = default_per_channel_qscheme}, int ch_axis = 0,
      float averaging_constant = 0.01f);

  std::string_view name() const override { return "MovingAveragePerChannelMinMaxObserver"; }
  void observe(const TensorView& x) override;
  void merge(const Observer& other) override;
  void reset() override;
  std::string save_state() const override;
  void load_state(std::string_view state) override;
  std::unique_ptr<Observer> clone() const override;

  float averaging_constant() const { return averaging_constant_; }
  /// Per channel: batches in which the channel had a finite value.
  const std::vector<std::int64_t>& batch_counts() const { return batches_; }

 private:
  float averaging_constant_;
  std::vector<std::int64_t> batches_;
};

}  // namespace lucid::quantization
