// The histogram loops compiled for the reference variant (baseline x86-64 / any CPU).
#include "kernels/histogram.hpp"
#include "kernels/histogram_loops.hpp"

namespace lucid::quantization::kernels {

void histc_indices__reference(const float* v, std::int64_t m, float left, float right, float fbins,
                              std::int32_t skip, std::int32_t* idx) {
  histogram_loops::histc_indices(v, m, left, right, fbins, skip, idx);
}

void grid_indices__reference(const float* v, std::int64_t m, bool absolute, bool gridded,
                             double scale, double base, std::int32_t skip, std::int32_t* idx) {
  histogram_loops::grid_indices(v, m, absolute, gridded, scale, base, skip, idx);
}

void l2_norms__reference(const float* hist, std::int64_t bins, std::int64_t start, float bw,
                         float dbw, float half, float neg_half, float last_dst, float* norms) {
  histogram_loops::l2_norms<histogram_loops::fast_fmod>(hist, bins, start, bw, dbw, half, neg_half,
                                                        last_dst, norms);
}

void l2_norms_libm_fmod(const float* hist, std::int64_t bins, std::int64_t start, float bw,
                        float dbw, float half, float neg_half, float last_dst, float* norms) {
  histogram_loops::l2_norms<histogram_loops::libm_fmod>(hist, bins, start, bw, dbw, half, neg_half,
                                                        last_dst, norms);
}

}  // namespace lucid::quantization::kernels
