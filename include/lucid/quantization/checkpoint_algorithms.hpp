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
#include "lucid/quantization/imatrix.hpp"

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
  /// weighted-rtn's per-column weights from a llama.cpp importance matrix instead of
  /// `statistics` (only that method takes one); tensor W uses the entry named W.
  std::optional<ImportanceMatrix> importance;
  double percent_damp = 0.01;
  bool act_order = false;  ///< GPTQ act-order, with static groups (so the layout stays plain)
  HqqOptions hqq;          ///< lp_norm, beta, kappa, iterations (the grid comes from the settings)
};

/// What a statistics file holds, told by its content rather than its name.
enum class StatisticsFileKind { lucidq_calibration, gguf_imatrix, legacy_imatrix };
/// A file that starts with "GGUF" is a GGUF imatrix; one whose byte 8 is '{' (safetensors: a
/// u64 header length, then the JSON header) lucidq calibration statistics; anything else a
/// legacy imatrix (its parser then says what is wrong). Throws Error when it cannot be opened.
StatisticsFileKind statistics_file_kind(const std::filesystem::path& path);

/// lucidq statistics as an importance matrix: per tensor square_sum / rows, the mean square
/// activation of each input column (what llama-imatrix records); format "lucidq.calibration".
ImportanceMatrix importance_matrix_of(const CalibrationStatistics& stats);
/// An importance matrix from either kind of file: llama.cpp imatrix files as load_imatrix
/// reads them, lucidq calibration statistics through importance_matrix_of.
ImportanceMatrix load_importance_matrix(const std::filesystem::path& path);
/// Sets options.statistics (a lucidq calibration file) or options.importance (a llama.cpp
/// imatrix) from `path`, by content. Throws Error as the loaders do.
void load_weight_statistics(WeightQuantizerOptions& options, const std::filesystem::path& path);

/// The TensorQuantizer for QuantizeCheckpointOptions::quantizer. Tensors the method cannot
/// take (not rank 2, per-tensor schemes, groups not along the last axis, per-channel not on
/// axis 0, symmetric HQQ) raise Error naming the tensor and what was expected, and so does a
/// tensor with no statistics (or statistics of another shape) when the method needs them:
/// exclude such tensors with --exclude. An importance matrix is refused for every method but
/// weighted-rtn, and an entry missing or of the wrong size for a tensor is an Error naming
/// the tensor. Warnings (a GPTQ RTN fallback) go to `warn`.
TensorQuantizer make_weight_quantizer(WeightQuantizerOptions options,
                                      std::function<void(const std::string&)> warn = {});

}  // namespace lucid::quantization
