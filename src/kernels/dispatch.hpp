// Internal: the one KernelTable in use, chosen once per process (see runtime.hpp).
#pragma once

#include "kernels/kernel_table.hpp"

namespace lucid::quantization::kernels {

/// The active tier's table: on first use the LUCIDQ_ISA override, else the best
/// tier the CPU supports. Throws Error at first use for a bad LUCIDQ_ISA.
/// Library entry points fetch it once and pass kernels down; inner loops never dispatch.
const KernelTable& active();

}  // namespace lucid::quantization::kernels
