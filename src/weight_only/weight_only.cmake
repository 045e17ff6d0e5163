# Weight-only low-bit GEMM (include/lucid/quantization/weight_only.hpp): formats, driver, tier kernels.
