# Kernel tiers (reference, avx2, avx512), dispatch and threading, added to the lucidq target.
# Each ISA file gets its own flags, so one binary runs on any x86-64 (never -march=native).
target_sources(lucidq PRIVATE
  kernels/cpu_features.cpp
  kernels/dispatch.cpp
  kernels/parallel.cpp
  kernels/reference/quantize.cpp
  kernels/reference/pack.cpp
  kernels/reference/range.cpp
  kernels/reference/requantize.cpp
  kernels/reference/table.cpp
  kernels/reference/gemm_output.cpp
  kernels/reference/error_sums.cpp
  kernels/reference/histogram.cpp
  kernels/reference/ggml_search.cpp
  kernels/reference/ggml_legacy.cpp
  kernels/reference/ggml_kquants.cpp
  kernels/reference/ggml_kquant_finish.cpp
  kernels/reference/ggml_iq4_nl.cpp
  kernels/reference/ggml_table.cpp
)
# The histogram loops vectorise only when comparisons may be if-converted (values unchanged).
set_source_files_properties(kernels/reference/histogram.cpp PROPERTIES COMPILE_OPTIONS -fno-trapping-math)

# Bit-exactness needs x * inv_scale rounded on its own: no FMA contraction anywhere.
target_compile_options(lucidq PRIVATE -ffp-contract=off)

find_package(OpenMP)
if(OpenMP_CXX_FOUND)
  target_link_libraries(lucidq PRIVATE OpenMP::OpenMP_CXX)
endif()

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(lucidq_avx2_kernels
    kernels/avx2/quantize.cpp kernels/avx2/quantize_groups.cpp kernels/avx2/pack.cpp kernels/avx2/range.cpp kernels/avx2/requantize.cpp
    kernels/avx2/error_sums.cpp kernels/avx2/gemm_output.cpp kernels/avx2/ggml.cpp)
  set(lucidq_avx512_kernels
    kernels/avx512/quantize.cpp kernels/avx512/pack.cpp kernels/avx512/range.cpp
    kernels/avx512/requantize.cpp kernels/avx512/error_sums.cpp kernels/avx512/gemm_output.cpp
    kernels/avx512/ggml.cpp)
  target_sources(lucidq PRIVATE ${lucidq_avx2_kernels} ${lucidq_avx512_kernels}
    kernels/avx2/histogram.cpp kernels/avx2/table.cpp kernels/avx512/table.cpp)
  # Only these files see the ISA flags; the tables that copy the reference table do not.
  # (GCC 12 warns falsely about the _mm512_undefined_* values in its own intrinsics, GCC bug 105593.)
  set_source_files_properties(${lucidq_avx2_kernels} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  set_source_files_properties(${lucidq_avx512_kernels} PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-Wno-maybe-uninitialized;-Wno-uninitialized")
  # AVX2 alone for the histogram loops (what GCC's target_clones("avx2") built before).
  set_source_files_properties(kernels/avx2/histogram.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx2;-fno-trapping-math")
  target_compile_definitions(lucidq PRIVATE LUCIDQ_X86_KERNELS)
endif()

# lucidq_isolate_isa_sources(TARGET): every source of TARGET whose COMPILE_OPTIONS carry an ISA
# flag (-m...) is compiled with -fno-weak, so each inline function and template it instantiates
# (its own helpers, the contracts' inline members, std::min, std::fabs, ...) stays local to it.
# Otherwise, at -O0 above all, such a function is emitted as a weak symbol in both ISA and
# baseline objects and the linker keeps one copy for every caller: an AVX-512 copy called from
# reference code is an illegal instruction on an AVX2 CPU. Called once, after every file has its
# flags; the ISA sources are recorded in the target property LUCIDQ_ISA_SOURCES for the check
# that proves it (tests/isa_symbols/check_isa_symbols.cmake). Clang has no -fno-weak: under
# clang the check reports what stays weak.
function(lucidq_isolate_isa_sources target)
  get_target_property(sources ${target} SOURCES)
  set(isa_sources "")
  foreach(source IN LISTS sources)
    get_source_file_property(options ${source} COMPILE_OPTIONS)
    if(options MATCHES "(^|;)-m")
      list(APPEND isa_sources ${source})
      if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
        set_property(SOURCE ${source} APPEND PROPERTY COMPILE_OPTIONS -fno-weak)
      endif()
    endif()
  endforeach()
  set_property(TARGET ${target} PROPERTY LUCIDQ_ISA_SOURCES "${isa_sources}")
endfunction()
