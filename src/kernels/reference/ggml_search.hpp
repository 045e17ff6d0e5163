// Internal: ggml's scale searches (make_qx/q3/qkx2/qkx3/qp_quants), shared by the legacy imatrix
// quantizers and the K-quants. Float32 in ggml's operation order; docs/formats.md describes each.
#pragma once

#include <cstdint>

namespace lucid::quantization::kernels::reference {

/// Below this block maximum a block encodes as all-zero codes (ggml's GROUP_MAX_EPS).
constexpr float ggml_group_max_eps = 1e-15f;

/// Symmetric codes with the signed extreme on -nmax: L[i] in 0..2*nmax-1 (stored l + nmax).
/// Weights are `qw` when given, else by rmse_type (1: x^2, 2: 1, 3: |x|, 4: sqrt|x|); rmse_type
/// 0 skips the least-squares scale and the 18-step search. Returns the (signed) scale.
float make_qx_quants(int n, int nmax, const float* x, std::int8_t* L, int rmse_type,
                     const float* qw);

/// Q3_K's symmetric codes (stored l + nmax) with weights x^2; do_rmse runs up to 5 passes of
/// coordinate descent. Returns the scale.
float make_q3_quants(int n, int nmax, const float* x, std::int8_t* L, bool do_rmse);

/// Asymmetric codes 0..nmax for x ~ scale * L - min (min >= 0 is written to *the_min), searching
/// nstep + 1 reciprocal scales (rmin + rdelta * step + nmax) / (max - min) with a weighted least
/// squares fit of (scale, min) each. use_mad: absolute instead of squared error. Laux: n bytes
/// of scratch. `weights` must be given.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, std::uint8_t* L,
                       float* the_min, std::uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad);

/// As make_qkx2_quants, but weights default to x^2 when null and max <= min is the degenerate
/// test (ggml's imatrix variant).
float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, std::uint8_t* L,
                       float* the_min, std::uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad);

/// Codes 0..nmax for non-negative x (sub-block scales or mins) with importance quant_weights:
/// 9 trial scales, then 5 passes of coordinate descent. Returns the scale.
float make_qp_quants(int n, int nmax, const float* x, std::uint8_t* L, const float* quant_weights);

}  // namespace lucid::quantization::kernels::reference
