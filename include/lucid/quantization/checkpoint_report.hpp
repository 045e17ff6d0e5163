// The report of a checkpoint quantization: per-tensor sizes and errors, as a table or JSON.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "lucid/quantization/ggml_type.hpp"
#include "lucid/quantization/metrics.hpp"
#include "lucid/quantization/recipe.hpp"
#include "lucid/quantization/scalar_type.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// What happened to one tensor.
struct TensorReport {
  std::string name;
  Shape shape;
  ScalarType dtype = ScalarType::float32;  ///< the input dtype
  /// The settings it was quantized with; nullopt when it was kept as is.
  std::optional<QuantSettings> settings;
  /// The deciding rule's origin, or why it was kept.
  std::string reason;
  std::uint64_t bytes_before = 0;  ///< the input tensor's bytes
  std::uint64_t bytes_after = 0;   ///< codes + scales + zero points (or the copy)
  /// GGUF jobs: the ggml type of the input tensor (for the dtype column), and the ggml type
  /// it was written as when the job re-encoded it (nullopt: copied as is). Unset for
  /// lucidq checkpoints.
  std::optional<GgmlType> input_ggml_type;
  std::optional<GgmlType> ggml_type;
  /// Quantized: every figure of error_metrics(original, quantized). Kept floating-point
  /// tensors: count and nonfinite_count only. Other tensors: all zero.
  ErrorMetrics metrics;
  /// The weight algorithm that chose the codes ("gptq", "hqq", ...); empty for plain RTN.
  std::string method;
  /// The output-error proxy tr(ΔW H ΔWᵀ) when calibration statistics were given.
  std::optional<double> output_error_proxy;
};

/// The report quantize_checkpoint returns.
struct CheckpointReport {
  std::string input;                  ///< the input path
  std::string output;                 ///< the output path
  std::vector<TensorReport> tensors;  ///< in the input's data order
  std::uint64_t input_file_bytes = 0;
  std::uint64_t output_file_bytes = 0;
  double seconds = 0;  ///< wall time of the job

  std::uint64_t bytes_before() const;  ///< sum over tensors
  std::uint64_t bytes_after() const;   ///< sum over tensors
  /// bytes_before / bytes_after (1 when both are 0).
  double compression_ratio() const;
  std::size_t quantized_count() const;
  std::int64_t nonfinite_count() const;  ///< NaN / +-Inf over all tensors
};

/// The report as a plain-text table, one row per tensor, then totals:
///
///   tensor        shape         scheme                 dtype  bytes before -> after ...
///   fc1.weight    [256, 128]    per_channel_symmetric  qint8  64.0 KiB -> 33.0 KiB  ...
///   fc1.bias      [256]         kept (default rule)    bf16   512 B -> 512 B
///
/// Kept tensors show "kept" and the reason. Reports of GGUF jobs (any ggml_type set) show
/// the ggml types, the reason and bits per weight instead of the scheme. Thread-safe.
std::string format_report(const CheckpointReport& report);

/// The report as JSON (docs/formats.md, "Quantization report"): {"input", "output",
/// "tensors": [...], "totals": {...}}; an infinite SQNR (exact reconstruction) is null.
std::string report_to_json(const CheckpointReport& report);

/// Writes report_to_json(report) to `path` atomically (temporary file, then rename); an
/// existing file is replaced only with `overwrite`. Throws Error naming the path otherwise
/// or on an I/O failure.
void write_report_json(const CheckpointReport& report, const std::filesystem::path& path,
                       bool overwrite = false);

/// "1.50 GiB", "512 B": bytes with a binary unit and 3 significant digits.
std::string format_bytes(std::uint64_t bytes);

}  // namespace lucid::quantization
