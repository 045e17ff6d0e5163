// Weight algorithms on whole checkpoints: the calibration statistics file and the tensor quantizer
// of `lucidq quantize --method`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lucid/quantization/checkpoint.hpp"
#include "lucid/quantization/gptq.hpp"
#include "lucid/quantization/hqq.hpp"

namespace lucid::quantization {

/// The statistics of one Linear weight's input, as stored in a calibration file
/// (docs/formats.md, "Calibration statistics").
struct TensorCalibration {
  std::int64_t features = 0;
  std::int64_t rows = 0;
  std::vector<double> hessian;     ///< Σ x xᵀ [K, K]; empty when the file has none
  std::vector<float> abs_max;      ///< [K]
  std::vector<double> abs_sum;     ///< [K]
  std::vector<double> square_sum;  ///< [K]
};

/// A calibration statistics file: per weight tensor name.
struct CalibrationStatistics {
  std::string path;
  std::map<std::string, TensorCalibration> tensors;
};

/// Reads a calibration statistics file (safetensors, __metadata__ "format" =
/// "lucidq.calibration"; tensors `<W>.hessian` F64 [K, K] (optional), `<W>.abs_max` F32 [K],
/// `<W>.abs_sum`, `<W>.square_sum` F64 [K], `<W>.rows` I64 [1]). Throws Error naming the file
/// and tensor for another format, a missing or mis-shaped companion, or non-finite values.
CalibrationStatistics load_calibration_statistics(const std::filesystem::path& path);

/// The weight algorithms `lucidq quantize --method` offers.
enum class WeightMethod { rtn, gptq, hqq, weighted_rtn };
/// "rtn", "gptq", "hqq", "weighted-rtn" (also "imatrix"); throws Error on another name.
WeightMethod weight_method_from_string(const std::string& name);

struct WeightQuantizerOptions {
  WeightMethod method = WeightMethod::rtn;
  /// Needed by gptq and weighted-rtn; with it every method reports tr(ΔW H ΔWᵀ).
  std::optional<CalibrationStatistics> statistics;
  double percent_damp = 0.01;
  bool act_order = false;  ///< GPTQ act-order, with static groups (so the layout stays plain)
  HqqOptions hqq;          ///< lp_norm, beta, kappa, iterations (the grid comes from the settings)
};

/// The TensorQuantizer for QuantizeCheckpointOptions::quantizer. Tensors the method cannot
/// take (not rank 2, per-tensor schemes, groups not along the last axis, per-channel not on
/// axis 0, symmetric HQQ) raise Error naming the tensor and what was expected, and so does a
/// tensor with no statistics (or statistics of another shape) when the method needs them:
/// exclude such tensors with --exclude. Warnings (a GPTQ RTN fallback) go to `warn`.
TensorQuantizer make_weight_quantizer(WeightQuantizerOptions options,
                                      std::function<void(const std::string&)> warn = {});

}  // namespace lucid::quantization
