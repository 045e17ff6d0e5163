// The shared scale and requantized-output checks of gemm() and conv2d().
#include "gemm/output_checks.hpp"

#include <cmath>
#include <string>

#include "lucid/quantization/error.hpp"

namespace lucid::quantization::igemm {

void check_scale(const char* what, const char* name, float scale) {
  if (!(std::isfinite(scale) && scale > 0.0f)) {
    throw Error(std::string(what) + ": " + name + " = " + std::to_string(scale) +
                " (expected a finite value > 0)");
  }
}

void check_requantized_stage(const char* what, const RequantizedOutput& c, std::int64_t n) {
  check_scale(what, "c.scale", c.scale);
  if (c.qdtype.bits() != 8) {
    throw Error(std::string(what) + ": c.qdtype = " + c.qdtype.name() +
                " (expected an 8-bit grid: qint8 or quint8)");
  }
  if (c.zero_point < c.qdtype.quant_min() || c.zero_point > c.qdtype.quant_max()) {
    throw Error(std::string(what) + ": c.zero_point = " + std::to_string(c.zero_point) +
                " is outside " + c.qdtype.name());
  }
  if (c.bias != nullptr && c.bias_int32 != nullptr) {
    throw Error(std::string(what) +
                ": both c.bias and c.bias_int32 are set (expected at most one bias)");
  }
  if (c.bias != nullptr) {
    for (std::int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(c.bias[i])) {
        throw Error(std::string(what) + ": c.bias[" + std::to_string(i) +
                    "] = " + std::to_string(c.bias[i]) + " (expected finite values)");
      }
    }
  }
}

}  // namespace lucid::quantization::igemm
