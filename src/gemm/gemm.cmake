# The packed int8 GEMM (include/lucid/quantization/gemm.hpp): packing, driver, output stages, tier kernels.
