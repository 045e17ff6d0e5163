// Internal: the weight-only kernel contract: the arguments the kernels take and every variant's
// kernel.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/weight_only_layout.hpp"

namespace lucid::quantization::weight_only {

/// One product y[M, N] = x · ŵᵀ + bias over panels [panel_begin, panel_end).
/// x holds M rows of k_padded float32 (zero beyond K); x_sums holds, for
/// affine formats, M rows of `groups` sums Σ_{k in group j} x[m, k] computed
/// in float32 in k order (null for symmetric formats). bias may be null.
struct GemmArgs {
  PackedView w;
  const float* x = nullptr;
  std::int64_t x_stride = 0;  ///< elements between rows of x (≥ k_padded)
  const float* x_sums = nullptr;
  std::int64_t m = 0;
  const float* bias = nullptr;
  float* y = nullptr;
  std::int64_t y_stride = 0;
};

/// Computes the outputs of channels [16 · panel_begin, min(N, 16 · panel_end))
/// for all M rows. Must not throw.
using PanelsKernel = void (*)(const GemmArgs& args, std::int64_t panel_begin,
                              std::int64_t panel_end);

/// The int8-activation product over panels (docs/numerics.md, "The int8-activation path").
/// xq holds M rows of uint8 codes (k_padded of them, 0 beyond K), row r at xq + r · xq_stride.
/// For int4 formats each 8-code block along K is stored interleaved, codes k0, k0+2, k0+4,
/// k0+6, k0+1, k0+3, k0+5, k0+7 (the order of the int4 block's low / high nibbles);
/// int8 formats keep k order. Per row: x_scale s_x, x_zero float(z_x); for affine formats
/// x_group_sums holds M rows of `groups` floats float(Σ_{k in j} (xq − z_x)) (null when symmetric);
/// xq_group_sums M rows of `groups` exact Σ_{k in j} xq (for kernels that offset the codes).
struct Int8Args {
  PackedView w;
  const std::uint8_t* xq = nullptr;
  std::int64_t xq_stride = 0;  ///< bytes between rows (multiple of 64, ≥ k_padded)
  const float* x_scale = nullptr;
  const float* x_zero = nullptr;
  const float* x_group_sums = nullptr;
  const std::int32_t* xq_group_sums = nullptr;
  std::int64_t m = 0;
  const float* bias = nullptr;
  float* y = nullptr;
  std::int64_t y_stride = 0;
  /// The caller's scratch for this call: Int8Kernel::scratch_bytes(w) bytes, 64-byte aligned,
  /// not shared with another thread (null when the kernel needs none).
  std::uint8_t* scratch = nullptr;
  /// Block-wise activations (docs/numerics.md, "Block-wise activation scales"), when not null:
  /// M rows of `groups` scales s_x[r, j], one per weight group, and xq holds *signed* int8
  /// codes (their bytes) with xq_group_sums = Σ_{k in j} xq; x_scale, x_zero and x_group_sums
  /// are unused. Per group the exact integer D = Σ_k xq · (q − z) is combined as
  /// acc = fma(fl(s · s_x[r, j]), float(D), acc) in group order, and y = acc + bias; super6
  /// (PackedView::superblock()): D = Σ_k xq · v, then also acc = fma(−fl(o · s_x[r, j]),
  /// float(Σ_k xq), acc), with s, o of group_affine.
  const float* x_block_scales = nullptr;
};

/// The staged position of code k of a row (the int4 interleave above).
inline std::int64_t int8_staged_index(const PackedView& v, std::int64_t k) {
  if (v.bits != 4) return k;
  const std::int64_t t = k % 8;
  return k - t + (t % 2 == 0 ? t / 2 : 4 + t / 2);
}

/// Calls body(std::integral_constant<int, Bits>, std::bool_constant<Symmetric>) for the code
/// width (4 or 8) and symmetry of `w`: where each kernel file picks its template instantiation.
template <class Body>
void with_format(const PackedView& w, Body&& body) {
  using four = std::integral_constant<int, 4>;
  using eight = std::integral_constant<int, 8>;
  if (w.bits == 4) {
    if (w.symmetric) {
      body(four{}, std::true_type{});
    } else {
      body(four{}, std::false_type{});
    }
  } else if (w.symmetric) {
    body(eight{}, std::true_type{});
  } else {
    body(eight{}, std::false_type{});
  }
}

using Int8PanelsKernel = void (*)(const Int8Args& args, std::int64_t panel_begin,
                                  std::int64_t panel_end);

/// An int8-activation kernel and the panel multiple that threads split its work on.
struct Int8Kernel {
  Int8PanelsKernel run = nullptr;
  std::int64_t panel_multiple = 1;
  /// Scratch bytes per call = scratch_panels · k_padded · 16 (decoded tiles; 0: none).
  std::int64_t scratch_panels = 0;

  std::int64_t scratch_bytes(const PackedView& w) const { return scratch_panels * w.k_padded * 16; }
};

// Names: weight_only_<activations>_<channels per block>__<variant>.
/// Float activations. The reference: double-precision sums of x · s · (q − z), rounded once.
void weight_only_f32_16c__reference(const GemmArgs& args, std::int64_t panel_begin,
                                    std::int64_t panel_end);
#if defined(LUCIDQ_X86_KERNELS)
void weight_only_f32_16c__avx2(const GemmArgs& args, std::int64_t panel_begin,
                               std::int64_t panel_end);  ///< AVX2 + FMA
void weight_only_f32_16c__avx512(const GemmArgs& args, std::int64_t panel_begin,
                                 std::int64_t panel_end);  ///< AVX-512 F + BW + VL
#endif

/// The reference int8-activation kernel: the exact semantics every fast variant reproduces.
void weight_only_u8_16c__reference(const Int8Args& args, std::int64_t panel_begin,
                                   std::int64_t panel_end);
#if defined(LUCIDQ_X86_KERNELS)
/// Panels per tile of weight_only_u8_tiles_48c__avx512_vnni (threads split on multiples of it).
constexpr std::int64_t u8_tiles_block_panels = 3;
/// AVX-512 VNNI (vpdpbusd) variant for int8 codes and many rows (codes decoded once per
/// 48-channel tile into Int8Args::scratch: scratch_panels = u8_tiles_block_panels); 8-bit
/// weights only.
void weight_only_u8_tiles_48c__avx512_vnni(const Int8Args& args, std::int64_t panel_begin,
                                           std::int64_t panel_end);
/// AVX2 variant for int4 and int8 codes (int4: vpmaddubsw, exact for 4-bit weights; int8:
/// codes and activations widened to int16, vpmaddwd).
void weight_only_u8_16c__avx2(const Int8Args& args, std::int64_t panel_begin,
                              std::int64_t panel_end);
/// Panels per block of weight_only_u8_regs_64c__avx512_vnni (threads split the panels on multiples
/// of it).
constexpr std::int64_t u8_regs_block_panels = 4;
/// AVX-512 VNNI variant with the codes decoded in registers (any M, int4 or int8; the driver
/// uses it for int4 and for int8 up to 64 rows): the same results as the reference.
void weight_only_u8_regs_64c__avx512_vnni(const Int8Args& args, std::int64_t panel_begin,
                                          std::int64_t panel_end);
#endif

}  // namespace lucid::quantization::weight_only
