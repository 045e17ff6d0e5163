// Shared pieces of the _lucidq bindings: type casters (QScheme, QDtype), NumPy conversions.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lucid/quantization.hpp"

namespace pybind11::detail {

/// QScheme <-> the Python enum lucidq.QScheme (defined in lucidq/_qscheme.py so
/// that every returned member is the one singleton: `q.qscheme is Q.per_tensor_affine`).
/// Loading also accepts the names, "per_channel_symmetric" or "PER_CHANNEL_SYMMETRIC";
/// an unknown name raises ValueError listing the accepted ones.
template <>
struct type_caster<lucid::quantization::QScheme> {
  PYBIND11_TYPE_CASTER(lucid::quantization::QScheme, const_name("QScheme"));
  bool load(handle src, bool convert);
  static handle cast(lucid::quantization::QScheme scheme, return_value_policy policy,
                     handle parent);
};

/// QDtype is a bound class; loading additionally accepts a name such as
/// "qint8" or "qint8[-127,127]" (qdtype_from_string; an unknown name raises ValueError).
template <>
struct type_caster<lucid::quantization::QDtype> : type_caster_base<lucid::quantization::QDtype> {
  bool load(handle src, bool convert) {
    if (type_caster_base<lucid::quantization::QDtype>::load(src, convert)) return true;
    if (convert && isinstance<str>(src)) {
      parsed_.emplace(lucid::quantization::qdtype_from_string(src.cast<std::string>()));
      value = &*parsed_;
      return true;
    }
    return false;
  }

 private:
  std::optional<lucid::quantization::QDtype> parsed_;
};

}  // namespace pybind11::detail

namespace lucidq_python {

namespace py = pybind11;
namespace Q = lucid::quantization;

/// Remembers the Python class lucidq.QScheme (called once from the module's init).
void set_qscheme_class(py::handle cls);

/// A floating-point NumPy input seen as a TensorView. `array` keeps the data alive
/// (C-contiguous, native byte order); `view` points into it.
struct FloatInput {
  py::array array;
  Q::TensorView view;
};

/// Converts `x` for the core (see the rules in docs of lucidq.quantize):
/// - NumPy float32 / float16 arrays are used as they are (made contiguous if needed);
/// - float64 arrays are rounded to float32 (nearest);
/// - with input_dtype="bfloat16", a uint16 / int16 array holds bfloat16 bit patterns;
///   input_dtype="float16" also accepts half bit patterns in a uint16 array;
/// - Python lists, tuples and numbers are converted to float32;
/// - anything else raises ValueError naming `what` and the dtype.
FloatInput float_input(py::handle x, const std::optional<std::string>& input_dtype,
                       const char* what);
/// A float32 C-contiguous copy-or-view of `x` (float16 / float32 / float64 arrays and
/// Python sequences); other dtypes raise ValueError naming `what`.
py::array_t<float> float32_array(py::handle x, const char* what);
/// A uint16 array of bit patterns (bfloat16 / float16): any integer array whose values
/// fit [0, 65535] (2-byte integer arrays are reinterpreted as they are).
py::array_t<std::uint16_t> bits16_array(py::handle x, const char* what);
/// A 1-D vector of int32 from a Python int or 1-D integer array-like; values outside
/// int32 or non-integers raise ValueError naming `what`.
std::vector<std::int32_t> int32_vector(py::handle x, const char* what);
/// A 1-D vector of float32 from a Python number or 1-D float array-like.
std::vector<float> float_vector(py::handle x, const char* what);
/// A byte buffer (bytes, bytearray, memoryview or 1-byte integer array), flattened.
py::array_t<std::uint8_t> byte_array(py::handle x, const char* what);
/// A ggml type given as a name ("q4_K", any case) or as ggml's numeric id (bind_ggml.cpp).
Q::GgmlType parse_ggml_type(const py::object& type);

/// NumPy shape <-> Shape.
Q::Shape shape_of(const py::array& array);
Q::Shape shape_from(py::handle sequence, const char* what);
py::tuple shape_tuple(const Q::Shape& shape);

/// Moves a core Tensor into a NumPy array of the matching dtype without copying.
py::array tensor_to_numpy(Q::Tensor&& tensor);
/// Copies a vector (a std::vector or a QParams array) into a new 1-D (or `shape`d) NumPy array.
template <class T, class Allocator>
py::array_t<T> vector_to_numpy(const std::vector<T, Allocator>& values, const Q::Shape& shape) {
  py::array_t<T> out(std::vector<py::ssize_t>(shape.begin(), shape.end()));
  if (!values.empty()) std::copy(values.begin(), values.end(), out.mutable_data());
  return out;
}
template <class T, class Allocator>
py::array_t<T> vector_to_numpy(const std::vector<T, Allocator>& values) {
  return vector_to_numpy(values, Q::Shape{static_cast<std::int64_t>(values.size())});
}
/// `values` as a QParams array.
template <class T>
Q::ParamArray<T> param_array(const std::vector<T>& values) {
  return Q::ParamArray<T>(values.begin(), values.end());
}

/// Registration, one function per binding file.
void bind_types(py::module_& m);
void bind_qparams(py::module_& m);
void bind_quantize(py::module_& m);
void bind_metrics(py::module_& m);
void bind_observers(py::module_& m);
void bind_runtime(py::module_& m);
void bind_plot(py::module_& m);
void bind_gemm(py::module_& m);
void bind_checkpoint(py::module_& m);
void bind_safetensors(py::module_& m);
void bind_weight_only(py::module_& m);
void bind_conv(py::module_& m);
void bind_embedding(py::module_& m);
void bind_ggml(py::module_& m);
void bind_gguf(py::module_& m);

/// A ProgressCallback calling `callback(done, total, bytes_done, bytes_total, tensor)` with
/// the GIL held; Ctrl-C or an exception it raises aborts the job (bind_checkpoint.cpp).
Q::ProgressCallback progress_callback(const py::object& callback);
/// The recipe from JSON text or a file path (at most one given; neither: an empty recipe).
Q::QuantRecipe recipe_from(const std::optional<std::string>& recipe_json,
                           const std::optional<std::string>& recipe_path);
void bind_algorithms(py::module_& m);

}  // namespace lucidq_python
