// Bindings of the run-time controls: kernel tier (ISA) and thread count.
#include "common.hpp"
#include "lucid/quantization/runtime.hpp"

namespace lucidq_python {

void bind_runtime(py::module_& m) {
  namespace Q = lucid::quantization;
  m.def(
      "active_isa", [] { return Q::to_string(Q::active_isa()); },
      "The kernel tier in use: 'reference', 'avx2' or 'avx512'.");
  m.def(
      "set_isa",
      [](const std::string& name) {
        for (const Q::Isa isa : {Q::Isa::reference, Q::Isa::avx2, Q::Isa::avx512}) {
          if (name == Q::to_string(isa)) return Q::set_isa(isa);
        }
        Q::set_isa(Q::kernel_variant_from_string(name));
      },
      py::arg("isa"),
      "Pins the kernel tier ('reference', 'avx2', 'avx512': the tier's best variant) or one "
      "variant ('avx2_base', 'avx_vnni', 'avx512_bw', 'avx512_vnni'); ValueError if the CPU "
      "lacks it.");
  m.def(
      "active_variant", [] { return Q::to_string(Q::active_variant()); },
      "The kernel variant in use, e.g. 'avx512_vnni'.");
  m.def(
      "supported_variants",
      [] {
        std::vector<std::string> names;
        for (Q::KernelVariant variant : Q::supported_variants())
          names.push_back(Q::to_string(variant));
        return names;
      },
      "The kernel variants this CPU can run, reference first, best last.");
  m.def(
      "supported_isas",
      [] {
        std::vector<std::string> names;
        for (Q::Isa isa : Q::supported_isas())
          names.push_back(Q::to_string(isa));
        return names;
      },
      "The tiers this CPU can run, simplest first.");
  m.def(
      "cpu_features", [] { return Q::cpu_features().describe(); },
      "The CPU features lucidq detected, as one line of text.");
  m.def("num_threads", &Q::num_threads, "Threads used for large inputs.");
  m.def("set_num_threads", &Q::set_num_threads, py::arg("count"),
        "Sets the thread count for large inputs (>= 1); results never depend on it.");
}

}  // namespace lucidq_python
