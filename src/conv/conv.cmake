# The int8 convolution (include/lucid/quantization/conv.hpp): weight packing, geometry, driver.
target_sources(lucidq PRIVATE
  conv/packed_conv_weights.cpp
  conv/geometry.cpp
  conv/conv2d.cpp
  kernels/reference/conv_depthwise.cpp
)
