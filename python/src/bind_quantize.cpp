// Bindings of QuantizedTensor, quantize / dequantize / fake_quantize (+ backward) and code packing.
#include "common.hpp"

namespace lucidq_python {
namespace {

py::array_t<std::int32_t> int_repr_array(const Q::QuantizedTensor& q) {
  std::vector<std::int32_t> codes;
  {
    py::gil_scoped_release release;
    codes = q.int_repr();
  }
  return vector_to_numpy(codes, q.shape());
}

// A read-only uint8 view of q's storage that keeps the Python QuantizedTensor alive.
py::array storage_view(py::object self) {
  const auto& q = self.cast<const Q::QuantizedTensor&>();
  const auto bytes = q.storage();
  py::array view(py::dtype("uint8"), {static_cast<py::ssize_t>(bytes.size())}, bytes.data(), self);
  view.attr("flags").attr("writeable") = false;
  return view;
}

std::string quantized_repr(const Q::QuantizedTensor& q) {
  return "QuantizedTensor(shape=" + py::repr(shape_tuple(q.shape())).cast<std::string>() +
         ", qparams=" + py::repr(py::cast(q.qparams())).cast<std::string>() + ")";
}

void bind_quantized_tensor(py::module_& m) {
  py::class_<Q::QuantizedTensor> cls(m, "QuantizedTensor", R"doc(
Integer codes in their dtype's real storage, with the QParams that map them back
to reals (quint8 in uint8, qint4 packed two per byte, element 0 in the low nibble).

shape: tuple; qparams / qdtype: the parameters; storage: the raw bytes as a
read-only NumPy uint8 array (a view, valid while the tensor lives); int_repr():
every code as a NumPy int32 array of the tensor's shape (int32 for every dtype,
so sub-byte and unsigned codes read naturally; PyTorch returns int8 / uint8).
)doc");
  cls.def(py::init([](py::handle shape, const Q::QParams& qparams, py::handle storage) {
            const auto bytes = byte_array(storage, "QuantizedTensor: storage");
            return Q::QuantizedTensor(
                shape_from(shape, "QuantizedTensor: shape"), qparams,
                std::vector<std::uint8_t>(bytes.data(), bytes.data() + bytes.size()));
          }),
          py::arg("shape"), py::arg("qparams"), py::arg("storage"),
          "Wraps existing storage bytes; ValueError when the qparams do not fit the shape or the "
          "storage is not exactly qdtype.storage_bytes(numel) bytes.");
  cls.def_property_readonly("shape",
                            [](const Q::QuantizedTensor& q) { return shape_tuple(q.shape()); });
  cls.def_property_readonly("numel", &Q::QuantizedTensor::numel);
  cls.def_property_readonly("qparams", &Q::QuantizedTensor::qparams);
  cls.def_property_readonly("qdtype", &Q::QuantizedTensor::qdtype);
  cls.def_property_readonly("storage", &storage_view,
                            "The raw storage bytes (read-only uint8 view).");
  cls.def("int_repr", &int_repr_array, "All codes as an int32 array of the tensor's shape.");
  cls.def("__repr__", &quantized_repr);
  cls.def(py::pickle(
      [](const Q::QuantizedTensor& q) {
        const auto bytes = q.storage();
        return py::make_tuple(shape_tuple(q.shape()), q.qparams(),
                              py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
      },
      [](const py::tuple& t) {
        const auto bytes = byte_array(t[2], "QuantizedTensor: storage");
        return Q::QuantizedTensor(
            shape_from(t[0], "QuantizedTensor: shape"), t[1].cast<Q::QParams>(),
            std::vector<std::uint8_t>(bytes.data(), bytes.data() + bytes.size()));
      }));
}

py::array mask_input(py::handle mask) {
  const py::array array = py::module_::import("numpy").attr("asarray")(mask);
  if (array.dtype().kind() != 'b') {
    throw Q::Error("fake_quantize_backward: mask has dtype " +
                   py::str(array.dtype()).cast<std::string>() +
                   " (expected bool, the mask fake_quantize(..., return_mask=True) returned)");
  }
  return py::module_::import("numpy").attr("asarray")(array, py::arg("dtype") = "bool",
                                                      py::arg("order") = "C");
}

void bind_quantize_functions(py::module_& m) {
  constexpr const char* kQuantizeDoc = R"doc(
Quantizes x: q = clamp(nearbyint(x * (1/s)) + z, quant_min, quant_max), ties to
even (PyTorch's CPU formula). NaN maps to the zero point; +-Inf saturate.

Forms: quantize(x, qparams) with given parameters, or quantize(x, qscheme, qdtype,
ch_axis=0, group_size=0) choosing them from x's own range (choose_qparams).
qscheme and qdtype also accept their names ("per_tensor_affine", "qint8[-127,127]").

x: NumPy float32 or float16 (used as they are), float64 (rounded to float32
first), Python lists / numbers (converted to float32), or bfloat16 bit patterns
in a uint16 array with input_dtype="bfloat16". Other dtypes raise ValueError
naming the dtype; non-contiguous arrays are copied to contiguous ones.
)doc";
  m.def(
      "quantize",
      [](py::handle x, const Q::QParams& qparams, const std::optional<std::string>& input_dtype) {
        const FloatInput in = float_input(x, input_dtype, "quantize");
        py::gil_scoped_release release;
        return Q::quantize(in.view, qparams);
      },
      py::arg("x"), py::arg("qparams"), py::kw_only(), py::arg("input_dtype") = py::none(),
      kQuantizeDoc);
  m.def(
      "quantize",
      [](py::handle x, Q::QScheme qscheme, Q::QDtype qdtype, int ch_axis, std::int64_t group_size,
         const std::optional<std::string>& input_dtype) {
        const FloatInput in = float_input(x, input_dtype, "quantize");
        py::gil_scoped_release release;
        return Q::quantize(in.view, qscheme, qdtype, ch_axis, group_size);
      },
      py::arg("x"), py::arg("qscheme"), py::arg("qdtype"), py::arg("ch_axis") = 0,
      py::arg("group_size") = 0, py::kw_only(), py::arg("input_dtype") = py::none());
  m.def(
      "dequantize",
      [](const Q::QuantizedTensor& q) {
        Q::Tensor out;
        {
          py::gil_scoped_release release;
          out = Q::dequantize(q);
        }
        return tensor_to_numpy(std::move(out));
      },
      py::arg("q"),
      "The float32 reconstruction s * (q - z) of every code (rounded once), shaped like q.");
  m.def(
      "fake_quantize",
      [](py::handle x, const Q::QParams& qparams, bool return_mask,
         const std::optional<std::string>& input_dtype) -> py::object {
        const FloatInput in = float_input(x, input_dtype, "fake_quantize");
        Q::FakeQuantizeResult result;
        {
          py::gil_scoped_release release;
          result = Q::fake_quantize_with_mask(in.view, qparams);
        }
        py::array out = tensor_to_numpy(std::move(result.output));
        if (!return_mask) return out;
        return py::make_tuple(out, tensor_to_numpy(std::move(result.mask)));
      },
      py::arg("x"), py::arg("qparams"), py::arg("return_mask") = false, py::kw_only(),
      py::arg("input_dtype") = py::none(), R"doc(
dequantize(quantize(x, qparams)) in one pass: a float32 array shaped like x
(float32 even for float16 input). With return_mask=True returns (out, mask):
mask is a bool array, True where quant_min <= nearbyint(x / s) + z <= quant_max
before clamping (False for NaN), the straight-through estimator's mask as in
torch.fake_quantize_per_tensor_affine. Input rules as for quantize().
)doc");
  m.def(
      "fake_quantize_backward",
      [](py::handle grad_out, py::handle mask) {
        const auto grad = float32_array(grad_out, "fake_quantize_backward: grad_out");
        const py::array keep = mask_input(mask);
        const Q::TensorView grad_view(grad.data(), Q::ScalarType::float32, shape_of(grad));
        const Q::TensorView mask_view(keep.data(), Q::ScalarType::boolean, shape_of(keep));
        Q::Tensor out;
        {
          py::gil_scoped_release release;
          out = Q::fake_quantize_backward(grad_view, mask_view);
        }
        return tensor_to_numpy(std::move(out));
      },
      py::arg("grad_out"), py::arg("mask"),
      "The straight-through backward: grad_out * mask as float32 (NaN / Inf gradients stay "
      "visible where the mask is False: Inf * 0 = NaN, as PyTorch). grad_out float64 is "
      "rounded to float32; mask must be bool and of grad_out's shape.");
}

void bind_pack(py::module_& m) {
  m.def(
      "pack_codes",
      [](py::handle codes, Q::QDtype qdtype) {
        const py::array flat =
            py::module_::import("numpy").attr("asarray")(codes).attr("reshape")(-1);
        const std::vector<std::int32_t> values = int32_vector(flat, "pack_codes: codes");
        std::vector<std::uint8_t> bytes;
        {
          py::gil_scoped_release release;
          bytes = Q::pack_codes(values, qdtype);
        }
        return vector_to_numpy(bytes);
      },
      py::arg("codes"), py::arg("qdtype"),
      "Integer codes (any shape, read row-major) -> qdtype's storage bytes as a uint8 array: "
      "4-bit codes two per byte and 2-bit codes four per byte, element 0 in the lowest bits, "
      "wider codes little-endian. ValueError naming the first code outside the range.");
  m.def(
      "unpack_codes",
      [](py::handle storage, std::int64_t count, Q::QDtype qdtype) {
        const auto bytes = byte_array(storage, "unpack_codes: storage");
        std::vector<std::int32_t> codes;
        {
          py::gil_scoped_release release;
          codes = Q::unpack_codes(
              std::span<const std::uint8_t>(bytes.data(), static_cast<std::size_t>(bytes.size())),
              count, qdtype);
        }
        return vector_to_numpy(codes);
      },
      py::arg("storage"), py::arg("count"), py::arg("qdtype"),
      "The inverse of pack_codes: `count` codes (int32 array) read from storage (bytes or a "
      "uint8 array). ValueError when storage is too short.");
}

}  // namespace

void bind_quantize(py::module_& m) {
  bind_quantized_tensor(m);
  bind_quantize_functions(m);
  bind_pack(m);
}

}  // namespace lucidq_python
