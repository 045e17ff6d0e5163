// Quantized checkpoints: lucidq's safetensors layout for quantized tensors (format 1) and the
// streaming jobs that quantize and dequantize whole safetensors files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lucid/quantization/checkpoint_report.hpp"
#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/recipe.hpp"
#include "lucid/quantization/safetensors.hpp"

namespace lucid::quantization {

/// The __metadata__ key that marks a lucidq quantized checkpoint; its value is the version.
inline constexpr std::string_view checkpoint_format_key = "lucidq.format";
/// The format version this library writes (and the only one it reads).
inline constexpr std::string_view checkpoint_format_version = "1";
/// The __metadata__ key describing quantized tensor W is this prefix + W; its value is JSON.
inline constexpr std::string_view checkpoint_tensor_key_prefix = "lucidq.tensor.";

/// How one quantized tensor W is stored (docs/formats.md): the codes under W itself (I8 /
/// U8 / I16 / U16 / I32 with W's shape, or packed 4- / 2-bit codes as flat U8
/// [ceil(numel * bits / 8)]), float32 scales under "W.scale" with the QParams::param_shape,
/// and for affine schemes the zero points under "W.zero_point" (same shape; I8 for signed
/// dtypes of up to 8 bits, U8 for unsigned ones, I16 / U16 / I32 for wider ones).
struct QuantizedTensorLayout {
  std::string name;
  Shape shape;                                     ///< the logical (original) shape
  ScalarType original_type = ScalarType::float32;  ///< the dtype before quantization
  QuantSettings settings;                          ///< axis non-negative (0 for per-tensor)

  std::string scale_name() const { return name + ".scale"; }
  /// "W.zero_point" for affine schemes, nullopt for symmetric ones (their zero point is
  /// settings.qdtype.symmetric_zero_point()).
  std::optional<std::string> zero_point_name() const;
  ScalarType code_type() const;
  Shape code_shape() const;
  Shape param_shape() const;
  ScalarType zero_point_type() const;
  /// The stored tensors in file order: codes, scale, then zero_point when affine.
  std::vector<SafetensorsTensorSpec> stored_tensors() const;
  /// Bytes of all stored tensors together.
  std::uint64_t nbytes() const;
};

/// One logical tensor of a checkpoint: stored as is, or quantized.
struct CheckpointTensor {
  /// The stored tensor of that name (the codes of a quantized tensor).
  SafetensorsEntry entry;
  /// Set when the tensor is quantized; its companions are not listed separately.
  std::optional<QuantizedTensorLayout> quantized;
};

/// The logical view of a safetensors file.
struct CheckpointContents {
  /// The "lucidq.format" value, or nullopt for a plain safetensors file.
  std::optional<std::string> format_version;
  /// Tensors in data order, companions (W.scale, W.zero_point) folded into their tensor.
  std::vector<CheckpointTensor> tensors;
  /// __metadata__ without the lucidq.* keys.
  std::map<std::string, std::string> user_metadata;
};

/// Reads the lucidq metadata of `file` and checks it against the stored tensors: a known
/// format version, a complete description per quantized tensor, and codes / scale /
/// zero-point tensors of the dtype and shape it implies. A file without lucidq metadata is
/// a plain checkpoint (every tensor stored as is). Does not read tensor data.
/// Throws Error naming the file and the tensor. Thread-safe.
CheckpointContents read_checkpoint_contents(const SafetensorsFile& file);

/// The quantized tensor `layout` (from read_checkpoint_contents(file)) with its codes and
/// parameters copied out of the file. Throws Error naming the file and tensor when a scale is
/// not finite and > 0 or a zero point lies outside the dtype's range.
QuantizedTensor load_quantized_tensor(const SafetensorsFile& file,
                                      const QuantizedTensorLayout& layout);

/// What quantize_checkpoint will do with one tensor of its input.
struct TensorPlan {
  SafetensorsEntry entry;
  /// Resolved settings (see resolve_settings); nullopt: the tensor is copied bit for bit.
  std::optional<QuantSettings> settings;
  /// Why: the deciding rule's origin, or why no rule applied ("I64 is not floating point").
  std::string reason;
};

/// Applies `recipe` to every tensor of `file` (data order). Floating-point tensors (F32, F16,
/// BF16, F64) take the first rule that applies; other tensors and tensors no rule applies to
/// are kept. Throws Error naming the file, the tensor and the rule when the rule's settings do
/// not fit the tensor (e.g. an axis beyond its rank), when a stored name a quantized tensor
/// needs ("W.scale", "W.zero_point") is already taken by another tensor, and when `file` is
/// already a lucidq checkpoint (any "lucidq." metadata key).
std::vector<TensorPlan> plan_quantization(const SafetensorsFile& file, const QuantRecipe& recipe);

/// Progress of a checkpoint job, reported after each tensor.
struct CheckpointProgress {
  std::size_t tensors_done = 0;
  std::size_t tensor_count = 0;
  std::uint64_t bytes_done = 0;   ///< input bytes of the finished tensors
  std::uint64_t bytes_total = 0;  ///< input bytes of all tensors
  std::string_view tensor;        ///< the tensor just finished
};
using ProgressCallback = std::function<void(const CheckpointProgress&)>;

/// What a custom tensor quantizer (QuantizeCheckpointOptions::quantizer) returns.
struct TensorQuantization {
  QuantizedTensor tensor;  ///< codes and QParams with the settings' scheme, dtype, axis, group
  std::string method;      ///< reported as TensorReport::method
  std::optional<double> output_error_proxy;  ///< reported as TensorReport::output_error_proxy
};
/// Chooses a tensor's codes in place of RTN: called with the tensor as float32 and its
/// resolved settings; nullopt keeps RTN. Called on the job's thread.
using TensorQuantizer = std::function<std::optional<TensorQuantization>(
    std::string_view name, const TensorView& x, const QuantSettings& settings)>;

/// Options of quantize_checkpoint.
struct QuantizeCheckpointOptions {
  /// Which tensors to quantize, and how. Default: 2-D and larger floating-point tensors
  /// per_channel_symmetric qint8 along axis 0; the rest kept.
  QuantRecipe recipe{{default_rule()}};
  /// Replace an existing output file.
  bool overwrite = false;
  /// Fail (naming the tensor and the count) on the first tensor holding NaN or +-Inf.
  /// Without it they are counted in the report; quantize maps NaN to the zero point and
  /// saturates +-Inf (docs/numerics.md).
  bool strict = false;
  /// Called after each tensor (on the calling thread).
  ProgressCallback progress;
  /// Called for each quantized tensor while it is in memory, e.g. to plot it. The views are
  /// valid only during the call; an exception aborts the job (no output is left).
  std::function<void(std::string_view name, const TensorView& original,
                     const QuantizedTensor& quantized)>
      on_tensor;
  /// Replaces RTN where it returns a tensor (weight algorithms: make_weight_quantizer in
  /// checkpoint_algorithms.hpp). Its QParams must match the settings (else Error).
  TensorQuantizer quantizer;
};

/// Quantizes the safetensors file `input` into `output` (format 1, docs/formats.md),
/// streaming: one tensor at a time from the memory-mapped input, its pages released when
/// done, so memory stays near the largest tensor's size whatever the file size. Tensors
/// the plan keeps are copied bit for bit; the input's __metadata__ entries are kept and the
/// lucidq keys added. The output is written under a temporary name and renamed into place
/// at the end, so on any error no output is left; an existing `output` is replaced only with
/// options.overwrite. Returns the report (per tensor: bytes, MSE, SQNR, max error,
/// saturation, non-finite count). Throws Error naming the file (and tensor) for an invalid
/// input (see SafetensorsFile::open), a plan error (see plan_quantization), a non-finite
/// value under options.strict, or an I/O failure. Uses num_threads() threads.
CheckpointReport quantize_checkpoint(const std::filesystem::path& input,
                                     const std::filesystem::path& output,
                                     const QuantizeCheckpointOptions& options = {});

/// Options of dequantize_checkpoint.
struct DequantizeCheckpointOptions {
  /// The dtype of dequantized tensors: float32, float16 or bfloat16 (rounded to nearest
  /// even); nullopt: each tensor's original dtype. Tensors stored as is are copied unchanged.
  std::optional<ScalarType> dtype = ScalarType::float32;
  bool overwrite = false;
  ProgressCallback progress;
};

/// What dequantize_checkpoint wrote.
struct DequantizeSummary {
  std::size_t dequantized = 0;  ///< quantized tensors turned back into floats
  std::size_t copied = 0;       ///< tensors copied bit for bit
  std::uint64_t input_bytes = 0;
  std::uint64_t output_bytes = 0;
};

/// Turns the lucidq checkpoint `input` back into a plain safetensors file `output`: each
/// quantized tensor W becomes W = scale * (code - zero_point) in options.dtype with its
/// original shape (bit for bit what dequantize() gives, then rounded to the dtype); the
/// companions W.scale and W.zero_point are dropped; other tensors and the user's
/// __metadata__ are copied. Streaming and atomic like quantize_checkpoint. Throws Error
/// naming the file (and tensor) when `input` is not a valid lucidq checkpoint (a plain
/// safetensors file is accepted and copied), when options.dtype is not a float type, when
/// `output` exists without options.overwrite, or on an I/O failure.
DequantizeSummary dequantize_checkpoint(const std::filesystem::path& input,
                                        const std::filesystem::path& output,
                                        const DequantizeCheckpointOptions& options = {});

}  // namespace lucid::quantization
