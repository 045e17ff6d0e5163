// Bindings of the packed int8 GEMM (gemm.hpp): PackedWeightsInt8, gemm_* output stages, dynamic.

#include "common.hpp"
#include "lucid/quantization/gemm.hpp"
#include "lucid/quantization/stage_checks.hpp"

namespace lucidq_python {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw Q::Error(message);
}

std::string text_of(py::handle value) {
  return py::str(value).cast<std::string>();
}

std::string shape_text(const py::array& array) {
  return text_of(shape_tuple(shape_of(array)));
}

py::array as_array(py::handle x) {
  return py::module_::import("numpy").attr("asarray")(x);
}

// A 2-D array whose rows may be strided: the pointer to row 0 and the row stride in
// elements, or a C-contiguous copy when the rows are not evenly spaced dense runs.
struct Rows {
  py::array array;  // keeps the data alive
  const void* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t row_stride = 0;
};

Rows strided_rows(py::array array, const char* numpy_dtype) {
  const auto item = static_cast<py::ssize_t>(array.itemsize());
  const std::int64_t m = array.shape(0);
  const std::int64_t k = array.shape(1);
  const py::ssize_t s0 = array.strides(0);
  const py::ssize_t s1 = array.strides(1);
  const bool dense_rows = (k == 1 || s1 == item) && array.dtype().attr("isnative").cast<bool>();
  const bool spaced = m <= 1 || (s0 > 0 && s0 % item == 0 && s0 / item >= k);
  if (!dense_rows || !spaced) {
    array = py::module_::import("numpy").attr("ascontiguousarray")(array,
                                                                   py::arg("dtype") = numpy_dtype);
  }
  Rows rows;
  rows.array = array;
  rows.data = array.data();
  rows.rows = m;
  rows.row_stride = (m <= 1 || array.strides(0) == 0) ? k : array.strides(0) / item;
  return rows;
}

std::string columns_text(const Q::PackedWeightsInt8& w) {
  return "K = w.columns = " + std::to_string(w.columns());
}

// Quantized activations A[M, K]: uint8 or int8 codes, the zero point inside the type.
struct ActivationInput {
  Rows rows;
  Q::ActivationMatrix matrix;
};

ActivationInput activation_input(py::handle a, const Q::PackedWeightsInt8& w, float scale,
                                 std::int64_t zero_point, const std::string& fn) {
  const py::array array = as_array(a);
  const char kind = array.dtype().kind();
  if (array.itemsize() != 1 || (kind != 'u' && kind != 'i')) {
    fail(fn + ": a has dtype " + text_of(array.dtype()) +
         " (expected uint8 or int8 activation codes)");
  }
  if (array.ndim() != 2 || array.shape(1) != w.columns()) {
    fail(fn + ": a has shape " + shape_text(array) + " (expected a 2-D array [M, K] with " +
         columns_text(w) + ")");
  }
  const bool is_signed = kind == 'i';
  const Q::ScalarType type = is_signed ? Q::ScalarType::int8 : Q::ScalarType::uint8;
  Q::check_activation_zero_point(fn, "a_zero_point", type, zero_point, "a");
  Q::check_scale(fn, "a_scale", scale);
  ActivationInput input;
  input.rows = strided_rows(array, is_signed ? "int8" : "uint8");
  input.matrix.data = input.rows.data;
  input.matrix.type = type;
  input.matrix.rows = input.rows.rows;
  input.matrix.row_stride = input.rows.row_stride;
  input.matrix.scale = scale;
  input.matrix.zero_point = static_cast<std::int32_t>(zero_point);
  return input;
}

// An optional per-output-channel vector (bias): None, or exactly N = w.rows values.
template <class T>
std::vector<T> channel_vector(py::handle x, const Q::PackedWeightsInt8& w,
                              const std::string& what) {
  if (x.is_none()) return {};
  const py::array array = as_array(x);
  if (array.ndim() != 1 || array.shape(0) != w.rows()) {
    fail(what + " has shape " + shape_text(array) +
         " (expected [N] with N = w.rows = " + std::to_string(w.rows()) + ")");
  }
  if constexpr (std::is_same_v<T, float>) {
    return float_vector(array, what.c_str());
  } else {
    return int32_vector(array, what.c_str());
  }
}

// The weight W[N, K] of pack(): any integer array whose values fit int8.
py::array weight_codes(py::handle w) {
  py::array array = as_array(w);
  const char kind = array.dtype().kind();
  if (kind != 'i' && kind != 'u') {
    fail("PackedWeightsInt8.pack: w has dtype " + text_of(array.dtype()) +
         " (expected int8 codes)");
  }
  if (array.ndim() != 2) {
    fail("PackedWeightsInt8.pack: w has shape " + shape_text(array) +
         " (expected a 2-D array [N, K])");
  }
  if (array.itemsize() != 1 || kind != 'i') {
    if (array.size() > 0) {
      const py::object lo = array.attr("min")();
      const py::object hi = array.attr("max")();
      if (lo < py::int_(-128) || hi > py::int_(127)) {
        fail("PackedWeightsInt8.pack: w holds values from " + text_of(lo) + " to " + text_of(hi) +
             " (expected int8 codes in [-128, 127])");
      }
    }
    array = array.attr("astype")("int8");
  }
  return array;
}

py::array float_matrix(py::handle x, const std::string& what, const std::string& expected) {
  const py::array array = as_array(x);
  const auto size = array.itemsize();
  if (array.dtype().kind() != 'f' || !(size == 2 || size == 4 || size == 8)) {
    fail(what + " has dtype " + text_of(array.dtype()) + " (expected float32, float16 or float64)");
  }
  if (array.ndim() != 2)
    fail(what + " has shape " + shape_text(array) + " (expected " + expected + ")");
  if (array.dtype().kind() == 'f' && size == 4) return array;
  return array.attr("astype")("float32");
}

std::string packed_repr(const Q::PackedWeightsInt8& w) {
  return "PackedWeightsInt8(rows=" + std::to_string(w.rows()) +
         ", columns=" + std::to_string(w.columns()) +
         ", per_channel=" + (w.per_channel() ? "True" : "False") + ")";
}

py::array_t<std::int8_t> unpacked_array(const Q::PackedWeightsInt8& w) {
  std::vector<std::int8_t> codes;
  {
    py::gil_scoped_release release;
    codes = w.unpack();
  }
  return vector_to_numpy(codes, Q::Shape{w.rows(), w.columns()});
}

// Rebuilds a PackedWeightsInt8 from (codes [N, K], N scales, per_channel): the pickled state.
Q::PackedWeightsInt8 from_state(const py::tuple& t) {
  if (t.size() != 3)
    fail("PackedWeightsInt8: pickled state of " + std::to_string(t.size()) +
         " items (expected 3: codes, scales, per_channel)");
  const py::array codes = weight_codes(t[0]);
  const std::vector<float> scales = float_vector(t[1], "PackedWeightsInt8: scales");
  const bool per_channel = t[2].cast<bool>();
  const Rows rows = strided_rows(codes, "int8");
  const auto* data = static_cast<const std::int8_t*>(rows.data);
  if (per_channel) {
    const Q::Shape shape{codes.shape(0), codes.shape(1)};
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(shape[0] * shape[1]));
    for (std::int64_t n = 0; n < shape[0]; ++n) {
      std::copy(data + n * rows.row_stride, data + n * rows.row_stride + shape[1],
                reinterpret_cast<std::int8_t*>(bytes.data()) + n * shape[1]);
    }
    const Q::QParams qparams =
        Q::QParams::per_channel(scales, std::vector<std::int32_t>(scales.size(), 0), 0, Q::qint8,
                                Q::QScheme::PER_CHANNEL_SYMMETRIC);
    return Q::PackedWeightsInt8::from_quantized(Q::QuantizedTensor(shape, qparams, bytes));
  }
  const std::vector<float> one(scales.begin(),
                               scales.begin() + std::min<std::size_t>(1, scales.size()));
  return Q::PackedWeightsInt8::pack(data, codes.shape(0), codes.shape(1), rows.row_stride, one);
}

void bind_packed_weights(py::module_& m) {
  py::class_<Q::PackedWeightsInt8> cls(m, "PackedWeightsInt8", R"doc(
Symmetric int8 weights W[N, K] (N output channels, K inputs) packed once for the
int8 GEMM, with one scale per output channel (or one per tensor) and the
column sums that fold the activation zero point out of the inner loop.
Immutable: copies share the packed bytes; safe to use from several threads.

Build with PackedWeightsInt8.quantize(w_float, per_channel=True, qdtype=qint8),
PackedWeightsInt8.pack(codes_int8, scales) or from_quantized(QuantizedTensor).
unpack() returns the codes as an int8 array [N, K]; pickling keeps codes and scales.

>>> import lucidq as Q, numpy as np
>>> w = Q.PackedWeightsInt8.quantize(np.array([[1.0, -0.5], [0.25, 2.0]], np.float32))
>>> w.rows, w.columns, w.per_channel
(2, 2, True)
>>> w.unpack().tolist()
[[127, -64], [16, 127]]
)doc");
  cls.def_static(
      "pack",
      [](py::handle w, py::handle scales) {
        const py::array codes = weight_codes(w);
        const std::vector<float> s = float_vector(scales, "PackedWeightsInt8.pack: scales");
        if (s.size() != 1 && static_cast<std::int64_t>(s.size()) != codes.shape(0)) {
          fail("PackedWeightsInt8.pack: scales has " + std::to_string(s.size()) +
               " values (expected 1 per tensor or N = " + std::to_string(codes.shape(0)) +
               " per output channel)");
        }
        const Rows rows = strided_rows(codes, "int8");
        py::gil_scoped_release release;
        return Q::PackedWeightsInt8::pack(static_cast<const std::int8_t*>(rows.data),
                                          codes.shape(0), codes.shape(1), rows.row_stride, s);
      },
      py::arg("w"), py::arg("scales"),
      "Packs int8 codes W[N, K] (any integer array with values in [-128, 127]; row n is output "
      "channel n) with 1 (per-tensor) or N (per-channel) scales.");
  cls.def_static(
      "from_quantized",
      [](const Q::QuantizedTensor& q) {
        py::gil_scoped_release release;
        return Q::PackedWeightsInt8::from_quantized(q);
      },
      py::arg("weight"),
      "Packs a QuantizedTensor [N, K] with qint8 codes and zero points 0 (per-tensor or "
      "per-channel along axis 0).");
  cls.def_static(
      "quantize",
      [](py::handle w, bool per_channel, const Q::QDtype& qdtype) {
        const py::array floats =
            float_matrix(w, "PackedWeightsInt8.quantize: w", "a 2-D array [N, K]");
        const Rows rows = strided_rows(floats, "float32");
        py::gil_scoped_release release;
        return Q::PackedWeightsInt8::quantize(static_cast<const float*>(rows.data), floats.shape(0),
                                              floats.shape(1), rows.row_stride, per_channel,
                                              qdtype);
      },
      py::arg("w"), py::arg("per_channel") = true, py::arg("qdtype") = Q::qint8,
      "Quantizes float weights W[N, K] to symmetric qint8 (one scale per output channel when "
      "per_channel, else one), as PerChannelMinMaxObserver(qscheme=per_channel_symmetric) / "
      "MinMaxObserver(per_tensor_symmetric) + quantize would, and packs them. float64 / "
      "float16 are rounded to float32 first.");
  cls.def_property_readonly("rows", &Q::PackedWeightsInt8::rows, "N, the output channels.");
  cls.def_property_readonly("columns", &Q::PackedWeightsInt8::columns, "K, the reduction depth.");
  cls.def_property_readonly("per_channel", &Q::PackedWeightsInt8::per_channel);
  cls.def_property_readonly(
      "scales",
      [](const Q::PackedWeightsInt8& w) {
        const auto s = w.scales();
        return vector_to_numpy(std::vector<float>(s.begin(), s.end()));
      },
      "N float32 scales (a per-tensor scale repeated N times).");
  cls.def_property_readonly(
      "column_sums",
      [](const Q::PackedWeightsInt8& w) {
        const auto s = w.column_sums();
        return vector_to_numpy(std::vector<std::int32_t>(s.begin(), s.end()));
      },
      "sum over k of W[n, k] for every output channel n (int32).");
  cls.def_property_readonly("packed_bytes", &Q::PackedWeightsInt8::packed_bytes,
                            "Bytes of packed codes (scales and sums excluded).");
  cls.def("unpack", &unpacked_array, "The codes as an int8 array [N, K].");
  cls.def(
      "to_quantized",
      [](const Q::PackedWeightsInt8& w) {
        py::gil_scoped_release release;
        return w.to_quantized();
      },
      "The weight as a QuantizedTensor [N, K] (qint8, per-channel along axis 0 or per-tensor).");
  cls.def("__repr__", &packed_repr);
  cls.def(py::pickle(
      [](const Q::PackedWeightsInt8& w) {
        const auto s = w.scales();
        return py::make_tuple(unpacked_array(w),
                              vector_to_numpy(std::vector<float>(s.begin(), s.end())),
                              w.per_channel());
      },
      &from_state));
}

constexpr const char* kStageDoc = R"doc(
a: uint8 or int8 activation codes [M, K] (K = w.columns); rows may be strided
(e.g. a[:, :K] of a wider array) and are read in place, other layouts are copied.
M = 0 gives an empty [0, N] result. a_zero_point must lie in a's type range. The product is
acc[m, n] = sum_k (a[m, k] - a_zero_point) * W[n, k], exact in int32.
)doc";

void bind_stages(py::module_& m) {
  m.def(
      "gemm_int32",
      [](py::handle a, const Q::PackedWeightsInt8& w, std::int64_t a_zero_point) {
        const ActivationInput in = activation_input(a, w, 1.0f, a_zero_point, "gemm_int32");
        py::array_t<std::int32_t> out(
            {static_cast<py::ssize_t>(in.matrix.rows), static_cast<py::ssize_t>(w.rows())});
        const Q::Int32Output c{out.mutable_data(), w.rows()};
        {  // an empty batch (M = 0) gives an empty [0, N] result
          py::gil_scoped_release release;
          Q::gemm(in.matrix, w, c);
        }
        return out;
      },
      py::arg("a"), py::arg("w"), py::arg("a_zero_point") = 0,
      (std::string("The int32 accumulators acc [M, N] of (a - a_zero_point) @ W.T.\n") + kStageDoc)
          .c_str());
  m.def(
      "gemm_float",
      [](py::handle a, const Q::PackedWeightsInt8& w, float a_scale, std::int64_t a_zero_point,
         py::handle bias) {
        const ActivationInput in = activation_input(a, w, a_scale, a_zero_point, "gemm_float");
        const std::vector<float> b = channel_vector<float>(bias, w, "gemm_float: bias");
        py::array_t<float> out(
            {static_cast<py::ssize_t>(in.matrix.rows), static_cast<py::ssize_t>(w.rows())});
        const Q::FloatOutput c{out.mutable_data(), w.rows(), b.empty() ? nullptr : b.data()};
        {  // an empty batch (M = 0) gives an empty [0, N] result
          py::gil_scoped_release release;
          Q::gemm(in.matrix, w, c);
        }
        return out;
      },
      py::arg("a"), py::arg("w"), py::arg("a_scale"), py::arg("a_zero_point"),
      py::arg("bias") = py::none(),
      (std::string("float32 [M, N]: float(acc) * (a_scale * w.scales[n]) + bias[n], each "
                   "operation rounded to float32 (bias: None or N floats).\n") +
       kStageDoc)
          .c_str());
  m.def(
      "gemm_requantize",
      [](py::handle a, const Q::PackedWeightsInt8& w, float a_scale, std::int64_t a_zero_point,
         float out_scale, std::int64_t out_zero_point, const Q::QDtype& out_qdtype, py::handle bias,
         py::handle bias_int32, bool relu) {
        const std::string fn = "gemm_requantize";
        const ActivationInput in = activation_input(a, w, a_scale, a_zero_point, fn);
        Q::check_output_qdtype(fn, "out_qdtype", out_qdtype);
        Q::check_scale(fn, "out_scale", out_scale);
        Q::check_output_zero_point(fn, "out_zero_point", out_qdtype, out_zero_point);
        Q::check_one_bias(fn, "bias", "bias_int32", !bias.is_none(), !bias_int32.is_none());
        const std::vector<float> b = channel_vector<float>(bias, w, fn + ": bias");
        const std::vector<std::int32_t> b32 =
            channel_vector<std::int32_t>(bias_int32, w, fn + ": bias_int32");
        const bool is_signed = out_qdtype.is_signed();
        const std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(in.matrix.rows),
                                             static_cast<py::ssize_t>(w.rows())};
        py::array out(py::dtype(is_signed ? "int8" : "uint8"), shape);
        Q::RequantizedOutput c;
        c.data = out.mutable_data();
        c.row_stride = w.rows();
        c.scale = out_scale;
        c.zero_point = static_cast<std::int32_t>(out_zero_point);
        c.qdtype = out_qdtype;
        c.bias = b.empty() ? nullptr : b.data();
        c.bias_int32 = b32.empty() ? nullptr : b32.data();
        c.relu = relu;
        {  // an empty batch (M = 0) gives an empty [0, N] result
          py::gil_scoped_release release;
          Q::gemm(in.matrix, w, c);
        }
        return out;
      },
      py::arg("a"), py::arg("w"), py::arg("a_scale"), py::arg("a_zero_point"), py::arg("out_scale"),
      py::arg("out_zero_point"), py::arg("out_qdtype") = Q::quint8, py::kw_only(),
      py::arg("bias") = py::none(), py::arg("bias_int32") = py::none(), py::arg("relu") = false,
      (std::string(R"doc(8-bit output codes [M, N] (uint8 for unsigned out_qdtype, int8 for signed):
clamp(nearbyint(double(acc + bias_int32[n]) * m[n] + o[n]) + out_zero_point),
m[n] = a_scale * w.scales[n] / out_scale and o[n] = bias[n] / out_scale in double,
ties to even, clamped to out_qdtype's range (from out_zero_point up with relu=True).
bias (N floats, output units) and bias_int32 (N int32 in units of a_scale * w.scales[n],
as PyTorch / ONNX quantize it) are exclusive.
)doc") +
       kStageDoc)
          .c_str());
}

// Float activations [M, K] for the dynamic path: float32 read in place (strided rows too).
Rows float_rows(py::handle x, const Q::PackedWeightsInt8& w, const std::string& fn) {
  const py::array floats =
      float_matrix(x, fn + ": x", "a 2-D array [M, K] with " + columns_text(w));
  if (floats.shape(1) != w.columns()) {
    fail(fn + ": x has shape " + shape_text(floats) + " (expected a 2-D array [M, K] with " +
         columns_text(w) + ")");
  }
  return strided_rows(floats, "float32");
}

void bind_dynamic(py::module_& m) {
  m.def(
      "gemm_dynamic",
      [](py::handle x, const Q::PackedWeightsInt8& w, py::handle bias, bool per_row,
         const Q::QDtype& qdtype) {
        const Rows rows = float_rows(x, w, "gemm_dynamic");
        const std::vector<float> b = channel_vector<float>(bias, w, "gemm_dynamic: bias");
        py::array_t<float> out(
            {static_cast<py::ssize_t>(rows.rows), static_cast<py::ssize_t>(w.rows())});
        float* c = out.mutable_data();
        {  // an empty batch (M = 0) gives an empty [0, N] result
          py::gil_scoped_release release;
          Q::gemm_dynamic(static_cast<const float*>(rows.data), rows.rows, rows.row_stride, w,
                          b.empty() ? nullptr : b.data(), c, w.rows(),
                          Q::DynamicQuantization{per_row, qdtype});
        }
        return out;
      },
      py::arg("x"), py::arg("w"), py::arg("bias") = py::none(), py::arg("per_row") = true,
      py::arg("qdtype") = Q::quint8, R"doc(
Dynamic quantization (torch.ops.quantized.linear_dynamic): x float32 [M, K]
(float64 / float16 rounded to float32) is quantized with calculate_qparams over
each row's min / max (per_row=True) or the whole x's, widened to include 0, to
qdtype (quint8 or qint8); then float32 [M, N] = float(acc) * (s_x[m] * w.scales[n]) + bias[n].
)doc");
  m.def(
      "linear_dynamic",
      [](py::handle x, const Q::PackedWeightsInt8& w, py::handle bias, bool per_row,
         const Q::QDtype& qdtype) {
        const py::array floats =
            py::module_::import("numpy").attr("ascontiguousarray")(as_array(x));
        const auto size = floats.itemsize();
        if (floats.dtype().kind() != 'f' || !(size == 2 || size == 4 || size == 8)) {
          fail("linear_dynamic: x has dtype " + text_of(floats.dtype()) +
               " (expected float32, float16 or float64)");
        }
        if (floats.ndim() < 1 || floats.shape(floats.ndim() - 1) != w.columns()) {
          fail("linear_dynamic: x has shape " + shape_text(floats) + " (expected [..., K] with " +
               columns_text(w) + ")");
        }
        const py::array_t<float> x32 = float32_array(floats, "linear_dynamic: x");
        const std::vector<float> b = channel_vector<float>(bias, w, "linear_dynamic: bias");
        const Q::TensorView xv(x32.data(), Q::ScalarType::float32, shape_of(x32));
        const Q::TensorView bv(b.data(), Q::ScalarType::float32,
                               Q::Shape{static_cast<std::int64_t>(b.size())});
        Q::Tensor out;
        {
          py::gil_scoped_release release;
          out = Q::linear_dynamic(xv, w, b.empty() ? nullptr : &bv,
                                  Q::DynamicQuantization{per_row, qdtype});
        }
        return tensor_to_numpy(std::move(out));
      },
      py::arg("x"), py::arg("w"), py::arg("bias") = py::none(), py::arg("per_row") = true,
      py::arg("qdtype") = Q::quint8,
      "gemm_dynamic over the last axis: x float [..., K] -> float32 [..., N] (per_row quantizes "
      "each [K] vector on its own).");
}

}  // namespace

void bind_gemm(py::module_& m) {
  m.attr("max_gemm_depth") = Q::max_gemm_depth;
  bind_packed_weights(m);
  bind_stages(m);
  bind_dynamic(m);
}

}  // namespace lucidq_python
