// QScheme: granularity (per-tensor / per-channel) x symmetry (affine / symmetric).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lucid::quantization {

/// How (scale, zero_point) map real values onto the integer grid.
/// Granularity: one pair for the whole tensor, or one per channel along an
/// axis (finer still: per group of channels, see QParams::group_size).
/// Symmetry: affine leaves zero_point free; symmetric pins it (0 for a signed
/// grid, the grid midpoint for an unsigned one) so real 0 maps to a code exactly.
enum class QScheme : std::uint8_t {
  PER_TENSOR_AFFINE,
  PER_TENSOR_SYMMETRIC,
  PER_CHANNEL_AFFINE,
  PER_CHANNEL_SYMMETRIC,
};

/// Lowercase aliases, so call sites read `Q::per_channel_symmetric`.
inline constexpr QScheme per_tensor_affine = QScheme::PER_TENSOR_AFFINE;
inline constexpr QScheme per_tensor_symmetric = QScheme::PER_TENSOR_SYMMETRIC;
inline constexpr QScheme per_channel_affine = QScheme::PER_CHANNEL_AFFINE;
inline constexpr QScheme per_channel_symmetric = QScheme::PER_CHANNEL_SYMMETRIC;

/// True for the two per-channel schemes.
constexpr bool is_per_channel(QScheme scheme) {
  return scheme == QScheme::PER_CHANNEL_AFFINE || scheme == QScheme::PER_CHANNEL_SYMMETRIC;
}
/// True when zero_point is pinned (the two symmetric schemes).
constexpr bool is_symmetric(QScheme scheme) {
  return scheme == QScheme::PER_TENSOR_SYMMETRIC || scheme == QScheme::PER_CHANNEL_SYMMETRIC;
}

/// "per_channel_symmetric", etc.
std::string to_string(QScheme scheme);
/// Parses "per_channel_symmetric" (also accepts the upper-case member names).
/// Throws Error naming the text and the four accepted names.
QScheme qscheme_from_string(std::string_view name);

}  // namespace lucid::quantization
