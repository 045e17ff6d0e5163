// The argument checks of the int8 GEMM and convolution stages (stage_checks.hpp), one message each.
#include "lucid/quantization/stage_checks.hpp"

#include <charconv>
#include <cmath>
#include <string>

#include "lucid/quantization/error.hpp"

namespace lucid::quantization {
namespace {

// The shortest text that reads back as `value`, with ".0" on integers, as Python prints it
// ("0.0", "-1.0", "0.1", "nan", "inf").
std::string scale_text(float value) {
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  std::string text(buffer, end);
  if (text.find_first_not_of("-0123456789") == std::string::npos) text += ".0";
  return text;
}

[[noreturn]] void fail(std::string_view what, std::string_view name, const std::string& value,
                       std::string_view expected) {
  throw Error(std::string(what) + ": " + std::string(name) + " = " + value + " (expected " +
              std::string(expected) + ")");
}

std::string range_text(std::int64_t low, std::int64_t high) {
  return "an integer in [" + std::to_string(low) + ", " + std::to_string(high) + "] for ";
}

}  // namespace

void check_scale(std::string_view what, std::string_view name, float scale) {
  if (!(std::isfinite(scale) && scale > 0.0f)) {
    fail(what, name, scale_text(scale), "a finite scale > 0");
  }
}

void check_activation_zero_point(std::string_view what, std::string_view name, ScalarType type,
                                 std::int64_t zero_point, std::string_view operand) {
  const std::int64_t low = type == ScalarType::int8 ? -128 : 0;
  if (zero_point < low || zero_point > low + 255) {
    fail(what, name, std::to_string(zero_point),
         range_text(low, low + 255) + to_string(type) + " " + std::string(operand));
  }
}

void check_output_qdtype(std::string_view what, std::string_view name, const QDtype& qdtype) {
  if (qdtype.bits() != 8) {
    fail(what, name, qdtype.name(),
         "an 8-bit grid: quint8 or qint8, possibly with a narrower range");
  }
}

void check_output_zero_point(std::string_view what, std::string_view name, const QDtype& qdtype,
                             std::int64_t zero_point) {
  if (zero_point < qdtype.quant_min() || zero_point > qdtype.quant_max()) {
    fail(what, name, std::to_string(zero_point),
         range_text(qdtype.quant_min(), qdtype.quant_max()) + qdtype.name());
  }
}

void check_one_bias(std::string_view what, std::string_view bias, std::string_view bias_int32,
                    bool has_bias, bool has_bias_int32) {
  if (has_bias && has_bias_int32) {
    throw Error(std::string(what) + ": both " + std::string(bias) + " and " +
                std::string(bias_int32) + " are given (expected at most one)");
  }
}

}  // namespace lucid::quantization
