// Conversions between Python / NumPy objects and the core's types (the casters and helpers of
// common.hpp).
#include <limits>

#include "common.hpp"

namespace py = pybind11;
namespace Q = lucid::quantization;

namespace {

py::handle g_qscheme_class;  // lucidq._qscheme.QScheme, owned for the process's lifetime

py::module_ numpy() {
  return py::module_::import("numpy");
}

std::string text_of(py::handle value) {
  return py::str(value).cast<std::string>();
}

std::string dtype_name(const py::array& array) {
  return text_of(array.dtype());
}

// True for the Python values we convert by value (rather than by their NumPy dtype).
bool is_plain_python(py::handle x) {
  return py::isinstance<py::list>(x) || py::isinstance<py::tuple>(x) ||
         py::isinstance<py::float_>(x) || py::isinstance<py::int_>(x);
}

// An exact numpy.ndarray (not a subclass): np.asarray returns it as it is.
bool is_plain_ndarray(py::handle x) {
  static PyObject* const ndarray = py::object(numpy().attr("ndarray")).release().ptr();  // kept
  return Py_TYPE(x.ptr()) == reinterpret_cast<PyTypeObject*>(ndarray);
}

py::array as_array(py::handle x) {
  if (is_plain_ndarray(x)) return py::reinterpret_borrow<py::array>(x);
  return numpy().attr("asarray")(x);
}

// np.asarray(x, dtype=dtype, order="C"): contiguous, native byte order, 0-d kept 0-d.
// An array that already is all that is returned without calling NumPy (the per-call cost
// of small GEMMs and layers).
py::array as_contiguous(py::handle x, const char* dtype) {
  if (is_plain_ndarray(x)) {
    auto array = py::reinterpret_borrow<py::array>(x);
    if ((array.flags() & py::array::c_style) != 0 && array.dtype().is(py::dtype(dtype))) {
      return array;
    }
  }
  return numpy().attr("asarray")(x, py::arg("dtype") = dtype, py::arg("order") = "C");
}

[[noreturn]] void fail(const std::string& message) {
  throw Q::Error(message);
}

// Raises when an integer array holds values outside [lo, hi].
void check_int_range(const py::array& array, long long lo, long long hi, const char* what,
                     const char* expected) {
  if (array.size() == 0) return;
  const py::object min = array.attr("min")();
  const py::object max = array.attr("max")();
  if (min < py::int_(lo) || max > py::int_(hi)) {
    fail(std::string(what) + ": values from " + text_of(min) + " to " + text_of(max) +
         " (expected " + expected + ")");
  }
}

}  // namespace

namespace pybind11::detail {

bool type_caster<Q::QScheme>::load(handle src, bool convert) {
  if (g_qscheme_class && isinstance(src, g_qscheme_class)) {
    value = static_cast<Q::QScheme>(src.attr("value").cast<int>());
    return true;
  }
  if (convert && isinstance<str>(src)) {
    value = Q::qscheme_from_string(src.cast<std::string>());
    return true;
  }
  return false;
}

handle type_caster<Q::QScheme>::cast(Q::QScheme scheme, return_value_policy, handle) {
  if (!g_qscheme_class) pybind11_fail("lucidq: QScheme class not registered");
  return g_qscheme_class(static_cast<int>(scheme)).release();
}

}  // namespace pybind11::detail

namespace lucidq_python {

void set_qscheme_class(py::handle cls) {
  g_qscheme_class = cls.inc_ref();
}

FloatInput float_input(py::handle x, const std::optional<std::string>& input_dtype,
                       const char* what) {
  FloatInput input;
  Q::ScalarType type = Q::ScalarType::float32;
  if (input_dtype) {
    type = Q::scalar_type_from_string(*input_dtype);
    if (type != Q::ScalarType::float32 && type != Q::ScalarType::float16 &&
        type != Q::ScalarType::bfloat16) {
      fail(std::string(what) + ": input_dtype = \"" + *input_dtype +
           "\" (expected \"float32\", \"float16\" or \"bfloat16\")");
    }
  }
  if (type == Q::ScalarType::bfloat16) {
    input.array = bits16_array(x, what);
  } else if (type == Q::ScalarType::float16) {
    const py::array array = as_array(x);
    input.array = array.dtype().kind() == 'f' && array.itemsize() == 2
                      ? as_contiguous(array, "float16")
                      : py::array(bits16_array(array, what));
  } else if (input_dtype || is_plain_python(x)) {
    input.array = float32_array(x, what);
  } else {
    const py::array array = as_array(x);
    const char kind = array.dtype().kind();
    const auto size = array.itemsize();
    if (kind == 'f' && size == 2) {
      input.array = as_contiguous(array, "float16");
      type = Q::ScalarType::float16;
    } else if (kind == 'f' && (size == 4 || size == 8)) {
      input.array = as_contiguous(array, "float32");
    } else if (kind == 'u' && size == 2) {
      fail(std::string(what) +
           ": x has dtype uint16 (expected float32, float16 or float64; for bfloat16 bit "
           "patterns in a uint16 array pass input_dtype=\"bfloat16\")");
    } else {
      fail(std::string(what) + ": x has dtype " + dtype_name(array) +
           " (expected float32, float16 or float64, or uint16 with input_dtype=\"bfloat16\")");
    }
  }
  input.view = Q::TensorView(input.array.data(), type, shape_of(input.array));
  return input;
}

py::array_t<float> float32_array(py::handle x, const char* what) {
  py::array result;
  if (is_plain_python(x)) {
    result = as_contiguous(x, "float32");
  } else {
    const py::array array = as_array(x);
    const auto size = array.itemsize();
    if (array.dtype().kind() != 'f' || !(size == 2 || size == 4 || size == 8)) {
      fail(std::string(what) + ": dtype " + dtype_name(array) +
           " (expected float32, float16 or float64)");
    }
    result = as_contiguous(array, "float32");
  }
  return py::array_t<float>::ensure(result);
}

py::array_t<std::uint16_t> bits16_array(py::handle x, const char* what) {
  const py::array array = as_array(x);
  const char kind = array.dtype().kind();
  if (kind != 'u' && kind != 'i') {
    fail(std::string(what) + ": dtype " + dtype_name(array) +
         " (expected 16-bit patterns in a uint16 or int16 array)");
  }
  py::array bits;
  if (array.itemsize() == 2) {
    bits = as_contiguous(array, kind == 'u' ? "uint16" : "int16").attr("view")("uint16");
  } else {
    check_int_range(array, 0, 65535, what, "16-bit patterns in [0, 65535]");
    bits = as_contiguous(array, "uint16");
  }
  return py::array_t<std::uint16_t>::ensure(bits);
}

std::vector<std::int32_t> int32_vector(py::handle x, const char* what) {
  const py::array array = as_array(x);
  if (array.ndim() > 1) {
    fail(std::string(what) + ": " + std::to_string(array.ndim()) +
         "-D array (expected an integer or a 1-D sequence of integers)");
  }
  const char kind = array.dtype().kind();
  if (kind != 'i' && kind != 'u') {
    fail(std::string(what) + ": dtype " + dtype_name(array) + " (expected integers)");
  }
  check_int_range(array, std::numeric_limits<std::int32_t>::min(),
                  std::numeric_limits<std::int32_t>::max(), what, "int32 values");
  const auto values = py::array_t<std::int32_t>::ensure(as_contiguous(array, "int32"));
  return {values.data(), values.data() + values.size()};
}

std::vector<float> float_vector(py::handle x, const char* what) {
  const py::array array = as_array(x);
  if (array.ndim() > 1) {
    fail(std::string(what) + ": " + std::to_string(array.ndim()) +
         "-D array (expected a number or a 1-D sequence of numbers)");
  }
  const char kind = array.dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u') {
    fail(std::string(what) + ": dtype " + dtype_name(array) + " (expected real numbers)");
  }
  const auto values = py::array_t<float>::ensure(as_contiguous(array, "float32"));
  return {values.data(), values.data() + values.size()};
}

py::array_t<std::uint8_t> byte_array(py::handle x, const char* what) {
  if (py::isinstance<py::bytes>(x) || PyByteArray_Check(x.ptr()) || PyMemoryView_Check(x.ptr())) {
    return py::array_t<std::uint8_t>::ensure(
        numpy().attr("frombuffer")(x, py::arg("dtype") = "uint8"));
  }
  const py::array array = as_array(x);
  const char kind = array.dtype().kind();
  if (kind != 'u' && kind != 'i') {
    fail(std::string(what) + ": dtype " + dtype_name(array) + " (expected bytes or uint8)");
  }
  py::array bytes;
  if (array.itemsize() == 1) {
    bytes = as_contiguous(array, kind == 'u' ? "uint8" : "int8").attr("view")("uint8");
  } else {
    check_int_range(array, 0, 255, what, "bytes in [0, 255]");
    bytes = as_contiguous(array, "uint8");
  }
  return py::array_t<std::uint8_t>::ensure(bytes.attr("reshape")(-1));
}

Q::Shape shape_of(const py::array& array) {
  return Q::Shape(array.shape(), array.shape() + array.ndim());
}

Q::Shape shape_from(py::handle sequence, const char* what) {
  if (py::isinstance<py::int_>(sequence)) return {sequence.cast<std::int64_t>()};
  if (!py::isinstance<py::sequence>(sequence)) {
    fail(std::string(what) + ": " + text_of(py::type::of(sequence)) +
         " (expected a sequence of integers)");
  }
  Q::Shape shape;
  const py::object index = py::module_::import("operator").attr("index");
  for (const py::handle dim : sequence)
    shape.push_back(index(dim).cast<std::int64_t>());
  return shape;
}

py::tuple shape_tuple(const Q::Shape& shape) {
  py::tuple out(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i)
    out[i] = py::int_(shape[i]);
  return out;
}

py::array tensor_to_numpy(Q::Tensor&& tensor) {
  // NumPy has no bfloat16: its bit patterns travel as uint16.
  const std::string name =
      tensor.type() == Q::ScalarType::bfloat16 ? "uint16" : Q::to_string(tensor.type());
  auto* owned = new Q::Tensor(std::move(tensor));
  py::capsule owner(owned, [](void* p) { delete static_cast<Q::Tensor*>(p); });
  const Q::Shape& shape = owned->shape();
  return py::array(py::dtype(name), std::vector<py::ssize_t>(shape.begin(), shape.end()),
                   owned->data(), owner);
}

}  // namespace lucidq_python
