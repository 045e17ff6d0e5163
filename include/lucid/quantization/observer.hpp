// Observers: streaming calibration statistics that end in QParams (the common interface).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lucid/quantization/qdtype.hpp"
#include "lucid/quantization/qparams.hpp"
#include "lucid/quantization/qscheme.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// A streaming accumulator of calibration statistics, named and behaving like
/// its torch.ao.quantization counterpart (docs/calibration.md).
///
/// Every observer takes batches of any shape (float32, float16, bfloat16 or
/// float64), can absorb another observer of the same class and configuration
/// (calibrate per thread or per shard, reduce afterwards), and saves / loads
/// its configuration and statistics as JSON text.
///
/// Thread-safety: an observer is not synchronised. Give each thread its own
/// and merge() them afterwards; const members may be called concurrently.
class Observer {
 public:
  virtual ~Observer() = default;

  /// The class name, the same in C++ and Python, e.g. "MinMaxObserver".
  virtual std::string_view name() const = 0;

  /// Folds one batch into the statistics. NaN and +-Inf are skipped and
  /// counted (nonfinite_count()); an empty batch changes nothing. Throws Error
  /// when x is not floating point, or, for per-channel observers, when ch_axis
  /// is outside x's rank or the channel count differs from earlier batches.
  virtual void observe(const TensorView& x) = 0;

  /// Folds in the statistics of `other` (same class and configuration): the
  /// reduction step of per-thread / per-shard calibration. Each class documents
  /// how the result relates to observing other's batches here. Throws Error
  /// when the class or the configuration differs.
  virtual void merge(const Observer& other) = 0;

  /// The quantization parameters for the data seen so far. Throws Error when
  /// no finite value has been observed (and for the pass-through observers
  /// that have none, see PlaceholderObserver).
  virtual QParams calculate_qparams() const = 0;

  /// Forgets the statistics; the configuration stays.
  virtual void reset() = 0;

  /// Configuration and statistics as JSON text: {"observer": name, "version": 1,
  /// "options": {...}, "stats": {...}}. Floats are written so that they read
  /// back bit for bit, so load_state(save_state()) gives identical qparams.
  virtual std::string save_state() const = 0;
  /// Replaces configuration and statistics with those of `state` (written by
  /// save_state() of the same class). Throws Error on malformed text, another
  /// class or an unknown version; the observer is unchanged then.
  virtual void load_state(std::string_view state) = 0;

  /// A deep copy.
  virtual std::unique_ptr<Observer> clone() const = 0;

  /// Finite elements observed so far (0 for the pass-through observers).
  std::int64_t count() const { return count_; }
  /// NaN / +-Inf elements skipped so far.
  std::int64_t nonfinite_count() const { return nonfinite_count_; }

 protected:
  Observer() = default;
  Observer(const Observer&) = default;
  Observer& operator=(const Observer&) = default;

  std::int64_t count_ = 0;
  std::int64_t nonfinite_count_ = 0;
};

/// A clipping range per parameter slot: one entry per tensor, one per channel.
struct ClipRange {
  std::vector<float> min;
  std::vector<float> max;
};

/// The integer grid and scheme of a range-based observer, as PyTorch's
/// observers take them. The effective grid is `dtype`, restricted to
/// [quant_min, quant_max] when both are given, then halved (floor of each
/// bound / 2) when reduce_range is set: qint8 -> [-64, 63], quint8 -> [0, 127].
struct QuantGrid {
  QDtype dtype = quint8;
  QScheme qscheme = QScheme::PER_TENSOR_AFFINE;
  bool reduce_range = false;
  std::optional<std::int64_t> quant_min;
  std::optional<std::int64_t> quant_max;
  float eps = default_eps;

  bool operator==(const QuantGrid&) const = default;
};

/// Observers whose qparams come from a clipping range per slot, through the
/// core calculate_qparams(): every observer but the pass-through ones.
class RangeObserver : public Observer {
 public:
  /// The grid as configured (dtype, quant_min / quant_max, reduce_range).
  const QuantGrid& grid() const { return grid_; }
  QScheme qscheme() const { return grid_.qscheme; }
  /// The effective grid the qparams target (see QuantGrid).
  const QDtype& qdtype() const { return qdtype_; }
  /// The channel axis of per-channel observers (0 otherwise).
  int ch_axis() const { return ch_axis_; }

  /// The observed statistic per slot: running min / max, or for the moving
  /// average observers their averages; for the histogram observers the range
  /// their histogram covers. Empty before any finite value.
  const std::vector<float>& min_val() const { return min_; }
  const std::vector<float>& max_val() const { return max_; }

  /// The range calculate_qparams() maps onto the grid: the observed range for
  /// the min / max observers, the searched clipping range for the histogram
  /// based ones. A channel that saw no finite value gets [0, 0] (scale eps).
  /// Throws Error when no finite value has been observed.
  virtual ClipRange clipping_range() const = 0;

  /// calculate_qparams(clipping_range(), qscheme, qdtype, ch_axis, eps).
  QParams calculate_qparams() const final;

 protected:
  /// Validates `grid` for observer `name`: per-channel schemes only when
  /// `per_channel` (per-tensor ones otherwise); both or neither of quant_min /
  /// quant_max; no reduce_range with a symmetric unsigned grid (PyTorch refuses
  /// it too). Throws Error naming the observer, the field and the value.
  RangeObserver(std::string_view name, const QuantGrid& grid, bool per_channel, int ch_axis);
  RangeObserver(const RangeObserver&) = default;
  RangeObserver& operator=(const RangeObserver&) = default;

  /// Throws Error unless at least one finite value was observed.
  void require_data(std::string_view what) const;
  /// Throws Error unless `other` has this class, the same grid and ch_axis.
  void require_same_config(const Observer& other) const;

  QuantGrid grid_;
  QDtype qdtype_;
  int ch_axis_ = 0;
  std::vector<float> min_;
  std::vector<float> max_;
};

/// Rebuilds an observer of whichever class `state` (save_state() text) names,
/// with its configuration and statistics. Throws Error on malformed text or an
/// unknown class.
std::unique_ptr<Observer> load_observer(std::string_view state);

}  // namespace lucid::quantization
