// The requantized-output check of gemm() and conv2d(), with the fields' names.
#include "gemm/output_checks.hpp"

#include <cmath>
#include <string>

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/stage_checks.hpp"

namespace lucid::quantization::igemm {

void check_requantized_stage(const char* what, const RequantizedOutput& c, std::int64_t n) {
  check_scale(what, "c.scale", c.scale);
  check_output_qdtype(what, "c.qdtype", c.qdtype);
  check_output_zero_point(what, "c.zero_point", c.qdtype, c.zero_point);
  check_one_bias(what, "c.bias", "c.bias_int32", c.bias != nullptr, c.bias_int32 != nullptr);
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
