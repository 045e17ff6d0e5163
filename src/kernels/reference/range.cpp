// Reference (scalar) range kernels: min / max and abs-max of the finite elements.
#include <algorithm>
#include <cmath>

#include "kernels/affine_spec.hpp"
#include "kernels/reference/kernels.hpp"

namespace lucid::quantization::kernels::reference {
namespace {

template <FloatType T>
std::int64_t minmax__reference(const void* x, std::int64_t n, float* min, float* max) {
  std::int64_t nonfinite = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const float v = load_element<T>(x, k);
    if (!std::isfinite(v)) {
      ++nonfinite;
      continue;
    }
    *min = std::min(*min, v);
    *max = std::max(*max, v);
  }
  return nonfinite;
}

template <FloatType T>
std::int64_t minmax_vec__reference(const void* x, std::int64_t n, float* mins, float* maxs) {
  std::int64_t nonfinite = 0;
  for (std::int64_t k = 0; k < n; ++k)
    nonfinite += minmax__reference<T>(
        static_cast<const char*>(x) + k * (T == FloatType::f32 ? 4 : 2), 1, mins + k, maxs + k);
  return nonfinite;
}

template <FloatType T>
bool minmax_groups__reference(const void* x, std::int64_t groups, std::int64_t group_size,
                              float* mins, float* maxs) {
  std::int64_t nonfinite = 0;
  for (std::int64_t g = 0; g < groups; ++g) {
    mins[g] = INFINITY;
    maxs[g] = -INFINITY;
    nonfinite += minmax__reference<T>(
        static_cast<const char*>(x) + g * group_size * (T == FloatType::f32 ? 4 : 2), group_size,
        mins + g, maxs + g);
  }
  return nonfinite == 0;
}

template <FloatType T>
std::int64_t abs_max__reference(const void* x, std::int64_t n, float* result) {
  std::int64_t nonfinite = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const float v = load_element<T>(x, k);
    if (!std::isfinite(v)) {
      ++nonfinite;
      continue;
    }
    *result = std::max(*result, std::fabs(v));
  }
  return nonfinite;
}

template <FloatType T>
std::int64_t abs_max_vec__reference(const void* x, std::int64_t n, float* results) {
  std::int64_t nonfinite = 0;
  for (std::int64_t k = 0; k < n; ++k)
    nonfinite += abs_max__reference<T>(
        static_cast<const char*>(x) + k * (T == FloatType::f32 ? 4 : 2), 1, results + k);
  return nonfinite;
}

template <FloatType T>
bool abs_max_groups__reference(const void* x, std::int64_t groups, std::int64_t group_size,
                               float* abs_maxs) {
  std::int64_t nonfinite = 0;
  for (std::int64_t g = 0; g < groups; ++g) {
    abs_maxs[g] = 0.0f;
    nonfinite += abs_max__reference<T>(
        static_cast<const char*>(x) + g * group_size * (T == FloatType::f32 ? 4 : 2), group_size,
        abs_maxs + g);
  }
  return nonfinite == 0;
}

template <FloatType T>
void fill_for_input(KernelTable& table) {
  const auto t = static_cast<int>(T);
  table.minmax[t] = minmax__reference<T>;
  table.minmax_vec[t] = minmax_vec__reference<T>;
  table.minmax_groups[t] = minmax_groups__reference<T>;
  table.abs_max[t] = abs_max__reference<T>;
  table.abs_max_groups[t] = abs_max_groups__reference<T>;
  table.abs_max_vec[t] = abs_max_vec__reference<T>;
}

}  // namespace

void fill_range_kernels(KernelTable& table) {
  fill_for_input<FloatType::f32>(table);
  fill_for_input<FloatType::f16>(table);
  fill_for_input<FloatType::bf16>(table);
}

}  // namespace lucid::quantization::kernels::reference
