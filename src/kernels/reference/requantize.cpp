// Reference (scalar) requantize kernels: int32 accumulators -> 8-bit codes.
#include "kernels/affine_spec.hpp"
#include "kernels/reference/kernels.hpp"

namespace lucid::quantization::kernels::reference {
namespace {

void requantize__reference(const std::int32_t* acc, std::int64_t n, float multiplier,
                           std::int32_t zero_point, Grid grid, std::uint8_t* out) {
  for (std::int64_t k = 0; k < n; ++k)
    out[k] = static_cast<std::uint8_t>(requantize_code(acc[k], multiplier, zero_point, grid));
}

void requantize_vec__reference(const std::int32_t* acc, std::int64_t n, const float* multiplier,
                               const std::int32_t* zero_point, Grid grid, std::uint8_t* out) {
  for (std::int64_t k = 0; k < n; ++k)
    out[k] = static_cast<std::uint8_t>(requantize_code(acc[k], multiplier[k], zero_point[k], grid));
}

}  // namespace

void fill_requantize_kernels(KernelTable& table) {
  table.requantize = requantize__reference;
  table.requantize_streaming = requantize__reference;  // plain stores
  table.requantize_vec = requantize_vec__reference;
}

}  // namespace lucid::quantization::kernels::reference
