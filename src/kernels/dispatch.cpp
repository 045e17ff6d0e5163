// Kernel dispatch: tier names, the LUCIDQ_ISA override and the active KernelTable.
#include "kernels/dispatch.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "lucid/quantization/error.hpp"

namespace lucid::quantization {
namespace {

std::atomic<const kernels::KernelTable*> active_table{nullptr};
std::mutex choose_mutex;

bool is_supported(Isa isa) {
  const std::vector<Isa> isas = supported_isas();
  return std::find(isas.begin(), isas.end(), isa) != isas.end();
}

std::string supported_names() {
  std::string text;
  for (const Isa isa : supported_isas())
    text += (text.empty() ? "" : ", ") + to_string(isa);
  return text;
}

const kernels::KernelTable& table_for(Isa isa) {
  switch (isa) {
#if defined(LUCIDQ_X86_KERNELS)
    case Isa::avx2:
      return kernels::avx2_table();
    case Isa::avx512:
      return kernels::avx512_table();
#endif
    default:
      return kernels::reference_table();
  }
}

// LUCIDQ_ISA if set (validated), else the best supported tier.
Isa initial_isa() {
  const char* pinned = std::getenv("LUCIDQ_ISA");
  if (pinned == nullptr || *pinned == '\0') return supported_isas().back();
  Isa isa;
  try {
    isa = isa_from_string(pinned);
  } catch (const Error& e) {
    throw Error(std::string("LUCIDQ_ISA: ") + e.what());
  }
  if (!is_supported(isa)) {
    throw Error("LUCIDQ_ISA = \"" + std::string(pinned) + "\" but this CPU (" +
                cpu_features().describe() + ") does not support it (expected one of " +
                supported_names() + ")");
  }
  return isa;
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

Isa active_isa() {
  return kernels::active().isa;
}

void set_isa(Isa isa) {
  if (!is_supported(isa)) {
    throw Error("set_isa: " + to_string(isa) + " is not supported by this CPU (" +
                cpu_features().describe() + "; expected one of " + supported_names() + ")");
  }
  const std::lock_guard<std::mutex> lock(choose_mutex);
  active_table.store(&table_for(isa), std::memory_order_release);
}

namespace kernels {

const KernelTable& active() {
  if (const KernelTable* table = active_table.load(std::memory_order_acquire)) return *table;
  const std::lock_guard<std::mutex> lock(choose_mutex);
  if (const KernelTable* table = active_table.load(std::memory_order_acquire)) return *table;
  const KernelTable& chosen = table_for(initial_isa());
  active_table.store(&chosen, std::memory_order_release);
  return chosen;
}

}  // namespace kernels
}  // namespace lucid::quantization
