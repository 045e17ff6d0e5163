// The weight-algorithm flags of `lucidq quantize` and the quantizer they build.
#include "method_flags.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "lucid/quantization/checkpoint_algorithms.hpp"

namespace lucidq::cli {

namespace Q = lucid::quantization;

void MethodFlags::apply(Q::QuantizeCheckpointOptions& options) const {
  Q::WeightQuantizerOptions w;
  w.method = Q::weight_method_from_string(method);
  if (!calibration.empty()) Q::load_weight_statistics(w, calibration);
  w.percent_damp = damp;
  w.act_order = act_order;
  if (w.method == Q::WeightMethod::rtn && !w.statistics && !w.importance) return;
  options.quantizer = Q::make_weight_quantizer(std::move(w), [](const std::string& message) {
    fmt::print(stderr, "lucidq: warning: {}\n", message);
  });
}

void add_method_flags(CLI::App& cmd, const std::shared_ptr<MethodFlags>& flags) {
  cmd.add_option("--method", flags->method,
                 "Weight algorithm: rtn (default), gptq, hqq, weighted-rtn (importance-weighted "
                 "scales, llama.cpp's imatrix idea); gptq and weighted-rtn need --calibration")
      ->type_name("NAME");
  cmd.add_option("--calibration", flags->calibration,
                 "Calibration statistics (docs/formats.md; lucidq.save_calibration_statistics "
                 "writes them); the report then adds tr(dW H dW^T) per tensor. weighted-rtn "
                 "also takes a llama.cpp imatrix (GGUF or legacy .dat, told by content) whose "
                 "entries are named as the checkpoint's tensors")
      ->type_name("STATS.safetensors|IMATRIX");
  cmd.add_option("--damp", flags->damp, "GPTQ damping, a fraction of mean(diag H) (default 0.01)")
      ->type_name("FRACTION");
  cmd.add_flag("--act-order", flags->act_order,
               "GPTQ: quantize columns by decreasing diag(H) (groups stay static)");
}

}  // namespace lucidq::cli
