// Plot files of quantized tensors for `lucidq quantize --plots` and `lucidq plot`.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucidq::cli {

/// The two figures of tensor `name` in `dir`: NAME.errors.png (plot_quantization_errors) and
/// NAME.report.png (plot_tensor_report), with '/' in the name replaced by '_'.
std::pair<std::filesystem::path, std::filesystem::path> plot_paths(const std::filesystem::path& dir,
                                                                   std::string_view name);

/// Frees Cairo's and fontconfig's process-wide font caches when the process exits (they
/// otherwise live until exit by design), so that LeakSanitizer reports only real leaks.
/// Call before drawing; calling again does nothing.
void free_font_caches_at_exit();

using TensorCallback = std::function<void(std::string_view, const lucid::quantization::TensorView&,
                                          const lucid::quantization::QuantizedTensor&)>;

/// A QuantizeCheckpointOptions::on_tensor callback drawing both figures of each quantized
/// tensor into `dir`, which it creates when missing; each path written is appended to
/// `written`. Throws Error up front when a figure of a tensor in `planned` already exists
/// and `force` is false, so a long job does not fail at its first plot.
TensorCallback plot_writer(const std::filesystem::path& dir, bool force,
                           const std::vector<std::string>& planned,
                           std::vector<std::string>& written);

using ReconstructionCallback =
    std::function<void(std::string_view, const lucid::quantization::TensorView&,
                       const lucid::quantization::TensorView&)>;

/// A GgufQuantizeOptions::on_tensor callback drawing NAME.errors.png for each re-encoded
/// tensor: the original, the codes panel, the decoded tensor and |error|. ggml blocks have
/// no single scale, so the codes panel shows each value's level rank among the distinct
/// decoded values of its 32-value block (0 = the block's lowest). Same checks as
/// plot_writer.
ReconstructionCallback reconstruction_plot_writer(const std::filesystem::path& dir, bool force,
                                                  const std::vector<std::string>& planned,
                                                  std::vector<std::string>& written);

}  // namespace lucidq::cli
