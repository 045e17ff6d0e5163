// The tensor quantizer of `lucidq quantize --method`: RTN, GPTQ, HQQ or importance-weighted RTN per
// weight tensor.
#include <string>

#include "lucid/quantization/checkpoint_algorithms.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/quantize.hpp"
#include "lucid/quantization/weight_grid.hpp"
#include "lucid/quantization/weighted_rtn.hpp"

namespace lucid::quantization {
namespace {

const char* method_name(WeightMethod m) {
  switch (m) {
    case WeightMethod::rtn:
      return "rtn";
    case WeightMethod::gptq:
      return "gptq";
    case WeightMethod::hqq:
      return "hqq";
    case WeightMethod::weighted_rtn:
      return "weighted-rtn";
  }
  return "?";
}

// The weight grid of `settings` for a rank-2 tensor, or Error saying what the method needs.
WeightGrid grid_for(std::string_view name, const Shape& shape, const QuantSettings& s,
                    WeightMethod method) {
  const std::string who = std::string(method_name(method)) + ": tensor " + std::string(name);
  if (shape.size() != 2) {
    throw Error(who + " has shape " + to_string(shape) +
                "; expected a rank-2 Linear weight [N, K] (exclude it with --exclude)");
  }
  if (!is_per_channel(s.qscheme)) {
    throw Error(who + " is set to " + describe(s) +
                "; expected a per_channel scheme (per output channel or per group)");
  }
  if (s.group_size > 0 ? s.axis != 1 : s.axis != 0) {
    throw Error(who + " is set to " + describe(s) +
                "; expected groups along the input (axis -1) or one scale per output row (axis 0)");
  }
  return WeightGrid{s.qdtype, is_symmetric(s.qscheme), s.group_size};
}

// An importance matrix feeds weighted-rtn only (no Hessian, no other statistics), and never
// beside a statistics file.
void check_importance_use(const WeightQuantizerOptions& options) {
  const std::string file = options.importance->path + " (a llama.cpp importance matrix)";
  if (options.statistics) {
    throw Error("give one statistics file, not both " + options.statistics->path + " and " + file);
  }
  if (options.method == WeightMethod::weighted_rtn) return;
  throw Error(
      std::string("method ") + method_name(options.method) + ": " + file +
      " holds one weight per input column, which only --method weighted-rtn uses; expected " +
      (options.method == WeightMethod::gptq
           ? "lucidq calibration statistics with the Hessian (docs/formats.md)"
           : "no --calibration, or lucidq calibration statistics for the tr(dW H dW^T) report"));
}

// The imatrix weights of tensor `name` [N, K]: one per input column, or Error naming the tensor.
const std::vector<float>& imatrix_entry(const ImportanceMatrix& imatrix, std::string_view name,
                                        const Shape& shape) {
  const std::vector<float>* values = imatrix.find(name);
  if (values == nullptr) {
    const std::string first =
        imatrix.entries.empty() ? "" : ", the first '" + imatrix.entries.begin()->first + "'";
    throw Error("weighted-rtn: " + imatrix.path + " (" + imatrix.format + " imatrix, " +
                std::to_string(imatrix.entries.size()) +
                (imatrix.entries.size() == 1 ? " entry" : " entries") + first +
                ") has no entry for tensor " + std::string(name) +
                " (expected the checkpoint's tensor names; exclude it with --exclude)");
  }
  if (static_cast<std::int64_t>(values->size()) != shape[1]) {
    throw Error("weighted-rtn: " + imatrix.path + ": the imatrix entry for tensor " +
                std::string(name) + " holds " + std::to_string(values->size()) +
                " values; expected " + std::to_string(shape[1]) +
                ", one per input column of its shape " + to_string(shape));
  }
  return *values;
}

}  // namespace

WeightMethod weight_method_from_string(const std::string& name) {
  if (name == "rtn") return WeightMethod::rtn;
  if (name == "gptq") return WeightMethod::gptq;
  if (name == "hqq") return WeightMethod::hqq;
  if (name == "weighted-rtn" || name == "imatrix") return WeightMethod::weighted_rtn;
  throw Error("method '" + name + "' is not known; expected rtn, gptq, hqq or weighted-rtn");
}

TensorQuantizer make_weight_quantizer(WeightQuantizerOptions options,
                                      std::function<void(const std::string&)> warn) {
  if (options.importance) check_importance_use(options);
  const bool needs_stats =
      options.method == WeightMethod::gptq || options.method == WeightMethod::weighted_rtn;
  if (needs_stats && !options.statistics && !options.importance) {
    throw Error(std::string("method ") + method_name(options.method) +
                " needs calibration statistics (--calibration stats.safetensors" +
                (options.method == WeightMethod::weighted_rtn ? ", or a llama.cpp imatrix)" : ")"));
  }
  return [options = std::move(options), warn = std::move(warn), needs_stats](
             std::string_view name, const TensorView& x,
             const QuantSettings& settings) -> std::optional<TensorQuantization> {
    const TensorCalibration* stats = nullptr;
    if (options.statistics) {
      const auto it = options.statistics->tensors.find(std::string(name));
      if (it != options.statistics->tensors.end()) stats = &it->second;
    }
    if (needs_stats && stats == nullptr && !options.importance) {
      throw Error(std::string(method_name(options.method)) + ": " + options.statistics->path +
                  " has no statistics for tensor " + std::string(name) +
                  " (exclude it with --exclude, or collect statistics for it)");
    }
    if (stats != nullptr && x.shape.size() == 2 && stats->features != x.shape[1]) {
      throw Error(std::string(method_name(options.method)) + ": " + options.statistics->path +
                  " has statistics for " + std::to_string(stats->features) +
                  " input features for tensor " + std::string(name) + ", which has " +
                  std::to_string(x.shape[1]));
    }
    const bool plain_rtn = options.method == WeightMethod::rtn;
    if (plain_rtn && (stats == nullptr || stats->hessian.empty() || x.shape.size() != 2 ||
                      !is_per_channel(settings.qscheme) ||
                      (settings.group_size > 0 ? settings.axis != 1 : settings.axis != 0))) {
      return std::nullopt;  // the job's own RTN, without a proxy
    }
    const WeightGrid grid = grid_for(name, x.shape, settings, options.method);
    TensorQuantization out;
    out.method = method_name(options.method);
    switch (options.method) {
      case WeightMethod::rtn:
        out.tensor = quantize_rtn(x, grid);
        out.method.clear();
        break;
      case WeightMethod::gptq: {
        if (stats->hessian.empty()) {
          throw Error("gptq: " + options.statistics->path + " has no " + std::string(name) +
                      ".hessian; expected the statistics to include H");
        }
        GptqOptions g;
        g.grid = grid;
        g.percent_damp = options.percent_damp;
        g.act_order = options.act_order;
        g.static_groups = true;
        GptqResult r = gptq_quantize(x, stats->hessian, g);
        if (r.fell_back_to_rtn && warn) warn(std::string(name) + ": " + r.warning);
        out.tensor = std::move(r.quantized);
        break;
      }
      case WeightMethod::hqq: {
        HqqOptions h = options.hqq;
        h.grid = grid;
        out.tensor = hqq_quantize(x, h).quantized;
        break;
      }
      case WeightMethod::weighted_rtn: {
        std::vector<double> importance;
        if (stats != nullptr) {
          importance.resize(stats->square_sum.size());
          for (std::size_t j = 0; j < importance.size(); ++j) {
            importance[j] = stats->square_sum[j] / static_cast<double>(stats->rows);
          }
        } else {
          const std::vector<float>& w = imatrix_entry(*options.importance, name, x.shape);
          importance.assign(w.begin(), w.end());
        }
        out.tensor = quantize_weighted_rtn(x, importance, grid);
        break;
      }
    }
    if (stats != nullptr && !stats->hessian.empty()) {
      out.output_error_proxy = output_error_proxy(x, dequantize(out.tensor), stats->hessian);
    }
    return out;
  };
}

}  // namespace lucid::quantization
