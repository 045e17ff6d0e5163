// The weight-algorithm flags of `lucidq quantize`: --method, --calibration, --damp, --act-order.
#pragma once

#include <memory>
#include <string>

#include "lucid/quantization/checkpoint.hpp"

namespace CLI {
class App;
}

namespace lucidq::cli {

struct MethodFlags {
  std::string method = "rtn";
  std::string calibration;
  double damp = 0.01;
  bool act_order = false;

  /// Sets options.quantizer for the method (nothing for plain RTN without statistics).
  /// Throws lucid::quantization::Error on a bad method or statistics file.
  void apply(lucid::quantization::QuantizeCheckpointOptions& options) const;
};

/// Adds the flags to `cmd`, storing into `flags`.
void add_method_flags(CLI::App& cmd, const std::shared_ptr<MethodFlags>& flags);

}  // namespace lucidq::cli
