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
/// when set, else the best supported tier. Throws Error at first use when
/// LUCIDQ_ISA names an unknown tier or one this CPU lacks (a pinned path is
/// never silently replaced). Thread-safe.
Isa active_isa();
/// Pins the tier for the whole process (tests, benchmarks, bug reports).
/// Throws Error when the CPU lacks it. Not to be called while another thread
/// is inside a library call.
void set_isa(Isa isa);

/// Threads used for large inputs (small ones stay on one thread). Default:
/// LUCIDQ_NUM_THREADS, else OMP_NUM_THREADS, else the number of cores; 1 when
/// the library was built without OpenMP. Throws Error at first use when
/// LUCIDQ_NUM_THREADS is not an integer >= 1. Results never depend on it.
int num_threads();
/// Sets the thread count for later calls. Throws Error when `count` < 1.
void set_num_threads(int count);

}  // namespace lucid::quantization
