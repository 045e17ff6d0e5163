// The reference tier's KernelTable: the scalar specification every other tier is tested against.
#include "kernels/reference/kernels.hpp"

namespace lucid::quantization::kernels {

const KernelTable& reference_table() {
  static const KernelTable table = [] {
    KernelTable t{};
    t.isa = Isa::reference;
    reference::fill_quantize_kernels(t);
    reference::fill_pack_kernels(t);
    reference::fill_range_kernels(t);
    reference::fill_requantize_kernels(t);
    reference::fill_ggml_kernels(t);
    return t;
  }();
  return table;
}

}  // namespace lucid::quantization::kernels
