// Bindings of the int8 convolution (conv.hpp): PackedConvWeights and conv2d_* output stages.
#include <cmath>
#include <string>

#include "common.hpp"
#include "lucid/quantization/conv.hpp"
#include "lucid/quantization/stage_checks.hpp"

namespace lucidq_python {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw Q::Error(message);
}

std::string text_of(py::handle value) {
  return py::str(value).cast<std::string>();
}

py::array contiguous(py::handle x, const char* dtype) {
  return py::module_::import("numpy").attr("ascontiguousarray")(x, py::arg("dtype") = dtype);
}

Q::ConvLayout layout_of(const std::string& name) {
  if (name == "nchw" || name == "NCHW") return Q::ConvLayout::nchw;
  if (name == "nhwc" || name == "NHWC") return Q::ConvLayout::nhwc;
  fail("conv2d: layout = \"" + name + "\" (expected \"nchw\" or \"nhwc\")");
}

std::pair<std::int64_t, std::int64_t> pair_of(py::handle v, const char* name) {
  if (py::isinstance<py::int_>(v)) {
    const auto x = v.cast<std::int64_t>();
    return {x, x};
  }
  const auto seq = v.cast<std::vector<std::int64_t>>();
  if (seq.size() != 2)
    fail(std::string("conv2d: ") + name + " = " + text_of(v) + " (expected an int or 2 ints)");
  return {seq[0], seq[1]};
}

// padding: "same", "valid", an int, (h, w) or (top, bottom, left, right).
Q::ConvPadding padding_of(py::handle v) {
  if (py::isinstance<py::str>(v)) {
    const auto name = v.cast<std::string>();
    if (name == "same") return Q::ConvPadding::same();
    if (name == "valid") return Q::ConvPadding::valid();
    fail("conv2d: padding = \"" + name + "\" (expected \"same\", \"valid\" or amounts)");
  }
  if (py::isinstance<py::int_>(v)) {
    const auto x = v.cast<std::int64_t>();
    return Q::ConvPadding::symmetric(x, x);
  }
  const auto seq = v.cast<std::vector<std::int64_t>>();
  if (seq.size() == 2) return Q::ConvPadding::symmetric(seq[0], seq[1]);
  if (seq.size() == 4)
    return {Q::ConvPadding::Mode::explicit_amounts, seq[0], seq[1], seq[2], seq[3]};
  fail("conv2d: padding = " + text_of(v) +
       " (expected \"same\", \"valid\", an int, (h, w) or (top, bottom, left, right))");
}

Q::Conv2dOptions options_of(py::handle stride, py::handle padding, py::handle dilation) {
  Q::Conv2dOptions o;
  std::tie(o.stride_h, o.stride_w) = pair_of(stride, "stride");
  std::tie(o.dilation_h, o.dilation_w) = pair_of(dilation, "dilation");
  o.padding = padding_of(padding);
  return o;
}

// The input codes: a 4-D uint8 / int8 array in `layout`, kept alive by `array`.
struct Input {
  py::array array;
  Q::ConvInput conv;
};

Input input_of(py::handle x, const std::string& layout, float scale, std::int64_t zero_point) {
  py::array array = py::module_::import("numpy").attr("asarray")(x);
  const char kind = array.dtype().kind();
  if (array.itemsize() != 1 || (kind != 'u' && kind != 'i'))
    fail("conv2d: x has dtype " + text_of(array.dtype()) + " (expected uint8 or int8 codes)");
  if (array.ndim() != 4)
    fail("conv2d: x has shape " + text_of(shape_tuple(shape_of(array))) +
         " (expected 4-D [B, C, H, W] or [B, H, W, C])");
  Input in;
  in.array = contiguous(array, kind == 'i' ? "int8" : "uint8");
  auto& a = in.conv;
  a.data = in.array.data();
  a.type = kind == 'i' ? Q::ScalarType::int8 : Q::ScalarType::uint8;
  a.layout = layout_of(layout);
  a.batch = array.shape(0);
  const bool nchw = a.layout == Q::ConvLayout::nchw;
  a.channels = array.shape(nchw ? 1 : 3);
  a.height = array.shape(nchw ? 2 : 1);
  a.width = array.shape(nchw ? 3 : 2);
  a.scale = scale;
  Q::check_activation_zero_point("conv2d", "x_zero_point", a.type, zero_point, "x");
  a.zero_point = static_cast<std::int32_t>(zero_point);
  return in;
}

std::vector<py::ssize_t> output_shape(const Q::ConvInput& a, const Q::PackedConvWeights& w,
                                      const Q::ConvGeometry& g) {
  if (a.layout == Q::ConvLayout::nchw) return {a.batch, w.out_channels(), g.out_h, g.out_w};
  return {a.batch, g.out_h, g.out_w, w.out_channels()};
}

std::vector<float> bias_of(py::handle bias, const Q::PackedConvWeights& w) {
  if (bias.is_none()) return {};
  std::vector<float> b = float_vector(bias, "conv2d: bias");
  if (static_cast<std::int64_t>(b.size()) != w.out_channels())
    fail("conv2d: bias has " + std::to_string(b.size()) +
         " values (expected out_channels = " + std::to_string(w.out_channels()) + ")");
  return b;
}

// The 4-D weight as given (any dtype: pack() checks its values, quantize() converts to float32).
py::array weight_array(py::handle w) {
  py::array array = py::module_::import("numpy").attr("asarray")(w);
  if (array.ndim() != 4)
    fail("PackedConvWeights: w has shape " + text_of(shape_tuple(shape_of(array))) +
         " (expected 4-D [C_out, C_in / groups, KH, KW])");
  return array;
}

}  // namespace

void bind_conv(py::module_& m) {
  py::class_<Q::PackedConvWeights> cls(m, "PackedConvWeights", R"doc(
Symmetric int8 convolution weights [C_out, C_in / groups, KH, KW] (torch's OIHW) packed once
for conv2d_*: per-group int8 GEMM panels, or depthwise taps when each group has one input
channel. One scale per output channel (or one per tensor).

>>> import lucidq as Q, numpy as np
>>> w = Q.PackedConvWeights.quantize(np.ones((4, 3, 3, 3), np.float32))
>>> w.out_channels, w.in_channels, w.kernel_size, w.groups
(4, 3, (3, 3), 1)
)doc");
  cls.def_static(
      "pack",
      [](py::handle w, py::handle scales, std::int64_t groups) {
        py::array codes = weight_array(w);
        const char kind = codes.dtype().kind();
        if (kind != 'i' && kind != 'u')
          fail("PackedConvWeights.pack: w has dtype " + text_of(codes.dtype()) +
               " (expected int8 codes)");
        if (codes.size() > 0) {
          const py::object lo = codes.attr("min")(), hi = codes.attr("max")();
          if (lo < py::int_(-128) || hi > py::int_(127))
            fail("PackedConvWeights.pack: w holds values from " + text_of(lo) + " to " +
                 text_of(hi) + " (expected int8 codes)");
        }
        codes = contiguous(codes, "int8");
        const std::vector<float> s = float_vector(scales, "PackedConvWeights.pack: scales");
        return Q::PackedConvWeights::pack(static_cast<const std::int8_t*>(codes.data()),
                                          codes.shape(0), codes.shape(1), codes.shape(2),
                                          codes.shape(3), groups, s);
      },
      py::arg("w"), py::arg("scales"), py::arg("groups") = 1,
      "Packs int8 codes [C_out, C_in / groups, KH, KW] with 1 or C_out scales.");
  cls.def_static(
      "quantize",
      [](py::handle w, std::int64_t groups, bool per_channel, const Q::QDtype& qdtype) {
        py::array array = contiguous(weight_array(w), "float32");
        return Q::PackedConvWeights::quantize(static_cast<const float*>(array.data()),
                                              array.shape(0), array.shape(1), array.shape(2),
                                              array.shape(3), groups, per_channel, qdtype);
      },
      py::arg("w"), py::arg("groups") = 1, py::arg("per_channel") = true,
      py::arg("qdtype") = Q::qint8,
      "Quantizes float weights [C_out, C_in / groups, KH, KW] to symmetric int8 (per output "
      "channel by default) and packs them.");
  cls.def_property_readonly("out_channels", &Q::PackedConvWeights::out_channels);
  cls.def_property_readonly("in_channels", &Q::PackedConvWeights::in_channels);
  cls.def_property_readonly("groups", &Q::PackedConvWeights::groups);
  cls.def_property_readonly("per_channel", &Q::PackedConvWeights::per_channel);
  cls.def_property_readonly("depthwise", &Q::PackedConvWeights::depthwise);
  cls.def_property_readonly("kernel_size", [](const Q::PackedConvWeights& w) {
    return py::make_tuple(w.kernel_h(), w.kernel_w());
  });
  cls.def_property_readonly("scales", [](const Q::PackedConvWeights& w) {
    const auto s = w.scales();
    return vector_to_numpy(std::vector<float>(s.begin(), s.end()));
  });
  cls.def(
      "unpack",
      [](const Q::PackedConvWeights& w) {
        return vector_to_numpy(w.unpack(), Q::Shape{w.out_channels(), w.in_channels() / w.groups(),
                                                    w.kernel_h(), w.kernel_w()});
      },
      "The int8 codes [C_out, C_in / groups, KH, KW].");
  cls.def("__repr__", [](const Q::PackedConvWeights& w) {
    return "PackedConvWeights(out_channels=" + std::to_string(w.out_channels()) +
           ", in_channels=" + std::to_string(w.in_channels()) + ", kernel_size=(" +
           std::to_string(w.kernel_h()) + ", " + std::to_string(w.kernel_w()) +
           "), groups=" + std::to_string(w.groups()) + ")";
  });

  m.def(
      "conv2d_int32",
      [](py::handle x, const Q::PackedConvWeights& w, std::int64_t x_zero_point, py::handle stride,
         py::handle padding, py::handle dilation, const std::string& layout) {
        Input in = input_of(x, layout, 1.0f, x_zero_point);
        const auto o = options_of(stride, padding, dilation);
        const auto g = Q::conv2d_geometry(in.conv, w, o);
        py::array_t<std::int32_t> out(output_shape(in.conv, w, g));
        py::gil_scoped_release release;
        Q::conv2d(in.conv, w, o, Q::Int32Output{out.mutable_data(), 0});
        return out;
      },
      py::arg("x"), py::arg("w"), py::arg("x_zero_point"), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("layout") = "nchw",
      "Exact int32 sums of (x − x_zero_point) ⊛ w; x is uint8 / int8 codes [B, C, H, W] (or "
      "[B, H, W, C] with layout=\"nhwc\"); padding is an int, (h, w), (top, bottom, left, right), "
      "\"same\" or \"valid\".");
  m.def(
      "conv2d_float",
      [](py::handle x, const Q::PackedConvWeights& w, float x_scale, std::int64_t x_zero_point,
         py::handle bias, py::handle stride, py::handle padding, py::handle dilation,
         const std::string& layout) {
        Input in = input_of(x, layout, x_scale, x_zero_point);
        const auto o = options_of(stride, padding, dilation);
        const auto g = Q::conv2d_geometry(in.conv, w, o);
        const auto b = bias_of(bias, w);
        py::array_t<float> out(output_shape(in.conv, w, g));
        py::gil_scoped_release release;
        Q::conv2d(in.conv, w, o,
                  Q::FloatOutput{out.mutable_data(), 0, b.empty() ? nullptr : b.data()});
        return out;
      },
      py::arg("x"), py::arg("w"), py::arg("x_scale"), py::arg("x_zero_point"),
      py::arg("bias") = py::none(), py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("dilation") = 1, py::arg("layout") = "nchw",
      "float32 float(acc) · (x_scale · s_w[o]) + bias[o] (see conv2d_int32 for the arguments).");
  m.def(
      "conv2d_requantize",
      [](py::handle x, const Q::PackedConvWeights& w, float x_scale, std::int64_t x_zero_point,
         float out_scale, std::int64_t out_zero_point, const Q::QDtype& out_qdtype, py::handle bias,
         bool relu, py::handle stride, py::handle padding, py::handle dilation,
         const std::string& layout) {
        Input in = input_of(x, layout, x_scale, x_zero_point);
        const auto o = options_of(stride, padding, dilation);
        const auto g = Q::conv2d_geometry(in.conv, w, o);
        const auto b = bias_of(bias, w);
        if (out_qdtype.bits() != 8)
          fail("conv2d_requantize: out_qdtype = " + out_qdtype.name() +
               " (expected an 8-bit grid)");
        const bool is_signed = out_qdtype.quant_min() < 0;
        py::array out = is_signed
                            ? py::array(py::array_t<std::int8_t>(output_shape(in.conv, w, g)))
                            : py::array(py::array_t<std::uint8_t>(output_shape(in.conv, w, g)));
        Q::RequantizedOutput c;
        c.data = out.mutable_data();
        c.scale = out_scale;
        c.zero_point = static_cast<std::int32_t>(out_zero_point);
        c.qdtype = out_qdtype;
        c.bias = b.empty() ? nullptr : b.data();
        c.relu = relu;
        py::gil_scoped_release release;
        Q::conv2d(in.conv, w, o, c);
        return out;
      },
      py::arg("x"), py::arg("w"), py::arg("x_scale"), py::arg("x_zero_point"), py::arg("out_scale"),
      py::arg("out_zero_point"), py::arg("out_qdtype") = Q::quint8, py::arg("bias") = py::none(),
      py::arg("relu") = false, py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("dilation") = 1, py::arg("layout") = "nchw",
      "8-bit codes clamp(nearbyint(acc · x_scale·s_w[o]/out_scale + bias[o]/out_scale) + "
      "out_zero_point), ReLU fused into the clamp (see conv2d_int32 for the arguments).");
  m.def(
      "conv2d_path",
      [](py::handle x, const Q::PackedConvWeights& w, py::handle stride, py::handle padding,
         py::handle dilation, const std::string& layout) {
        Input in = input_of(x, layout, 1.0f, 0);
        return Q::conv2d_path(in.conv, w, options_of(stride, padding, dilation));
      },
      py::arg("x"), py::arg("w"), py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("dilation") = 1, py::arg("layout") = "nchw",
      "Which path conv2d takes: \"pointwise\", \"depthwise\" or \"im2col\".");
}

}  // namespace lucidq_python
