// The whole-file GGUF job: llama-quantize's presets and mixture (GGUF -> GGUF) and
// safetensors -> GGUF, streaming, atomic, with lucidq's per-tensor report.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string_view>

#include "lucid/quantization/checkpoint.hpp"
#include "lucid/quantization/checkpoint_report.hpp"
#include "lucid/quantization/gguf.hpp"
#include "lucid/quantization/imatrix.hpp"
#include "lucid/quantization/llama_mixture.hpp"
#include "lucid/quantization/recipe.hpp"

namespace lucid::quantization {

/// The GGML_QNT_VERSION written as "general.quantization_version".
inline constexpr std::uint32_t kGgmlQuantizationVersion = 2;

/// Options of quantize_gguf.
struct GgufQuantizeOptions {
  /// The preset and llama-quantize's flags (--pure, --leave-output-tensor,
  /// --output-tensor-type, --token-embedding-type). has_imatrix is set from `imatrix`.
  MixtureOptions mixture;
  /// The importance matrix (load_imatrix, or load_importance_matrix for lucidq statistics too), or
  /// nullptr. Each tensor W uses the entry named W (docs/gguf.md, "Importance matrices").
  const ImportanceMatrix* imatrix = nullptr;
  /// Recipe rules with a ggml_type (or skip) decide first, for the tensors llama-quantize
  /// would quantize (first match wins); the mixture decides the rest. Rules with lucidq
  /// settings are refused.
  QuantRecipe recipe;
  /// Metadata for a safetensors input (e.g. general.architecture and the llama hparams);
  /// ignored for a GGUF input, whose metadata is copied.
  GgufMetadata metadata;
  /// Re-encode tensors that are already block-quantized (dequantized first), as
  /// llama-quantize's --allow-requantize.
  bool allow_requantize = false;
  bool overwrite = false;
  /// Fail on the first tensor holding NaN or +-Inf (the block quantizers refuse them anyway).
  bool strict = false;
  ProgressCallback progress;
  /// Called for each re-encoded tensor with its float32 values before and after (the decode
  /// of what was written), e.g. to plot it. Views are valid only during the call.
  std::function<void(std::string_view name, const TensorView& original,
                     const TensorView& reconstructed)>
      on_tensor;
};

/// What quantize_gguf will do with each tensor, in output order.
struct GgufTensorPlan {
  std::string name;
  std::vector<std::int64_t> ne;
  GgmlType input_type = GgmlType::F32;
  GgmlType output_type = GgmlType::F32;  ///< == input_type: copied bit for bit
  std::string reason;
};

/// The plan for `input` (a .gguf or .safetensors file, told apart by its first bytes): for a
/// GGUF input, llama-quantize's tensor order and choose_llama_types with the recipe's
/// manual types; for safetensors, the file's order and every floating-point tensor of 2 or
/// more dimensions to the preset's default type (with the fallback), the rest kept.
/// Throws Error naming the file and tensor (unknown or unsupported types, a recipe rule with
/// lucidq settings, a requantization without allow_requantize, ...).
std::vector<GgufTensorPlan> plan_gguf_quantization(const std::filesystem::path& input,
                                                   const GgufQuantizeOptions& options);

/// Quantizes `input` (GGUF or safetensors) into the GGUF file `output` as llama-quantize
/// does: the input's metadata copied in order (split keys removed) with
/// "general.quantization_version" = 2 and "general.file_type" = the preset's ftype set at
/// the end (and "quantize.imatrix.*" keys when an imatrix is used), tensors in the plan's
/// order, each converted to float32 and encoded with ggml_quantize_rows (with its imatrix
/// entry), data padded to the alignment. Streaming from the memory-mapped input (pages
/// released after each tensor), atomic (no output on any error). Returns lucidq's report
/// (per tensor: types, bytes, bits per weight, error of the decoded result vs the input).
CheckpointReport quantize_gguf(const std::filesystem::path& input,
                               const std::filesystem::path& output,
                               const GgufQuantizeOptions& options = {});

/// Options of dequantize_gguf.
struct DequantizeGgufOptions {
  bool overwrite = false;
  ProgressCallback progress;
};

/// Writes every tensor of the GGUF file `input` as float32 (block types decoded as ggml's
/// to_float does, F16/BF16 widened, F32 copied; integer tensors copied as they are) into the
/// safetensors file `output`, with PyTorch shapes and the GGUF string metadata as
/// __metadata__. Streaming and atomic. Throws Error naming the file and tensor.
DequantizeSummary dequantize_gguf(const std::filesystem::path& input,
                                  const std::filesystem::path& output,
                                  const DequantizeGgufOptions& options = {});

}  // namespace lucid::quantization
