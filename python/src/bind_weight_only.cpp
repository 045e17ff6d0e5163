// Bindings of the weight-only low-bit GEMM (weight_only.hpp): PackedWeightsLowBit,
// weight_only_linear.
#include "common.hpp"
#include "lucid/quantization/weight_only.hpp"

namespace lucidq_python {
namespace {

Q::ScaleType scale_type_from(const std::string& name) {
  if (name == "f32" || name == "float32") return Q::ScaleType::f32;
  if (name == "bf16" || name == "bfloat16") return Q::ScaleType::bf16;
  if (name == "f16" || name == "float16") return Q::ScaleType::f16;
  if (name == "super6") return Q::ScaleType::super6;
  throw Q::Error("scale_type = \"" + name +
                 "\" (expected \"f32\", \"bf16\", \"f16\" or \"super6\")");
}

Q::WeightOnlyGrid grid_from(const std::string& name) {
  if (name == "search") return Q::WeightOnlyGrid::search;
  if (name == "min_max") return Q::WeightOnlyGrid::min_max;
  throw Q::Error("grid = \"" + name + "\" (expected \"search\" or \"min_max\")");
}

Q::WeightOnlyFormat make_format(int bits, py::handle group_size, bool symmetric,
                                const std::string& scale_type, const std::string& grid) {
  Q::WeightOnlyFormat f;
  f.bits = bits;
  f.group_size = group_size.is_none() ? 0 : group_size.cast<std::int64_t>();
  f.symmetric = symmetric;
  f.scale_type = scale_type_from(scale_type);
  f.grid = grid_from(grid);
  f.validate();
  return f;
}

Q::PackedWeightsLowBit quantize_weight(py::handle weight, int bits, py::handle group_size,
                                       bool symmetric, const std::string& scale_type,
                                       const std::string& grid) {
  const Q::WeightOnlyFormat f = make_format(bits, group_size, symmetric, scale_type, grid);
  const py::array_t<float> w = float32_array(weight, "PackedWeightsLowBit.quantize: weight");
  if (w.ndim() != 2) {
    throw Q::Error("PackedWeightsLowBit.quantize: weight has shape " +
                   py::str(shape_tuple(shape_of(w))).cast<std::string>() +
                   " (expected a 2-D array [N, K])");
  }
  const std::int64_t n = w.shape(0), k = w.shape(1);
  py::gil_scoped_release release;
  return Q::PackedWeightsLowBit::quantize(w.data(), n, k, k, f);
}

// "auto" / "automatic", "float32", "int8" / "int8_dynamic", "int8_blocks".
Q::WeightOnlyActivations activations_from(const std::string& name) {
  if (name == "auto" || name == "automatic") return Q::WeightOnlyActivations::automatic;
  if (name == "float32") return Q::WeightOnlyActivations::float32;
  if (name == "int8" || name == "int8_dynamic") return Q::WeightOnlyActivations::int8_dynamic;
  if (name == "int8_blocks") return Q::WeightOnlyActivations::int8_blocks;
  throw Q::Error("weight_only_linear: activations = \"" + name +
                 "\" (expected \"auto\", \"float32\", \"int8\" or \"int8_blocks\")");
}

py::array linear(py::handle x, py::handle weights, py::handle bias,
                 const std::optional<std::string>& input_dtype, const std::string& activations) {
  const char* fn = "weight_only_linear";
  if (py::isinstance<Q::PackedWeightsLowBit>(x)) {
    throw py::type_error(std::string(fn) +
                         ": the first argument is a PackedWeightsLowBit (expected x first, then "
                         "w, as in gemm_*(x, w): weight_only_linear(x, w))");
  }
  if (!py::isinstance<Q::PackedWeightsLowBit>(weights)) {
    throw py::type_error(std::string(fn) + ": w is a " +
                         std::string(py::str(py::type::of(weights).attr("__name__"))) +
                         " (expected a PackedWeightsLowBit, from PackedWeightsLowBit.pack)");
  }
  const auto& w = weights.cast<const Q::PackedWeightsLowBit&>();
  const Q::WeightOnlyOptions options{activations_from(activations)};
  py::array data;
  Q::TensorView view;
  if (input_dtype && (*input_dtype == "bfloat16" || *input_dtype == "bf16")) {
    const py::array_t<std::uint16_t> bits = bits16_array(x, "weight_only_linear: x");
    data = bits;
    view = Q::TensorView(bits.data(), Q::ScalarType::bfloat16, shape_of(bits));
  } else if (!input_dtype || *input_dtype == "float32") {
    const py::array_t<float> f = float32_array(x, "weight_only_linear: x");
    data = f;
    view = Q::TensorView(f.data(), Q::ScalarType::float32, shape_of(f));
  } else {
    throw Q::Error(std::string(fn) + ": input_dtype = \"" + *input_dtype +
                   "\" (expected None, \"float32\" or \"bfloat16\")");
  }
  py::array_t<float> b;
  Q::TensorView bias_view;
  const Q::TensorView* bias_ptr = nullptr;
  if (!bias.is_none()) {
    b = float32_array(bias, "weight_only_linear: bias");
    bias_view = Q::TensorView(b.data(), Q::ScalarType::float32, shape_of(b));
    bias_ptr = &bias_view;
  }
  Q::Tensor out;
  {
    py::gil_scoped_release release;
    out = Q::weight_only_linear(view, w, bias_ptr, options);
  }
  return tensor_to_numpy(std::move(out));
}

py::dict format_dict(const Q::WeightOnlyFormat& f) {
  py::dict d;
  d["bits"] = f.bits;
  d["group_size"] = f.group_size;
  d["symmetric"] = f.symmetric;
  d["scale_type"] = Q::to_string(f.scale_type);
  d["grid"] = Q::to_string(f.grid);
  return d;
}

}  // namespace

void bind_weight_only(py::module_& m) {
  py::class_<Q::PackedWeightsLowBit> cls(m, "PackedWeightsLowBit", R"doc(
A weight W[N, K] quantized group-wise to int4 or int8 (symmetric or affine,
groups of 32 / 64 / 128 / 256 along K or per-channel, f32, bf16 or f16 scales, or
"super6" (int4 affine groups of 32 with 6-bit scales and minimums under float16
super-blocks of 256: Q4_K's 4.5 bits, lower error),
the error-minimizing "search" grid or the core's "min_max" one) and
packed once for weight_only_linear, which decodes it inside the kernel.
Immutable. See docs/formats.md, "Weight-only group formats".
)doc");
  cls.def_static("quantize", &quantize_weight, py::arg("weight"), py::kw_only(),
                 py::arg("bits") = 4, py::arg("group_size") = 128, py::arg("symmetric") = true,
                 py::arg("scale_type") = "f32", py::arg("grid") = "search",
                 "Quantizes float weights [N, K] (group_size None or 0: per-channel).");
  cls.def_static("from_quantized", &Q::PackedWeightsLowBit::from_quantized, py::arg("weight"),
                 "Packs a QuantizedTensor [N, K] (qint4 / quint4 / qint8 / quint8, per-group "
                 "along axis 1 or per-channel along axis 0).");
  cls.def_static(
      "from_ggml",
      [](const py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>& data,
         const py::object& type_arg, const std::vector<std::int64_t>& shape) {
        const Q::GgmlType type = parse_ggml_type(type_arg);
        if (shape.size() != 2) {
          throw Q::Error("PackedWeightsLowBit.from_ggml: shape = " + Q::to_string(Q::Shape(shape)) +
                         " (expected [N, K])");
        }
        const auto given = static_cast<std::int64_t>(data.size());
        const std::int64_t expected =
            shape[0] < 0 || shape[1] < 0 ? -1 : shape[0] * Q::ggml_row_size(type, shape[1]);
        if (given != expected) {
          throw Q::Error("PackedWeightsLowBit.from_ggml: " + std::to_string(given) +
                         " bytes given for " + std::string(Q::ggml_type_traits(type).name) + " " +
                         Q::to_string(Q::Shape(shape)) + " (expected " + std::to_string(expected) +
                         ")");
        }
        return Q::PackedWeightsLowBit::from_ggml(type, data.data(), shape[0], shape[1]);
      },
      py::arg("data"), py::arg("type"), py::arg("shape"),
      "Imports ggml q4_K blocks (a uint8 array, as lucidq.gguf.quantize returns them or a GGUF "
      "file stores them; rows of shape [N, K]) into the super6 "
      "format without loss: decode() equals ggml's dequantization bit for bit.");
  cls.def("to_quantized", &Q::PackedWeightsLowBit::to_quantized);
  cls.def_property_readonly("rows", &Q::PackedWeightsLowBit::rows);
  cls.def_property_readonly("columns", &Q::PackedWeightsLowBit::columns);
  cls.def_property_readonly("groups_per_row", &Q::PackedWeightsLowBit::groups_per_row);
  cls.def_property_readonly("packed_bytes", &Q::PackedWeightsLowBit::packed_bytes);
  cls.def_property_readonly(
      "format", [](const Q::PackedWeightsLowBit& w) { return format_dict(w.format()); });
  cls.def("codes", [](const Q::PackedWeightsLowBit& w) {
    return vector_to_numpy(w.codes(), {w.rows(), w.columns()});
  });
  cls.def("scales", [](const Q::PackedWeightsLowBit& w) {
    return vector_to_numpy(w.scales(), {w.rows(), w.groups_per_row()});
  });
  cls.def("zero_points", [](const Q::PackedWeightsLowBit& w) {
    return vector_to_numpy(w.zero_points(), {w.rows(), w.groups_per_row()});
  });
  cls.def(
      "offsets",
      [](const Q::PackedWeightsLowBit& w) {
        return vector_to_numpy(w.offsets(), {w.rows(), w.groups_per_row()});
      },
      "Offsets o [N, groups] with ŵ = s · q − o (fl(s · z), or fl(dmin · m) for super6).");
  cls.def(
      "decode",
      [](const Q::PackedWeightsLowBit& w) {
        return vector_to_numpy(w.decode(), {w.rows(), w.columns()});
      },
      "ŵ = s · (q − z) (super6: fl(s · q) − o) as float32 [N, K] (the kernels never form it).");
  cls.def("__repr__", [](const Q::PackedWeightsLowBit& w) {
    return "PackedWeightsLowBit(rows=" + std::to_string(w.rows()) +
           ", columns=" + std::to_string(w.columns()) + ", format=\"" + w.format().describe() +
           "\")";
  });
  m.def("weight_only_linear", &linear, py::arg("x"), py::arg("w"), py::arg("bias") = py::none(),
        py::arg("input_dtype") = py::none(), py::kw_only(), py::arg("activations") = "auto",
        "y = x · ŵᵀ + bias: x float [..., K] (or bfloat16 bit patterns in uint16 with "
        "input_dtype=\"bfloat16\"), returns float32 [..., N]. activations: \"float32\" "
        "(float FMAs), \"int8\" (rows of x quantized dynamically to uint8, exact int8 "
        "products; adds activation-quantization error), \"int8_blocks\" (x quantized to int8 "
        "with one scale per weight group, exact int8 products) or \"auto\" (int8_blocks, or int8 "
        "for per-channel weights, when the CPU has a fast kernel for it: AVX512-VNNI or AVX2; and "
        "x is finite; whatever "
        "the number of rows; docs/numerics.md).");
  m.def(
      "weight_only_activations",
      [](const Q::PackedWeightsLowBit& w, std::int64_t rows, const std::string& activations) {
        return Q::to_string(
            Q::resolve_activations(Q::WeightOnlyOptions{activations_from(activations)}, rows, w));
      },
      py::arg("w"), py::arg("m"), py::arg("activations") = "auto",
      "The path weight_only_linear takes for m rows of finite x: \"float32\", "
      "\"int8_dynamic\" or \"int8_blocks\".");
}

}  // namespace lucidq_python
