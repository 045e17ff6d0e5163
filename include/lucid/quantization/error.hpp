// The one exception type the library throws for bad input.
#pragma once

#include <stdexcept>
#include <string>

namespace lucid::quantization {

/// Raised for every bad input. The message names the argument, the value given
/// and what was expected, e.g. "quantize: scale = -1 (expected a finite value > 0)".
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace lucid::quantization
