// Internal: the one KernelTable in use, chosen once per process (see runtime.hpp), and the tables.
#pragma once

#include "kernels/kernel_table.hpp"

namespace lucid::quantization::kernels {

/// The active variant's table: on first use the LUCIDQ_ISA override, else the best
/// variant the CPU supports. Throws Error at first use for a bad LUCIDQ_ISA.
/// Library entry points fetch it once and pass kernels down; inner loops never dispatch.
const KernelTable& active();

/// The table of a variant (the CPU must support it).
const KernelTable& table_for(KernelVariant variant);

}  // namespace lucid::quantization::kernels
