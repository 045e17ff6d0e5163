// llama-quantize's presets and its per-tensor type mixture: which ggml type each tensor gets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lucid/quantization/ggml_type.hpp"

namespace lucid::quantization {

/// A llama-quantize preset, with llama.cpp's ftype id (the value of "general.file_type").
enum class LlamaFileType : std::uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q8_0 = 7,
  Q5_0 = 8,
  Q5_1 = 9,
  Q2_K = 10,
  Q3_K_S = 11,
  Q3_K_M = 12,
  Q3_K_L = 13,
  Q4_K_S = 14,
  Q4_K_M = 15,
  Q5_K_S = 16,
  Q5_K_M = 17,
  Q6_K = 18,
  IQ4_NL = 25,
  BF16 = 32,
};

/// The preset's name as llama-quantize prints it ("Q4_K_M").
std::string_view to_string(LlamaFileType type);
/// Parses a preset name case-insensitively, with llama-quantize's aliases Q3_K (= Q3_K_M),
/// Q4_K (= Q4_K_M) and Q5_K (= Q5_K_M). nullopt when unknown.
std::optional<LlamaFileType> llama_file_type_from_name(std::string_view name);
/// "Q8_0, Q6_K, Q5_K_M, ...": every preset, for messages.
std::string llama_file_type_names();
/// The preset's default tensor type (Q4_K_M -> Q4_K, Q3_K_L -> Q3_K, Q8_0 -> Q8_0).
GgmlType default_ggml_type(LlamaFileType type);

/// The model facts the mixture depends on (from the GGUF metadata).
struct LlamaModelFacts {
  std::string architecture;    ///< "general.architecture" ("llama", "falcon", ...)
  std::int64_t n_layer = 0;    ///< "<arch>.block_count"
  std::int64_t n_head = 0;     ///< "<arch>.attention.head_count"
  std::int64_t n_head_kv = 0;  ///< "<arch>.attention.head_count_kv" (n_head when absent)
  std::int64_t n_expert = 0;   ///< "<arch>.expert_count" (0 when absent)
};

/// Options of the mixture, as llama-quantize's flags.
struct MixtureOptions {
  LlamaFileType file_type = LlamaFileType::Q8_0;
  bool pure = false;                 ///< --pure: every quantizable tensor the default type
  bool has_imatrix = false;          ///< an importance matrix is given
  bool leave_output_tensor = false;  ///< --leave-output-tensor: output.weight kept
  std::optional<GgmlType> output_tensor_type;    ///< --output-tensor-type
  std::optional<GgmlType> token_embedding_type;  ///< --token-embedding-type
};

/// One tensor the mixture looks at, in the order llama-quantize visits them (see
/// llama_tensor_order).
struct MixtureTensor {
  std::string name;
  std::vector<std::int64_t> ne;   ///< innermost first
  GgmlType type = GgmlType::F32;  ///< its current type
  /// A type a recipe rule names for it (llama-quantize's --tensor-type): replaces the
  /// mixture for a quantizable tensor (the fallback still applies).
  std::optional<GgmlType> manual;
  std::string manual_origin;  ///< the rule, for the reason ("recipe.json rules[0]")
};

/// The type chosen for one tensor and why.
struct MixtureChoice {
  GgmlType type = GgmlType::F32;
  /// False when llama-quantize does not quantize the tensor at all (1-D, norms, not a
  /// weight, output.weight under leave_output_tensor): it keeps its current type.
  bool quantizable = false;
  /// "default q4_K", "mixture: attn_v use_more_bits", "fallback q4_K -> q5_0 (row 96)".
  std::string reason;
};

/// True when llama-quantize would quantize a tensor of this name and shape (2-D or more, name
/// ends in "weight", not a norm, not output.weight under leave_output_tensor, not an expert
/// router, position or token-type embedding, conv1d or the other small tensors it skips).
bool llama_tensor_allows_quantization(std::string_view name, std::size_t n_dims,
                                      bool leave_output_tensor);

/// The order llama-quantize visits and writes tensors: by the layer number of "blk.N."
/// (names without one first), then by name. Returns indices into `names`.
std::vector<std::size_t> llama_tensor_order(const std::vector<std::string>& names);

/// llama-quantize's tensor_type_fallback: `type` when its block divides the row length
/// tensor.ne[0], else its fallback (IQ types -> IQ4_NL, Q2_K / Q3_K / TQ -> Q4_0, Q4_K ->
/// Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0; F16 when that does not fit either). Sets *reason when
/// it falls back. Throws Error naming the tensor for a type without a fallback (Q8_0 ...).
GgmlType llama_fallback_type(const MixtureTensor& tensor, GgmlType type,
                             std::string* reason = nullptr);

/// llama-quantize's type for every tensor of a model (tensors in llama_tensor_order):
/// the explicit overrides, the mixture of llama_tensor_get_type_impl for the preset (skipped
/// with pure, or when the default type is not block-quantized), then the fallback for rows
/// that are not a multiple of the block (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K /
/// Q3_K -> Q4_0, then F16). Throws Error naming the tensor when no fallback exists.
/// The rules are tabulated in docs/gguf.md ("The llama mixture").
std::vector<MixtureChoice> choose_llama_types(const std::vector<MixtureTensor>& tensors,
                                              const LlamaModelFacts& model,
                                              const MixtureOptions& options);

}  // namespace lucid::quantization
