// Internal: the histogram observers' vectorised loops (bin indices, the L2 search's per-bin terms).
//
// One definition per variant (histogram_loops.hpp compiled with each tier's flags); every lane
// computes the same IEEE operations, so every variant gives the same indices and terms.
#pragma once

#include <cstdint>

namespace lucid::quantization::kernels {

/// The bin of each of v[0, m) as ATen's histc computes it over [left, right] with fbins bins;
/// `skip` for values outside [left, right] and NaN.
using HistcIndicesFn = void (*)(const float* v, std::int64_t m, float left, float right,
                                float fbins, std::int32_t skip, std::int32_t* idx);
/// The dyadic histogram's bin of each of v[0, m) (|v| when `absolute`): floor(v · scale) − base
/// when `gridded`, else 0; `skip` for non-finite values.
using GridIndicesFn = void (*)(const float* v, std::int64_t m, bool absolute, bool gridded,
                               double scale, double base, std::int32_t skip, std::int32_t* idx);
/// The per-bin terms of PyTorch's _compute_quantization_error for bins [0, bins) mapped onto
/// destination bins of width dbw (every |src / dbw| below 2^28), in float32 as torch computes them.
using L2NormsFn = void (*)(const float* hist, std::int64_t bins, std::int64_t start, float bw,
                           float dbw, float half, float neg_half, float last_dst, float* norms);

void histc_indices__reference(const float* v, std::int64_t m, float left, float right, float fbins,
                              std::int32_t skip, std::int32_t* idx);
void grid_indices__reference(const float* v, std::int64_t m, bool absolute, bool gridded,
                             double scale, double base, std::int32_t skip, std::int32_t* idx);
void l2_norms__reference(const float* hist, std::int64_t bins, std::int64_t start, float bw,
                         float dbw, float half, float neg_half, float last_dst, float* norms);
/// The same terms for any quotient size, with libm's fmod (exact where the fast remainder is
/// not); not vectorised, so one definition serves every variant.
void l2_norms_libm_fmod(const float* hist, std::int64_t bins, std::int64_t start, float bw,
                        float dbw, float half, float neg_half, float last_dst, float* norms);
#if defined(LUCIDQ_X86_KERNELS)
void histc_indices__avx2(const float* v, std::int64_t m, float left, float right, float fbins,
                         std::int32_t skip, std::int32_t* idx);
void grid_indices__avx2(const float* v, std::int64_t m, bool absolute, bool gridded, double scale,
                        double base, std::int32_t skip, std::int32_t* idx);
void l2_norms__avx2(const float* hist, std::int64_t bins, std::int64_t start, float bw, float dbw,
                    float half, float neg_half, float last_dst, float* norms);
#endif

}  // namespace lucid::quantization::kernels
