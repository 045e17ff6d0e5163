// Kernel dispatch: tier and variant names, the LUCIDQ_ISA override and the active KernelTable.
#include "kernels/dispatch.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "lucid/quantization/error.hpp"

namespace lucid::quantization {
namespace {

constexpr KernelVariant all_variants[] = {KernelVariant::reference, KernelVariant::avx2_base,
                                          KernelVariant::avx_vnni, KernelVariant::avx512_bw,
                                          KernelVariant::avx512_vnni};

std::atomic<const kernels::KernelTable*> active_table{nullptr};
std::mutex choose_mutex;

bool is_supported(KernelVariant variant) {
  const std::vector<KernelVariant> variants = supported_variants();
  return std::find(variants.begin(), variants.end(), variant) != variants.end();
}

bool is_supported(Isa isa) {
  const std::vector<Isa> isas = supported_isas();
  return std::find(isas.begin(), isas.end(), isa) != isas.end();
}

std::string supported_names() {
  std::string text;
  for (const Isa isa : supported_isas())
    text += (text.empty() ? "" : ", ") + to_string(isa);
  for (const KernelVariant variant : supported_variants()) {
    if (variant != KernelVariant::reference) text += ", " + to_string(variant);
  }
  return text;
}

std::string variant_names() {
  std::string text;
  for (const KernelVariant variant : all_variants)
    text += (text.empty() ? "" : ", ") + to_string(variant);
  return text;
}

// The best variant of a supported tier.
KernelVariant best_variant_of(Isa isa) {
  KernelVariant best = KernelVariant::reference;
  for (const KernelVariant variant : supported_variants()) {
    if (tier_of(variant) == isa) best = variant;
  }
  return best;
}

// LUCIDQ_ISA if set (a tier name: its best variant; or a variant name), validated; else the
// best supported variant.
KernelVariant initial_variant() {
  const char* pinned = std::getenv("LUCIDQ_ISA");
  if (pinned == nullptr || *pinned == '\0') return supported_variants().back();
  const std::string_view name(pinned);
  bool known = false;
  bool supported = false;
  KernelVariant chosen = KernelVariant::reference;
  for (const Isa isa : {Isa::reference, Isa::avx2, Isa::avx512}) {
    if (name != to_string(isa)) continue;
    known = true;
    supported = is_supported(isa);
    if (supported) chosen = best_variant_of(isa);
  }
  for (const KernelVariant variant : all_variants) {
    if (name != to_string(variant)) continue;
    known = true;
    supported = is_supported(variant);
    chosen = variant;
  }
  if (!known) {
    throw Error("LUCIDQ_ISA: kernel tier \"" + std::string(name) +
                "\" is unknown (expected one of reference, avx2, avx512, or a variant: " +
                variant_names() + ")");
  }
  if (!supported) {
    throw Error("LUCIDQ_ISA = \"" + std::string(name) + "\" but this CPU (" +
                cpu_features().describe() + ") does not support it (expected one of " +
                supported_names() + ")");
  }
  return chosen;
}

// The variant's name (static storage, as KernelTable::name).
const char* variant_name(KernelVariant variant) {
  switch (variant) {
    case KernelVariant::reference:
      return "reference";
    case KernelVariant::avx2_base:
      return "avx2_base";
    case KernelVariant::avx_vnni:
      return "avx_vnni";
    case KernelVariant::avx512_bw:
      return "avx512_bw";
    case KernelVariant::avx512_vnni:
      return "avx512_vnni";
  }
  return "unknown";
}

void pin(KernelVariant variant) {
  const std::lock_guard<std::mutex> lock(choose_mutex);
  active_table.store(&kernels::table_for(variant), std::memory_order_release);
}

}  // namespace

std::string to_string(Isa isa) {
  switch (isa) {
    case Isa::reference:
      return "reference";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
  }
  return "unknown";
}

Isa isa_from_string(std::string_view name) {
  for (const Isa isa : {Isa::reference, Isa::avx2, Isa::avx512}) {
    if (name == to_string(isa)) return isa;
  }
  throw Error("kernel tier \"" + std::string(name) +
              "\" is unknown (expected one of reference, avx2, avx512)");
}

std::string to_string(KernelVariant variant) {
  return variant_name(variant);
}

KernelVariant kernel_variant_from_string(std::string_view name) {
  for (const KernelVariant variant : all_variants) {
    if (name == to_string(variant)) return variant;
  }
  throw Error("kernel variant \"" + std::string(name) + "\" is unknown (expected one of " +
              variant_names() + ")");
}

Isa tier_of(KernelVariant variant) {
  switch (variant) {
    case KernelVariant::avx2_base:
    case KernelVariant::avx_vnni:
      return Isa::avx2;
    case KernelVariant::avx512_bw:
    case KernelVariant::avx512_vnni:
      return Isa::avx512;
    case KernelVariant::reference:
      break;
  }
  return Isa::reference;
}

Isa active_isa() {
  return kernels::active().isa;
}

KernelVariant active_variant() {
  return kernels::active().variant;
}

void set_isa(Isa isa) {
  if (!is_supported(isa)) {
    throw Error("set_isa: " + to_string(isa) + " is not supported by this CPU (" +
                cpu_features().describe() + "; expected one of " + supported_names() + ")");
  }
  pin(best_variant_of(isa));
}

void set_isa(KernelVariant variant) {
  if (!is_supported(variant)) {
    throw Error("set_isa: " + to_string(variant) + " is not supported by this CPU (" +
                cpu_features().describe() + "; expected one of " + supported_names() + ")");
  }
  pin(variant);
}

namespace kernels {

const KernelTable& table_for(KernelVariant variant) {
  // Building a table runs its tier's code (GCC fills the table with that ISA's stores), so a
  // table the CPU cannot run is never built.
  if (!is_supported(variant)) {
    throw Error("kernel table " + to_string(variant) + " requested on a CPU (" +
                cpu_features().describe() + ") that does not support it");
  }
  switch (variant) {
#if defined(LUCIDQ_X86_KERNELS)
    case KernelVariant::avx2_base:
      return avx2_table();
    case KernelVariant::avx_vnni:
      return avx_vnni_table();
    case KernelVariant::avx512_bw:
      return avx512_table();
    case KernelVariant::avx512_vnni:
      return avx512_vnni_table();
#endif
    default:
      return reference_table();
  }
}

const KernelTable& active() {
  if (const KernelTable* table = active_table.load(std::memory_order_acquire)) return *table;
  const std::lock_guard<std::mutex> lock(choose_mutex);
  if (const KernelTable* table = active_table.load(std::memory_order_acquire)) return *table;
  const KernelTable& chosen = table_for(initial_variant());
  active_table.store(&chosen, std::memory_order_release);
  return chosen;
}

}  // namespace kernels

namespace igemm {

GemmKernel gemm_kernel() {
  const kernels::KernelTable& table = kernels::active();
  return {table.name, table.gemm.run, true};
}

std::vector<GemmKernel> gemm_kernel_variants() {
  std::vector<GemmKernel> out;
  for (const KernelVariant variant : all_variants) {
    if (!is_supported(variant)) {  // named, never built (table_for)
      out.push_back({variant_name(variant), nullptr, false});
      continue;
    }
    const kernels::KernelTable& table = kernels::table_for(variant);
    out.push_back({table.name, table.gemm.run, true});
  }
  return out;
}

}  // namespace igemm
}  // namespace lucid::quantization
