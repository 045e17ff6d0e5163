// llama-quantize's presets and per-tensor type rules (llama-quant.cpp), for dense and MoE llamas.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <numeric>

#include "io/safetensors_format.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/llama_mixture.hpp"

namespace lucid::quantization {
namespace {

using F = LlamaFileType;
using T = GgmlType;

struct Preset {
  F file_type;
  std::string_view name;
  T default_type;
};

// In llama-quantize's QUANT_OPTIONS order (the ones whose block types lucidq writes).
constexpr std::array<Preset, 18> kPresets{{
    {F::Q4_0, "Q4_0", T::Q4_0},
    {F::Q4_1, "Q4_1", T::Q4_1},
    {F::Q5_0, "Q5_0", T::Q5_0},
    {F::Q5_1, "Q5_1", T::Q5_1},
    {F::IQ4_NL, "IQ4_NL", T::IQ4_NL},
    {F::Q2_K, "Q2_K", T::Q2_K},
    {F::Q3_K_S, "Q3_K_S", T::Q3_K},
    {F::Q3_K_M, "Q3_K_M", T::Q3_K},
    {F::Q3_K_L, "Q3_K_L", T::Q3_K},
    {F::Q4_K_S, "Q4_K_S", T::Q4_K},
    {F::Q4_K_M, "Q4_K_M", T::Q4_K},
    {F::Q5_K_S, "Q5_K_S", T::Q5_K},
    {F::Q5_K_M, "Q5_K_M", T::Q5_K},
    {F::Q6_K, "Q6_K", T::Q6_K},
    {F::Q8_0, "Q8_0", T::Q8_0},
    {F::F16, "F16", T::F16},
    {F::BF16, "BF16", T::BF16},
    {F::F32, "F32", T::F32},
}};

const Preset& preset_of(F type) {
  for (const Preset& p : kPresets) {
    if (p.file_type == type) return p;
  }
  throw Error("llama file type " + std::to_string(static_cast<std::uint32_t>(type)) +
              " is not a preset (expected one of " + llama_file_type_names() + ")");
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

enum class Category {
  token_embd,
  attn_q,
  attn_v,  // attn_v, attn_qkv and attn_kv_b: the "more sensitive" ones
  attn_k,
  attn_output,
  ffn_up,
  ffn_gate,
  ffn_down,
  output,
  other
};

bool contains(std::string_view name, std::string_view part) {
  return name.find(part) != std::string_view::npos;
}

Category category_of(std::string_view name) {
  if (name == "output.weight") return Category::output;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") {
    return Category::token_embd;
  }
  if (contains(name, "attn_qkv.weight") || contains(name, "attn_kv_b.weight") ||
      contains(name, "attn_v.weight")) {
    return Category::attn_v;
  }
  if (contains(name, "attn_k.weight")) return Category::attn_k;
  if (contains(name, "attn_q.weight")) return Category::attn_q;
  if (contains(name, "attn_output.weight")) return Category::attn_output;
  if (contains(name, "ffn_up")) return Category::ffn_up;
  if (contains(name, "ffn_gate")) return Category::ffn_gate;
  if (contains(name, "ffn_down")) return Category::ffn_down;
  return Category::other;
}

// The layer number "blk.N." starts with, as sscanf("blk.%d.") reads it; -1 without one.
int layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  const std::string rest(name.substr(4));
  const char* begin = rest.c_str();
  char* end = nullptr;
  const long value = std::strtol(begin, &end, 10);
  if (end == begin) return -1;
  return static_cast<int>(std::clamp<long>(value, -2147483647L - 1, 2147483647L));
}

bool use_more_bits(std::int64_t i, std::int64_t n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

bool is_block_quantized(T type) {
  return ggml_type_traits(type).block_size > 1;
}

std::string type_name(T type) {
  return std::string(ggml_type_traits(type).name);
}

// llama_tensor_get_type_impl's counters and facts.
struct State {
  const LlamaModelFacts& model;
  const MixtureOptions& options;
  bool tied_embeddings = true;
  std::int64_t n_attention_wv = 0;
  std::int64_t i_attention_wv = 0;
  std::int64_t i_ffn_down = 0;
  std::int64_t i_ffn_gate = 0;
  std::int64_t i_ffn_up = 0;

  bool falcon() const { return model.architecture == "falcon"; }
  std::int64_t n_gqa() const { return model.n_head_kv == 0 ? 0 : model.n_head / model.n_head_kv; }
  bool is_70b() const {
    return model.architecture == "llama" && model.n_layer == 80 && model.n_head != model.n_head_kv;
  }
  // (i_layer, n_layer) for the layer-counted rules: the counter, or for MoE models the
  // layer parsed from the name.
  std::pair<std::int64_t, std::int64_t> layer_info(std::int64_t counter,
                                                   std::string_view name) const {
    if (model.n_expert > 1) {
      const int layer = layer_of(name);
      if (layer < 0 || layer >= model.n_layer) {
        throw Error("tensor " + detail::quoted(name) + ": layer " + std::to_string(layer) +
                    " (expected blk.N. with N in [0, " + std::to_string(model.n_layer) +
                    ") for a model with experts)");
      }
      return {layer, model.n_layer};
    }
    return {counter, model.n_layer};
  }
};

// llama_tensor_get_type_impl for the presets lucidq offers; `t` is the default type.
T mixture_type(State& s, T t, const MixtureTensor& tensor, Category category, std::string& reason) {
  const F f = s.options.file_type;
  const T before = t;
  auto note = [&](std::string why) {
    if (t != before) reason = "mixture: " + std::move(why);
  };
  if (category == Category::output || (s.tied_embeddings && category == Category::token_embd)) {
    const std::string what = category == Category::output ? "output" : "tied token_embd";
    if (s.options.output_tensor_type) {
      t = *s.options.output_tensor_type;
      reason = "--output-tensor-type";
    } else if (s.falcon() || tensor.ne[0] % ggml_type_traits(t).block_size != 0) {
      t = T::Q8_0;
      note(what + " (row not a multiple of the block, or falcon): q8_0");
    } else if (t != T::Q8_0) {
      t = T::Q6_K;
      note(what + ": q6_K");
    }
  } else if (category == Category::token_embd) {
    // No preset lucidq offers changes an untied token_embd.
  } else if (category == Category::attn_v) {
    const std::int64_t i = s.i_attention_wv;
    if (f == F::Q2_K) {
      t = s.n_gqa() >= 4 ? T::Q4_K : T::Q3_K;
    } else if (f == F::Q3_K_M) {
      t = i < 2 ? T::Q5_K : T::Q4_K;
    } else if (f == F::Q3_K_L) {
      t = T::Q5_K;
    } else if (f == F::IQ4_NL && s.n_gqa() >= 4) {
      t = T::Q5_K;
    } else if ((f == F::Q4_K_M || f == F::Q5_K_M) && use_more_bits(i, s.n_attention_wv)) {
      t = T::Q6_K;
    } else if (f == F::Q4_K_S && i < 4) {
      t = T::Q5_K;
    }
    if (s.is_70b() && (t == T::Q3_K || t == T::Q4_K)) t = T::Q5_K;
    if (s.model.n_expert == 8) t = T::Q8_0;
    note("attn_v #" + std::to_string(i) + " of " + std::to_string(s.n_attention_wv) + ": " +
         type_name(t));
    ++s.i_attention_wv;
  } else if (category == Category::attn_k) {
    if (s.model.n_expert == 8) t = T::Q8_0;
    note("attn_k with 8 experts: q8_0");
  } else if (category == Category::ffn_down) {
    const auto [i, n] = s.layer_info(s.i_ffn_down, tensor.name);
    const bool more = use_more_bits(i, n);
    if (f == F::Q2_K) {
      t = T::Q3_K;
    } else if (f == F::Q3_K_M) {
      t = i < n / 16 ? T::Q5_K : (!s.falcon() || more) ? T::Q4_K : T::Q3_K;
    } else if (f == F::Q3_K_L) {
      t = s.falcon() ? T::Q4_K : T::Q5_K;
    } else if (f == F::Q4_K_M) {
      if (s.falcon()) {
        t = i < n / 16 ? T::Q6_K : more ? T::Q5_K : T::Q4_K;
      } else if (more) {
        t = T::Q6_K;
      }
    } else if (i < n / 8 && f == F::IQ4_NL && !s.options.has_imatrix) {
      t = T::Q5_K;
    } else if (f == F::Q5_K_M && more) {
      t = T::Q6_K;
    } else if (f == F::Q4_K_S && !s.falcon() && i < n / 8) {
      t = T::Q5_K;
    } else if ((f == F::Q4_0 || f == F::Q5_0) && s.options.has_imatrix && i < n / 8) {
      t = f == F::Q4_0 ? T::Q4_1 : T::Q5_1;
    }
    note("ffn_down layer " + std::to_string(i) + " of " + std::to_string(n) + ": " + type_name(t));
    ++s.i_ffn_down;
  } else if (category == Category::attn_output) {
    if (!s.falcon()) {
      if (s.model.n_expert == 8) {
        if (f == F::Q2_K || f == F::Q3_K_S || f == F::Q3_K_M || f == F::IQ4_NL || f == F::Q4_K_S ||
            f == F::Q4_K_M) {
          t = T::Q5_K;
        }
      } else if (f == F::Q2_K) {
        t = T::Q3_K;
      } else if (f == F::Q3_K_M) {
        t = T::Q4_K;
      } else if (f == F::Q3_K_L) {
        t = T::Q5_K;
      }
    } else if (f == F::Q3_K_L) {
      t = T::Q4_K;
    }
    note("attn_output: " + type_name(t));
  } else if (category == Category::ffn_gate) {
    s.layer_info(s.i_ffn_gate, tensor.name);  // no rule for these presets, but checks the layer
    ++s.i_ffn_gate;
  } else if (category == Category::ffn_up) {
    s.layer_info(s.i_ffn_up, tensor.name);
    ++s.i_ffn_up;
  }
  return t;
}

}  // namespace

GgmlType llama_fallback_type(const MixtureTensor& tensor, GgmlType t, std::string* reason) {
  const std::int64_t columns = tensor.ne[0];
  if (columns % ggml_type_traits(t).block_size == 0) return t;
  T to;
  switch (t) {
    case T::IQ1_S:
    case T::IQ1_M:
    case T::IQ2_XXS:
    case T::IQ2_XS:
    case T::IQ2_S:
    case T::IQ3_XXS:
    case T::IQ3_S:
    case T::IQ4_XS:
      to = T::IQ4_NL;
      break;
    case T::Q2_K:
    case T::Q3_K:
    case T::TQ1_0:
    case T::TQ2_0:
      to = T::Q4_0;
      break;
    case T::Q4_K:
      to = T::Q5_0;
      break;
    case T::Q5_K:
      to = T::Q5_1;
      break;
    case T::Q6_K:
      to = T::Q8_0;
      break;
    default:
      throw Error("tensor " + detail::quoted(tensor.name) + ": row length " +
                  std::to_string(columns) + " is not a multiple of " + type_name(t) +
                  "'s block size " + std::to_string(ggml_type_traits(t).block_size) +
                  " and llama-quantize defines no fallback for " + type_name(t) +
                  " (expected a type whose block divides the row)");
  }
  if (columns % ggml_type_traits(to).block_size != 0) to = T::F16;
  if (reason != nullptr) {
    *reason = "fallback " + type_name(t) + " -> " + type_name(to) + " (row length " +
              std::to_string(columns) + ")";
  }
  return to;
}

std::string_view to_string(LlamaFileType type) {
  return preset_of(type).name;
}

std::optional<LlamaFileType> llama_file_type_from_name(std::string_view name) {
  const std::string wanted = upper(name);
  if (wanted == "Q3_K") return F::Q3_K_M;
  if (wanted == "Q4_K") return F::Q4_K_M;
  if (wanted == "Q5_K") return F::Q5_K_M;
  for (const Preset& p : kPresets) {
    if (p.name == wanted) return p.file_type;
  }
  return std::nullopt;
}

std::string llama_file_type_names() {
  std::string out;
  for (const Preset& p : kPresets)
    out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

GgmlType default_ggml_type(LlamaFileType type) {
  return preset_of(type).default_type;
}

bool llama_tensor_allows_quantization(std::string_view name, std::size_t n_dims,
                                      bool leave_output_tensor) {
  if (n_dims < 2) return false;
  if (!name.ends_with("weight")) return false;
  if (contains(name, "_norm.weight")) return false;
  if (leave_output_tensor && name == "output.weight") return false;
  if (name == "position_embd.weight" || name == "token_types.weight") return false;
  static constexpr std::string_view kSkipped[] = {"ffn_gate_inp.weight",
                                                  "ffn_gate_tid2eid.weight",
                                                  "altup",
                                                  "laurel",
                                                  "per_layer_model_proj",
                                                  "ssm_conv1d",
                                                  "shortconv.conv.weight",
                                                  "indexer.k_proj.weight",
                                                  "indexer.q_proj.weight",
                                                  "time_mix_first.weight",
                                                  "time_mix_w0.weight",
                                                  "time_mix_w1.weight",
                                                  "time_mix_w2.weight",
                                                  "time_mix_v0.weight",
                                                  "time_mix_v1.weight",
                                                  "time_mix_v2.weight",
                                                  "time_mix_a0.weight",
                                                  "time_mix_a1.weight",
                                                  "time_mix_a2.weight",
                                                  "time_mix_g1.weight",
                                                  "time_mix_g2.weight",
                                                  "time_mix_decay_w1.weight",
                                                  "time_mix_decay_w2.weight",
                                                  "time_mix_lerp_fused.weight",
                                                  "attn_rel_b.weight",
                                                  ".position_embd",
                                                  "sam.pos_embd",
                                                  "sam.neck.",
                                                  "sam.net_",
                                                  ".rel_pos",
                                                  ".patch_embd",
                                                  ".patch_merger",
                                                  "a.rvq.codebook",
                                                  "mm.a.code_embd"};
  return std::none_of(std::begin(kSkipped), std::end(kSkipped),
                      [&](std::string_view part) { return contains(name, part); });
}

std::vector<std::size_t> llama_tensor_order(const std::vector<std::string>& names) {
  std::vector<std::size_t> order(names.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const int la = layer_of(names[a]);
    const int lb = layer_of(names[b]);
    if (la != lb) return la < lb;
    return names[a] < names[b];
  });
  return order;
}

std::vector<MixtureChoice> choose_llama_types(const std::vector<MixtureTensor>& tensors,
                                              const LlamaModelFacts& model,
                                              const MixtureOptions& options) {
  State state{model, options};
  for (const MixtureTensor& t : tensors) {
    const Category category = category_of(t.name);
    if (category == Category::attn_v) ++state.n_attention_wv;
    if (category == Category::output) state.tied_embeddings = false;
  }
  const T default_type = default_ggml_type(options.file_type);
  std::vector<MixtureChoice> out;
  out.reserve(tensors.size());
  for (const MixtureTensor& t : tensors) {
    MixtureChoice choice;
    choice.type = t.type;
    const Category category = category_of(t.name);
    if (!llama_tensor_allows_quantization(t.name, t.ne.size(), options.leave_output_tensor)) {
      choice.reason = t.ne.size() < 2 ? "kept: fewer than 2 dimensions"
                                      : "kept: llama-quantize does not quantize this tensor";
    } else if (options.token_embedding_type && category == Category::token_embd) {
      choice = {*options.token_embedding_type, true, "--token-embedding-type"};
    } else if (options.output_tensor_type && category == Category::output) {
      choice = {*options.output_tensor_type, true, "--output-tensor-type"};
    } else {
      choice.quantizable = true;
      choice.type = default_type;
      choice.reason = "default " + type_name(default_type);
      if (t.manual) {
        choice.type = *t.manual;
        choice.reason = t.manual_origin + ": " + type_name(*t.manual);
        if (is_block_quantized(choice.type)) {
          choice.type = llama_fallback_type(t, choice.type, &choice.reason);
        }
      } else if (is_block_quantized(default_type)) {
        if (options.pure) {
          choice.reason += " (--pure)";
        } else {
          choice.type = mixture_type(state, default_type, t, category, choice.reason);
        }
        choice.type = llama_fallback_type(t, choice.type, &choice.reason);
      }
    }
    out.push_back(std::move(choice));
  }
  return out;
}

}  // namespace lucid::quantization
