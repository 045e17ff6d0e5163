// Bindings of the ggml block quantizers: ggml_quantize (NumPy float -> block bytes) and
// ggml_dequantize (block bytes -> NumPy float32), byte-identical to ggml.
#include "common.hpp"

namespace lucidq_python {

Q::GgmlType parse_ggml_type(const py::object& type) {
  if (py::isinstance<py::str>(type)) {
    const std::string name = type.cast<std::string>();
    if (const auto parsed = Q::ggml_type_from_name(name)) return *parsed;
    throw Q::Error("ggml type \"" + name + "\" is unknown (expected a name such as q8_0, q4_K, " +
                   "iq4_nl, f16, bf16)");
  }
  if (py::isinstance<py::int_>(type)) {
    const auto id = type.cast<long long>();
    if (id >= 0 && id <= 0xffffffffLL) {
      if (const auto traits = Q::ggml_type_traits(static_cast<std::uint32_t>(id)))
        return traits->type;
    }
    throw Q::Error("ggml type id " + std::to_string(id) + " is unknown");
  }
  throw Q::Error("ggml type must be a name or an id (got " +
                 py::str(py::type::of(type)).cast<std::string>() + ")");
}

void bind_ggml(py::module_& m) {
  m.def(
      "ggml_quantize",
      [](const py::array_t<float, py::array::c_style | py::array::forcecast>& array,
         const py::object& type_arg,
         const std::optional<py::array_t<float, py::array::c_style | py::array::forcecast>>&
             imatrix) {
        const Q::GgmlType type = parse_ggml_type(type_arg);
        const std::int64_t n_per_row = array.ndim() == 0 ? 1 : array.shape(array.ndim() - 1);
        const std::int64_t rows = n_per_row == 0 ? 0 : array.size() / n_per_row;
        if (imatrix && imatrix->size() != n_per_row) {
          throw Q::Error("ggml_quantize: imatrix has " + std::to_string(imatrix->size()) +
                         " values (expected one per column: " + std::to_string(n_per_row) + ")");
        }
        const std::int64_t row_bytes = Q::ggml_row_size(type, n_per_row);
        py::array_t<std::uint8_t> out(static_cast<py::ssize_t>(rows * row_bytes));
        const float* weights = imatrix ? imatrix->data() : nullptr;
        {
          const py::gil_scoped_release release;
          Q::ggml_quantize_rows(type, array.data(), out.mutable_data(), rows, n_per_row, weights);
        }
        return out;
      },
      py::arg("array"), py::arg("type"), py::arg("imatrix") = py::none(),
      R"(Quantizes a float array to ggml blocks, exactly the bytes ggml writes.

The last axis is the row (ggml's innermost dimension); its length must be a multiple of the
type's block size (32, or 256 for the K-quants). `type` is a name ("q4_K", "Q8_0", "iq4_nl",
"f16", "bf16", ...) or ggml's type id. `imatrix` holds one importance weight per column and
selects ggml's imatrix algorithm. Returns the blocks as a 1-D uint8 array.
Raises ValueError for an unsupported type, a bad row length, NaN/Inf input or a value that
overflows fp16.)");

  m.def(
      "ggml_dequantize",
      [](const py::buffer& data, const py::object& type_arg,
         const std::vector<std::int64_t>& shape) {
        const Q::GgmlType type = parse_ggml_type(type_arg);
        const py::buffer_info info = data.request();
        std::int64_t numel = 1;
        for (const std::int64_t d : shape) {
          if (d < 0) throw Q::Error("ggml_dequantize: shape has a negative dimension");
          numel *= d;
        }
        const std::int64_t n_per_row = shape.empty() ? 1 : shape.back();
        const std::int64_t rows = n_per_row == 0 ? 0 : numel / n_per_row;
        const std::int64_t expected = rows * Q::ggml_row_size(type, n_per_row);
        const std::int64_t given = static_cast<std::int64_t>(info.size) * info.itemsize;
        if (given != expected) {
          throw Q::Error("ggml_dequantize: " + std::to_string(given) + " bytes given for " +
                         std::string(Q::ggml_type_traits(type).name) + " " +
                         Q::to_string(Q::Shape(shape)) + " (expected " + std::to_string(expected) +
                         ")");
        }
        std::vector<py::ssize_t> dims(shape.begin(), shape.end());
        py::array_t<float> out(dims);
        {
          const py::gil_scoped_release release;
          Q::ggml_dequantize_rows(type, info.ptr, out.mutable_data(), rows, n_per_row);
        }
        return out;
      },
      py::arg("data"), py::arg("type"), py::arg("shape"),
      R"(Decodes ggml blocks (bytes, bytearray, memoryview or a uint8 array) to a float32 array
of `shape` (the last axis is the row), exactly as ggml's to_float does.)");
}

}  // namespace lucidq_python
