# Weight-only low-bit GEMM (include/lucid/quantization/weight_only.hpp): formats, driver, tier kernels.
target_sources(lucidq PRIVATE
  weight_only/packing.cpp
  weight_only/grid_search.cpp
  weight_only/superblock_search.cpp
  weight_only/gemm.cpp
  kernels/reference/weight_only.cpp)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  target_sources(lucidq PRIVATE kernels/avx2/weight_only.cpp kernels/avx2/weight_only_u8.cpp
    kernels/avx512/weight_only.cpp
    kernels/avx512/weight_only_u8_tiles.cpp kernels/avx512/weight_only_u8_regs.cpp)
  # Only the tier files see their ISA flags (dispatch picks them at run time).
  set_source_files_properties(kernels/avx2/weight_only.cpp kernels/avx2/weight_only_u8.cpp
    PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  set_source_files_properties(kernels/avx512/weight_only.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mavx512f;-mavx512bw;-mavx512vl;-Wno-maybe-uninitialized;-Wno-uninitialized")
  set_source_files_properties(kernels/avx512/weight_only_u8_tiles.cpp kernels/avx512/weight_only_u8_regs.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni;-Wno-maybe-uninitialized;-Wno-uninitialized")
endif()
