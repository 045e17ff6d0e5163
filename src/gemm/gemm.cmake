# The packed int8 GEMM (include/lucid/quantization/gemm.hpp): packing, driver, output stages, tier kernels.
target_sources(lucidq PRIVATE
  gemm/packed_weights.cpp
  gemm/driver.cpp
  gemm/output_stage.cpp
  gemm/output_checks.cpp
  gemm/stage_checks.cpp
  gemm/gemm.cpp
  gemm/dynamic.cpp
  kernels/reference/gemm.cpp
)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  target_sources(lucidq PRIVATE kernels/avx2/gemm.cpp kernels/avx2/gemm_vnni.cpp
    kernels/avx512/gemm_bw.cpp kernels/avx512/gemm_vnni.cpp)
  set_source_files_properties(kernels/avx2/gemm.cpp PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  set_source_files_properties(kernels/avx2/gemm_vnni.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavxvnni")
  set_source_files_properties(kernels/avx512/gemm_bw.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-Wno-maybe-uninitialized;-Wno-uninitialized")
  set_source_files_properties(kernels/avx512/gemm_vnni.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni;-Wno-maybe-uninitialized;-Wno-uninitialized")
endif()
