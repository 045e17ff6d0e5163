// QScheme names, both ways.
#include "lucid/quantization/qscheme.hpp"

#include <array>
#include <cctype>

#include "lucid/quantization/error.hpp"

namespace lucid::quantization {
namespace {

constexpr std::array<const char*, 4> kNames{"per_tensor_affine", "per_tensor_symmetric",
                                            "per_channel_affine", "per_channel_symmetric"};

}  // namespace

std::string to_string(QScheme scheme) {
  return kNames.at(static_cast<std::size_t>(scheme));
}

QScheme qscheme_from_string(std::string_view name) {
  std::string lower(name);
  for (char& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (lower == kNames[i]) return static_cast<QScheme>(i);
  }
  throw Error("qscheme \"" + std::string(name) +
              "\" is unknown (expected per_tensor_affine, per_tensor_symmetric, "
              "per_channel_affine or per_channel_symmetric)");
}

}  // namespace lucid::quantization
