# The int8 convolution (include/lucid/quantization/conv.hpp): weight packing, geometry, driver.
target_sources(lucidq PRIVATE
  conv/packed_conv_weights.cpp
  conv/geometry.cpp
  conv/conv2d.cpp
  kernels/reference/conv_depthwise.cpp
)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  # The depthwise row loop once per tier, each file with its tier's flags.
  target_sources(lucidq PRIVATE kernels/avx2/conv_depthwise.cpp kernels/avx512/conv_depthwise.cpp)
  set_source_files_properties(kernels/avx2/conv_depthwise.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  set_source_files_properties(kernels/avx512/conv_depthwise.cpp PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-Wno-maybe-uninitialized;-Wno-uninitialized")
endif()
