// Run-time choices: which kernel tier (ISA) the library uses and how many threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lucid::quantization {

/// A kernel tier. `reference` is the plain scalar specification; `avx2` needs
/// AVX2 + FMA + F16C; `avx512` needs AVX-512 F + BW + VL (and the OS saving
/// the ZMM state). Every tier computes bit-identical results.
enum class Isa { reference, avx2, avx512 };

/// "reference", "avx2" or "avx512".
std::string to_string(Isa isa);
/// Parses "reference", "avx2" or "avx512". Throws Error naming the text and
/// the accepted names.
Isa isa_from_string(std::string_view name);

/// The x86 features detected at run time (cpuid, with xgetbv for the OS's
/// support of the YMM / ZMM register state). All false on other CPUs.
struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avx512vbmi = false;
  bool gfni = false;
  bool avx_vnni = false;

  /// The features present, space-separated ("avx2 fma f16c avx512f ..."), or "none".
  std::string describe() const;
};

/// The features of this CPU, detected once. Thread-safe.
CpuFeatures cpu_features();
/// The tiers this CPU can run, best last (always starts with reference).
std::vector<Isa> supported_isas();

/// The tier in use. On first use it is the environment variable LUCIDQ_ISA
/// when set (a tier name: that tier's best variant; or a KernelVariant name), else the best
/// supported tier. Throws Error at first use when LUCIDQ_ISA names an unknown tier or
/// variant or one this CPU lacks (a pinned path is never silently replaced). Thread-safe.
Isa active_isa();
/// Pins the tier for the whole process (tests, benchmarks, bug reports): its best variant.
/// Throws Error when the CPU lacks it. Not to be called while another thread
/// is inside a library call.
void set_isa(Isa isa);

/// A kernel variant: one tier's kernel table, specialised for an optional instruction-set
/// extension (the VNNI dot products). The default is the best variant of the active tier;
/// LUCIDQ_ISA and set_isa() pin any of them, so a test or a bug report can reproduce every
/// path. Every variant computes the same results as the reference where the reference is exact.
///   reference    the scalar specification (any CPU)
///   avx2_base    AVX2 + FMA + F16C
///   avx_vnni     avx2_base, with AVX-VNNI for the int8 GEMM
///   avx512_bw    AVX-512 F + BW + VL (with the AVX2 int8-activation weight-only kernel)
///   avx512_vnni  avx512_bw, with AVX512-VNNI for the int8 GEMM and weight-only kernels
enum class KernelVariant { reference, avx2_base, avx_vnni, avx512_bw, avx512_vnni };

/// The variant's name, as listed above.
std::string to_string(KernelVariant variant);
/// Parses a variant name. Throws Error naming the text and the accepted names.
KernelVariant kernel_variant_from_string(std::string_view name);
/// The tier a variant belongs to.
Isa tier_of(KernelVariant variant);
/// The variants this CPU can run, reference first, best last.
std::vector<KernelVariant> supported_variants();
/// The variant in use (the best one of active_isa() unless a variant was pinned). Throws as
/// active_isa() does.
KernelVariant active_variant();
/// Pins one variant for the whole process (set_isa(Isa) pins its tier's best variant).
/// Throws Error when the CPU lacks it. Not to be called while another thread is inside a
/// library call.
void set_isa(KernelVariant variant);

/// Threads used for large inputs (small ones stay on one thread). Default:
/// LUCIDQ_NUM_THREADS, else OMP_NUM_THREADS, else the number of cores; 1 when
/// the library was built without OpenMP. Throws Error at first use when
/// LUCIDQ_NUM_THREADS is not an integer >= 1. Results never depend on it.
int num_threads();
/// Sets the thread count for later calls. Throws Error when `count` < 1.
void set_num_threads(int count);

}  // namespace lucid::quantization
