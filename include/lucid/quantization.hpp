// Umbrella header: the whole public lucid::quantization API.
#pragma once

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/metrics.hpp"
#include "lucid/quantization/pack.hpp"
#include "lucid/quantization/qdtype.hpp"
#include "lucid/quantization/qparams.hpp"
#include "lucid/quantization/qscheme.hpp"
#include "lucid/quantization/quantize.hpp"
#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/scalar_type.hpp"
#include "lucid/quantization/tensor.hpp"
#include "lucid/quantization/version.hpp"
