// quantize_gguf: a GGUF or safetensors file re-encoded tensor by tensor into a GGUF file, as
// llama-quantize does (presets, mixture, imatrix), with lucidq's report.
#include "lucid/quantization/gguf_quantize.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>

#include "checkpoint/checkpoint_format.hpp"
#include "core/streaming_metrics.hpp"
#include "io/safetensors_format.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/ggml_quants.hpp"
#include "lucid/quantization/runtime.hpp"

namespace lucid::quantization {
namespace {

// Elements converted, quantized and checked at a time by one thread.
constexpr std::int64_t kChunkElements = std::int64_t{1} << 18;

std::string ggml_name(GgmlType type) {
  return std::string(ggml_type_traits(type).name);
}

bool is_block_quantized(GgmlType type) {
  return ggml_type_traits(type).block_size > 1;
}

[[noreturn]] void fail_tensor(const std::string& file, std::string_view tensor,
                              const std::string& message) {
  throw Error(file + ": tensor " + detail::quoted(tensor) + ": " + message);
}

std::optional<GgmlType> ggml_type_of(ScalarType type) {
  switch (type) {
    case ScalarType::float32:
      return GgmlType::F32;
    case ScalarType::float16:
      return GgmlType::F16;
    case ScalarType::bfloat16:
      return GgmlType::BF16;
    case ScalarType::float64:
      return GgmlType::F64;
    case ScalarType::int8:
      return GgmlType::I8;
    case ScalarType::int16:
      return GgmlType::I16;
    case ScalarType::int32:
      return GgmlType::I32;
    case ScalarType::int64:
      return GgmlType::I64;
    default:
      return std::nullopt;
  }
}

bool is_float(GgmlType type) {
  return type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16 ||
         type == GgmlType::F64;
}

struct InputTensor {
  std::string name;
  std::vector<std::int64_t> ne;
  GgmlType type = GgmlType::F32;
  std::span<const std::byte> bytes;
};

// The input file, GGUF or safetensors, as a list of tensors.
class Input {
 public:
  explicit Input(const std::filesystem::path& path) : name_(path.string()) {
    if (is_gguf_path(path)) {
      gguf_.emplace(GgufFile::open(path));
      for (const GgufTensorInfo& t : gguf_->tensors())
        tensors_.push_back({t.name, t.ne, t.type, gguf_->bytes(t)});
      return;
    }
    safetensors_.emplace(SafetensorsFile::open(path));
    detail::check_not_lucidq_checkpoint(*safetensors_);
    for (const SafetensorsEntry& e : safetensors_->entries()) {
      const auto type = ggml_type_of(e.type);
      if (!type) {
        fail_tensor(name_, e.name,
                    std::string(to_safetensors_name(e.type)) +
                        " has no GGUF type (expected F32, F16, BF16, F64, I8, I16, I32 or I64)");
      }
      std::vector<std::int64_t> ne;
      try {
        ne = gguf_dims_of(e.shape);
      } catch (const Error& error) {
        fail_tensor(name_, e.name, error.what());
      }
      tensors_.push_back({e.name, std::move(ne), *type, safetensors_->bytes(e)});
    }
  }

  bool is_gguf() const { return gguf_.has_value(); }
  const std::string& name() const { return name_; }
  const std::vector<InputTensor>& tensors() const { return tensors_; }
  const GgufMetadata* metadata() const { return gguf_ ? &gguf_->metadata() : nullptr; }
  std::uint64_t file_size() const {
    if (gguf_) return gguf_->file_size();
    return safetensors_->header().data_offset + safetensors_->header().data_size;
  }
  // Throws when the input shrank while it was mapped (its views then read zeros).
  void check_intact() const {
    if (gguf_) {
      gguf_->check_intact();
    } else {
      safetensors_->check_intact();
    }
  }
  void release_pages(std::size_t index) const {
    if (gguf_) {
      gguf_->release_pages(gguf_->tensors()[index]);
    } else {
      safetensors_->release_pages(safetensors_->entries()[index]);
    }
  }

 private:
  std::string name_;
  std::optional<GgufFile> gguf_;
  std::optional<SafetensorsFile> safetensors_;
  std::vector<InputTensor> tensors_;
};

std::int64_t count_of(const GgufMetadata& m, const std::string& key) {
  const GgufValue* value = m.find(key);
  if (value == nullptr) return 0;
  if (value->is_array()) {  // per-layer arrays (some models): the first layer's value
    if (value->items().empty()) return 0;
    return static_cast<std::int64_t>(GgufValue(value->items().front()).as_count().value_or(0));
  }
  return static_cast<std::int64_t>(value->as_count().value_or(0));
}

LlamaModelFacts model_facts(const GgufMetadata& m, const std::vector<InputTensor>& tensors) {
  LlamaModelFacts facts;
  facts.architecture = m.get_string("general.architecture").value_or("");
  const std::string& a = facts.architecture;
  facts.n_layer = count_of(m, a + ".block_count");
  if (facts.n_layer == 0) {  // no hparam: count the blk.N layers
    for (const InputTensor& t : tensors) {
      if (!t.name.starts_with("blk.")) continue;
      facts.n_layer = std::max<std::int64_t>(facts.n_layer, std::atoll(t.name.c_str() + 4) + 1);
    }
  }
  facts.n_head = count_of(m, a + ".attention.head_count");
  facts.n_head_kv = m.find(a + ".attention.head_count_kv") != nullptr
                        ? count_of(m, a + ".attention.head_count_kv")
                        : facts.n_head;
  facts.n_expert = count_of(m, a + ".expert_count");
  return facts;
}

// The recipe's decision for one tensor, as a manual type: its ggml_type, or (skip) the
// tensor's own type.
void apply_recipe(const QuantRecipe& recipe, const std::string& file, MixtureTensor& t) {
  const RecipeRule* rule = recipe.match(t.name, t.ne.size());
  if (rule == nullptr) return;
  if (rule->settings) {
    fail_tensor(file, t.name,
                rule->origin + ": gives lucidq settings (" + describe(*rule->settings) +
                    "; expected \"ggml_type\" or \"skip\" for GGUF output)");
  }
  t.manual = rule->ggml_type.value_or(t.type);
  t.manual_origin = rule->origin + (rule->ggml_type ? "" : " (skip)");
}

void check_plan(const std::string& file, const InputTensor& in, GgufTensorPlan& p,
                const GgufQuantizeOptions& options) {
  if (p.output_type == p.input_type) return;
  if (is_block_quantized(p.input_type) && !options.allow_requantize) {
    fail_tensor(file, p.name,
                "requantizing from " + ggml_name(p.input_type) + " to " + ggml_name(p.output_type) +
                    " is disabled (expected an F32, F16 or BF16 input, or allow_requantize / "
                    "--allow-requantize)");
  }
  if (!is_float(p.input_type) && !is_block_quantized(p.input_type)) {
    fail_tensor(file, p.name,
                ggml_name(p.input_type) + " is not floating point (cannot encode it as " +
                    ggml_name(p.output_type) + ")");
  }
  if (!ggml_can_quantize(p.output_type)) {
    fail_tensor(file, p.name,
                ggml_name(p.output_type) +
                    " cannot be written by lucidq (expected f32, f16, bf16, q8_0, q4_0, q4_1, "
                    "q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K or iq4_nl)");
  }
  if (p.input_type != GgmlType::F64 && !ggml_can_quantize(p.input_type)) {
    fail_tensor(file, p.name, ggml_name(p.input_type) + " cannot be decoded by lucidq");
  }
  const std::int64_t block = ggml_type_traits(p.output_type).block_size;
  if (in.ne[0] % block != 0) {
    fail_tensor(file, p.name,
                "row length " + std::to_string(in.ne[0]) + " is not a multiple of " +
                    ggml_name(p.output_type) + "'s block size " + std::to_string(block));
  }
}

std::vector<GgufTensorPlan> plan_for(const Input& input, const GgufQuantizeOptions& options) {
  const std::vector<InputTensor>& tensors = input.tensors();
  MixtureOptions mixture = options.mixture;
  mixture.has_imatrix = options.imatrix != nullptr;
  std::vector<std::size_t> order(tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::vector<MixtureTensor> list;
  if (input.is_gguf()) {
    std::vector<std::string> names;
    for (const InputTensor& t : tensors)
      names.push_back(t.name);
    order = llama_tensor_order(names);
  }
  for (const std::size_t i : order) {
    MixtureTensor t{tensors[i].name, tensors[i].ne, tensors[i].type, std::nullopt, {}};
    apply_recipe(options.recipe, input.name(), t);
    list.push_back(std::move(t));
  }

  std::vector<MixtureChoice> choices;
  if (input.is_gguf()) {
    try {
      choices = choose_llama_types(list, model_facts(*input.metadata(), tensors), mixture);
    } catch (const Error& e) {
      throw Error(input.name() + ": " + e.what());
    }
  } else {
    // Not a llama model: every floating-point tensor of 2+ dimensions gets the default type.
    const GgmlType default_type = default_ggml_type(mixture.file_type);
    for (const MixtureTensor& t : list) {
      MixtureChoice c{t.type, false, "kept: fewer than 2 dimensions"};
      const bool quantizable = t.ne.size() >= 2 && is_float(t.type);
      if (!is_float(t.type)) c.reason = "kept: not floating point";
      if (t.manual) {
        c = {*t.manual, true, t.manual_origin + ": " + ggml_name(*t.manual)};
      } else if (quantizable) {
        c = {default_type, true, "default " + ggml_name(default_type)};
      }
      if (c.type != t.type && is_block_quantized(c.type)) {
        try {
          c.type = llama_fallback_type(t, c.type, &c.reason);
        } catch (const Error& e) {
          throw Error(input.name() + ": " + e.what());
        }
      }
      choices.push_back(std::move(c));
    }
  }

  std::vector<GgufTensorPlan> plan;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const InputTensor& in = tensors[order[k]];
    GgufTensorPlan p{in.name, in.ne, in.type, choices[k].type, choices[k].reason};
    if (p.output_type == p.input_type && choices[k].quantizable) {
      p.reason += " (already " + ggml_name(p.input_type) + ": copied)";
    }
    check_plan(input.name(), in, p, options);
    plan.push_back(std::move(p));
  }
  return plan;
}

GgufMetadata output_metadata(const Input& input, const GgufQuantizeOptions& options) {
  GgufMetadata m = input.is_gguf() ? *input.metadata() : options.metadata;
  for (const char* key : {"split.no", "split.count", "split.tensors.count"})
    m.erase(key);
  m.set("general.quantization_version", kGgmlQuantizationVersion);
  m.set("general.file_type", static_cast<std::uint32_t>(options.mixture.file_type));
  if (const ImportanceMatrix* imatrix = options.imatrix) {
    // As llama-quantize records it (its --override-kv strings hold at most 127 bytes).
    m.set("quantize.imatrix.file", imatrix->path.substr(0, 127));
    if (!imatrix->datasets.empty()) {
      m.set("quantize.imatrix.dataset", imatrix->datasets.front().substr(0, 127));
    }
    m.set("quantize.imatrix.entries_count", static_cast<std::uint32_t>(imatrix->entries.size()));
    if (imatrix->chunk_count > 0) {
      m.set("quantize.imatrix.chunks_count", static_cast<std::uint32_t>(imatrix->chunk_count));
    }
  }
  return m;
}

// The imatrix values for tensor `p` (n_per_row x n_expert), or nullptr; llama-quantize's
// checks: a wrong size is an error except for token_embd.
const float* imatrix_for(const GgufTensorPlan& p, const GgufQuantizeOptions& options,
                         const std::string& file, std::string& note) {
  if (options.imatrix == nullptr) return nullptr;
  const std::vector<float>* values = options.imatrix->find(p.name);
  if (values == nullptr) {
    note = "; no imatrix entry";
    return nullptr;
  }
  const std::int64_t expected = p.ne[0] * (p.ne.size() > 2 ? p.ne[2] : 1);
  if (static_cast<std::int64_t>(values->size()) != expected) {
    if (p.name == "token_embd.weight" || p.name == "per_layer_token_embd.weight") {
      note = "; imatrix entry of the wrong size ignored";
      return nullptr;
    }
    fail_tensor(file, p.name,
                "the imatrix entry holds " + std::to_string(values->size()) + " values (expected " +
                    std::to_string(expected) + ": one per input column, times the expert count)");
  }
  note = "; imatrix";
  return values->data();
}

// Converts, quantizes and checks one tensor, chunk by chunk on the job's threads.
class TensorEncoder {
 public:
  TensorEncoder(const std::string& file, const GgufTensorPlan& plan, const InputTensor& in,
                const float* imatrix, bool keep_floats)
      : file_(file), plan_(plan), in_(in), imatrix_(imatrix), keep_floats_(keep_floats) {}

  // Fills `out` (the encoded bytes); returns the error metrics of the decode against the input.
  ErrorMetrics run(std::vector<std::byte>& out) {
    const std::int64_t n_per_row = in_.ne[0];
    std::int64_t numel = 1;
    for (const std::int64_t d : in_.ne)
      numel *= d;
    const std::int64_t rows = n_per_row == 0 ? 0 : numel / n_per_row;
    const std::int64_t rows_per_matrix =
        in_.ne.size() > 1 ? std::max<std::int64_t>(in_.ne[1], 1) : 1;
    const std::int64_t experts = in_.ne.size() > 2 ? in_.ne[2] : 1;
    const std::int64_t out_row = ggml_row_size(plan_.output_type, n_per_row);
    const std::int64_t in_row = ggml_row_size(in_.type, n_per_row);
    out.resize(static_cast<std::size_t>(rows * out_row));
    if (keep_floats_) {
      original_.resize(static_cast<std::size_t>(numel));
      reconstructed_.resize(static_cast<std::size_t>(numel));
    }
    // Chunks of whole rows that never cross a matrix (each expert has its imatrix slice).
    const std::int64_t chunk_rows = std::clamp<std::int64_t>(
        kChunkElements / std::max<std::int64_t>(n_per_row, 1), 1, rows_per_matrix);
    std::vector<std::pair<std::int64_t, std::int64_t>> chunks;  // (first row, rows)
    for (std::int64_t matrix_start = 0; matrix_start < rows; matrix_start += rows_per_matrix) {
      const std::int64_t matrix_end = std::min(rows, matrix_start + rows_per_matrix);
      for (std::int64_t r = matrix_start; r < matrix_end; r += chunk_rows)
        chunks.emplace_back(r, std::min(chunk_rows, matrix_end - r));
    }
    std::vector<detail::ErrorMetricsAccumulator> sums(chunks.size());
    std::exception_ptr error;
    std::mutex error_mutex;
    const int threads = static_cast<int>(
        std::clamp<std::int64_t>(static_cast<std::int64_t>(chunks.size()), 1, num_threads()));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      try {
        const auto [first, count] = chunks[c];
        const std::int64_t expert = (first / rows_per_matrix) % experts;
        const float* weights = imatrix_ ? imatrix_ + expert * n_per_row : nullptr;
        encode_chunk(first, count, n_per_row, in_row, out_row, weights, out, sums[c]);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    // Fold the chunks' sums in order (the result does not depend on the thread count).
    detail::ErrorMetricsAccumulator total;
    for (const detail::ErrorMetricsAccumulator& s : sums)
      total.merge(s);
    return total.finish();
  }

  const std::vector<float>& original() const {
    return original_;
  }
  const std::vector<float>& reconstructed() const {
    return reconstructed_;
  }

 private:
  void encode_chunk(std::int64_t first, std::int64_t count, std::int64_t n_per_row,
                    std::int64_t in_row, std::int64_t out_row, const float* weights,
                    std::vector<std::byte>& out, detail::ErrorMetricsAccumulator& sums) {
    const std::int64_t n = count * n_per_row;
    // Per-thread buffers, kept from chunk to chunk (fresh memory costs a page fault per page).
    thread_local std::vector<float> x;
    thread_local std::vector<float> x_hat;
    x.resize(static_cast<std::size_t>(n));
    x_hat.resize(static_cast<std::size_t>(n));
    const std::byte* src = in_.bytes.data() + first * in_row;
    if (in_.type == GgmlType::F32) {
      std::memcpy(x.data(), src, static_cast<std::size_t>(n) * 4);  // the mapping may be unaligned
    } else if (in_.type == GgmlType::F64) {
      for (std::int64_t k = 0; k < n; ++k) {
        double v;
        std::memcpy(&v, src + 8 * k, 8);
        x[static_cast<std::size_t>(k)] = static_cast<float>(v);
      }
    } else {
      ggml_dequantize_rows(in_.type, src, x.data(), count, n_per_row);
    }
    for (std::int64_t k = 0; k < n; ++k) {
      if (!std::isfinite(x[static_cast<std::size_t>(k)])) {
        fail_tensor(file_, plan_.name,
                    "value " + std::to_string(first * n_per_row + k) + " is " +
                        std::to_string(x[static_cast<std::size_t>(k)]) +
                        " (expected finite weights: ggml's block types cannot encode NaN or Inf)");
      }
    }
    std::byte* dst = out.data() + first * out_row;
    try {
      ggml_quantize_rows(plan_.output_type, x.data(), dst, count, n_per_row, weights);
      ggml_dequantize_rows(plan_.output_type, dst, x_hat.data(), count, n_per_row);
    } catch (const Error& e) {
      fail_tensor(file_, plan_.name,
                  std::string("rows ") + std::to_string(first) + "..: " + e.what());
    }
    sums.add(x.data(), x_hat.data(), n);
    if (keep_floats_) {
      std::copy(x.begin(), x.begin() + n, original_.begin() + first * n_per_row);
      std::copy(x_hat.begin(), x_hat.begin() + n, reconstructed_.begin() + first * n_per_row);
    }
  }

  const std::string& file_;
  const GgufTensorPlan& plan_;
  const InputTensor& in_;
  const float* imatrix_;
  bool keep_floats_;
  std::vector<float> original_;
  std::vector<float> reconstructed_;
};

}  // namespace

std::vector<GgufTensorPlan> plan_gguf_quantization(const std::filesystem::path& input,
                                                   const GgufQuantizeOptions& options) {
  const Input in(input);
  return plan_for(in, options);
}

CheckpointReport quantize_gguf(const std::filesystem::path& input,
                               const std::filesystem::path& output,
                               const GgufQuantizeOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const Input in(input);
  const std::vector<GgufTensorPlan> plan = plan_for(in, options);
  std::map<std::string_view, std::size_t> index;
  for (std::size_t i = 0; i < in.tensors().size(); ++i)
    index.emplace(in.tensors()[i].name, i);

  std::vector<GgufTensorSpec> specs;
  std::uint64_t bytes_total = 0;
  for (const GgufTensorPlan& p : plan) {
    specs.push_back({p.name, p.ne, p.output_type});
    bytes_total += in.tensors()[index.at(p.name)].bytes.size();
  }
  const GgufMetadata metadata = output_metadata(in, options);
  GgufWriter out(output, metadata, std::move(specs), options.overwrite);

  CheckpointReport report;
  report.input = input.string();
  report.output = output.string();
  report.input_file_bytes = in.file_size();
  CheckpointProgress progress;
  progress.tensor_count = plan.size();
  progress.bytes_total = bytes_total;
  std::vector<std::byte> encoded;
  try {
    for (const GgufTensorPlan& p : plan) {
      const std::size_t i = index.at(p.name);
      const InputTensor& t = in.tensors()[i];
      TensorReport r;
      r.name = p.name;
      r.shape = Shape(p.ne.rbegin(), p.ne.rend());
      r.input_ggml_type = p.input_type;
      r.reason = p.reason;
      r.bytes_before = t.bytes.size();
      if (p.output_type == p.input_type) {
        if (p.input_type == GgmlType::F32 || p.input_type == GgmlType::F16 ||
            p.input_type == GgmlType::BF16) {
          const ScalarType st = p.input_type == GgmlType::F32   ? ScalarType::float32
                                : p.input_type == GgmlType::F16 ? ScalarType::float16
                                                                : ScalarType::bfloat16;
          r.metrics.nonfinite_count =
              detail::count_nonfinite(TensorView(t.bytes.data(), st, r.shape));
          if (options.strict && r.metrics.nonfinite_count > 0) {
            fail_tensor(in.name(), p.name,
                        std::to_string(r.metrics.nonfinite_count) +
                            " non-finite values (NaN or Inf) (expected finite values: strict "
                            "checking is on)");
          }
        }
        out.write(p.name, t.bytes);
        r.bytes_after = t.bytes.size();
      } else {
        std::string note;
        const float* imatrix = imatrix_for(p, options, in.name(), note);
        r.reason += note;
        TensorEncoder encoder(in.name(), p, t, imatrix, static_cast<bool>(options.on_tensor));
        r.metrics = encoder.run(encoded);
        r.ggml_type = p.output_type;
        r.bytes_after = encoded.size();
        if (options.on_tensor) {
          options.on_tensor(p.name, TensorView(std::span<const float>(encoder.original()), r.shape),
                            TensorView(std::span<const float>(encoder.reconstructed()), r.shape));
        }
        out.write(p.name, encoded);
      }
      in.release_pages(i);
      report.tensors.push_back(std::move(r));
      ++progress.tensors_done;
      progress.bytes_done += t.bytes.size();
      progress.tensor = p.name;
      if (options.progress) options.progress(progress);
      in.check_intact();
    }
  } catch (const Error&) {
    in.check_intact();  // data read as zeros from a shrinking input: report that instead
    throw;
  }
  out.commit();
  std::error_code error;
  const auto written = std::filesystem::file_size(output, error);
  report.output_file_bytes = error ? 0 : written;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace lucid::quantization
