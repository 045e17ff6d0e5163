// CPU feature detection (cpuid + xgetbv), once per process.
#include <string>

#include "lucid/quantization/runtime.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace lucid::quantization {
namespace {

#if defined(__x86_64__) || defined(__i386__)
bool bit(unsigned reg, int index) {
  return ((reg >> index) & 1u) != 0;
}

// The register state the OS saves on context switch (XCR0); 0 without OSXSAVE.
unsigned long long os_saved_state(unsigned leaf1_ecx) {
  if (!bit(leaf1_ecx, 27)) return 0;  // OSXSAVE
  unsigned eax = 0;
  unsigned edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(1, 0, eax, ebx, ecx, edx);
  const unsigned long long xcr0 = os_saved_state(ecx);
  const bool ymm_state = (xcr0 & 0x6) == 0x6;                 // SSE + AVX
  const bool zmm_state = ymm_state && (xcr0 & 0xe0) == 0xe0;  // opmask + ZMM_Hi256 + Hi16_ZMM
  const bool avx = bit(ecx, 28) && ymm_state;
  f.fma = avx && bit(ecx, 12);
  f.f16c = avx && bit(ecx, 29);
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const unsigned max_subleaf = eax;
  f.avx2 = avx && bit(ebx, 5);
  f.avx512f = zmm_state && bit(ebx, 16);
  f.avx512bw = f.avx512f && bit(ebx, 30);
  f.avx512vl = f.avx512f && bit(ebx, 31);
  f.avx512vbmi = f.avx512f && bit(ecx, 1);
  f.gfni = bit(ecx, 8);
  f.avx512vnni = f.avx512f && bit(ecx, 11);
  if (max_subleaf >= 1) {
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    f.avx_vnni = avx && bit(eax, 4);
    f.avx512bf16 = f.avx512f && bit(eax, 5);
  }
  return f;
}
#else
CpuFeatures detect() {
  return {};
}
#endif

}  // namespace

std::string CpuFeatures::describe() const {
  const std::pair<bool, const char*> named[] = {
      {avx2, "avx2"},
      {fma, "fma"},
      {f16c, "f16c"},
      {avx512f, "avx512f"},
      {avx512bw, "avx512bw"},
      {avx512vl, "avx512vl"},
      {avx512vnni, "avx512vnni"},
      {avx512bf16, "avx512bf16"},
      {avx512vbmi, "avx512vbmi"},
      {gfni, "gfni"},
      {avx_vnni, "avx_vnni"},
  };
  std::string text;
  for (const auto& [present, name] : named) {
    if (!present) continue;
    if (!text.empty()) text += ' ';
    text += name;
  }
  return text.empty() ? "none" : text;
}

CpuFeatures cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

std::vector<Isa> supported_isas() {
  const CpuFeatures f = cpu_features();
  std::vector<Isa> isas{Isa::reference};
#if defined(LUCIDQ_X86_KERNELS)
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  if (avx2) isas.push_back(Isa::avx2);
  if (avx2 && f.avx512f && f.avx512bw && f.avx512vl) isas.push_back(Isa::avx512);
#else
  (void)f;
#endif
  return isas;
}

std::vector<KernelVariant> supported_variants() {
  const CpuFeatures f = cpu_features();
  std::vector<KernelVariant> variants{KernelVariant::reference};
#if defined(LUCIDQ_X86_KERNELS)
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  const bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl;
  if (avx2) variants.push_back(KernelVariant::avx2_base);
  if (avx2 && f.avx_vnni) variants.push_back(KernelVariant::avx_vnni);
  if (avx512) variants.push_back(KernelVariant::avx512_bw);
  if (avx512 && f.avx512vnni) variants.push_back(KernelVariant::avx512_vnni);
#else
  (void)f;
#endif
  return variants;
}

}  // namespace lucid::quantization
