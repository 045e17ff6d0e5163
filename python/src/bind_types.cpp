// Bindings of the vocabulary types: QScheme helpers, QDtype and its constants, float16 / bfloat16
// conversions.
#include "common.hpp"

namespace lucidq_python {
namespace {

// Applies `convert` to every element of `in` (GIL released), keeping the shape.
template <class Out, class In, class F>
py::array_t<Out> map_elements(const py::array_t<In>& in, F convert) {
  py::array_t<Out> out(std::vector<py::ssize_t>(in.shape(), in.shape() + in.ndim()));
  const In* src = in.data();
  Out* dst = out.mutable_data();
  const auto count = static_cast<std::size_t>(in.size());
  {
    py::gil_scoped_release release;
    for (std::size_t i = 0; i < count; ++i)
      dst[i] = convert(src[i]);
  }
  return out;
}

void bind_qscheme(py::module_& m) {
  m.def(
      "is_per_channel", [](Q::QScheme scheme) { return Q::is_per_channel(scheme); },
      py::arg("qscheme"), "True for the two per-channel schemes (QScheme.is_per_channel).");
  m.def(
      "is_symmetric", [](Q::QScheme scheme) { return Q::is_symmetric(scheme); }, py::arg("qscheme"),
      "True when zero_point is pinned, the two symmetric schemes.");
  m.def(
      "qscheme_from_string", [](const std::string& name) { return Q::qscheme_from_string(name); },
      py::arg("name"),
      "Parses \"per_channel_symmetric\" (or \"PER_CHANNEL_SYMMETRIC\"); raises ValueError "
      "naming the text and the four accepted names.");
  m.def(
      "_qscheme_to_string", [](Q::QScheme scheme) { return Q::to_string(scheme); },
      py::arg("qscheme"), "\"per_channel_symmetric\", etc. (str() of a QScheme).");
}

void bind_qdtype(py::module_& m) {
  py::class_<Q::QDtype> cls(m, "QDtype", R"doc(
The integer grid codes live on: bits, signedness, [quant_min, quant_max], storage.

Built-in constants cover the full ranges (qint8 = [-128, 127], quint8 = [0, 255],
qint4, quint4, qint2, quint2, qint16, qint32); with_range() and narrow_range()
derive validated custom grids. QDtype("qint8[-127,127]") parses a name, and every
function that takes a QDtype also accepts such a name.

>>> import lucidq as Q
>>> Q.qint8.narrow_range()
QDtype('qint8[-127,127]')
>>> (Q.quint4.quant_min, Q.quint4.quant_max, Q.quint4.storage)
(0, 15, 'packed4')
)doc");
  cls.def(py::init([](const std::string& name) { return Q::qdtype_from_string(name); }),
          py::arg("name"),
          "Parses \"qint8\" / \"int8\", \"quint4\" / \"uint4\", ... or a custom range such as "
          "\"qint8[-127,127]\"; raises ValueError for an unknown name or a bad range.");
  cls.def_static("full_range", &Q::QDtype::full_range, py::arg("bits"), py::arg("is_signed"),
                 "The full two's-complement (signed) or unsigned range of `bits` bits. Valid "
                 "bits: 2, 4, 8, 16, 32 (32 only signed); ValueError otherwise.");
  cls.def("with_range", &Q::QDtype::with_range, py::arg("quant_min"), py::arg("quant_max"),
          "The same storage with codes restricted to [quant_min, quant_max]. ValueError when the "
          "range is empty, cannot hold 0, or does not fit the bits.");
  cls.def("narrow_range", &Q::QDtype::narrow_range,
          "The range symmetric about the grid's centre: qint8 -> [-127, 127], quint8 -> [0, 254].");
  cls.def("storage_bytes", &Q::QDtype::storage_bytes, py::arg("count"),
          "Bytes needed to store `count` codes (sub-byte codes packed, rounded up).");
  cls.def_property_readonly("name", &Q::QDtype::name,
                            "\"qint8\", \"quint4\", or \"qint8[-127,127]\" for a custom range.");
  cls.def_property_readonly("bits", &Q::QDtype::bits);
  cls.def_property_readonly("is_signed", &Q::QDtype::is_signed);
  cls.def_property_readonly("quant_min", &Q::QDtype::quant_min);
  cls.def_property_readonly("quant_max", &Q::QDtype::quant_max);
  cls.def_property_readonly(
      "storage", [](const Q::QDtype& d) { return Q::to_string(d.storage()); },
      "How codes are stored: \"packed2\", \"packed4\", \"int8\", \"uint8\", \"int16\", "
      "\"uint16\" or \"int32\".");
  cls.def_property_readonly("has_custom_range", &Q::QDtype::has_custom_range);
  cls.def_property_readonly(
      "symmetric_zero_point", &Q::QDtype::symmetric_zero_point,
      "The code symmetric schemes pin real 0 to: 0 (signed), 2^(bits-1) (unsigned full range), "
      "floor((quant_min + quant_max) / 2) (unsigned custom range).");
  cls.def("__eq__", [](const Q::QDtype& self, py::object other) -> py::object {
    if (!py::isinstance<Q::QDtype>(other))
      return py::reinterpret_borrow<py::object>(Py_NotImplemented);
    return py::bool_(self == other.cast<const Q::QDtype&>());
  });
  cls.def("__ne__", [](const Q::QDtype& self, py::object other) -> py::object {
    if (!py::isinstance<Q::QDtype>(other))
      return py::reinterpret_borrow<py::object>(Py_NotImplemented);
    return py::bool_(self != other.cast<const Q::QDtype&>());
  });
  cls.def("__hash__", [](const Q::QDtype& d) {
    return py::hash(py::make_tuple(d.bits(), d.is_signed(), d.quant_min(), d.quant_max()));
  });
  cls.def("__repr__", [](const Q::QDtype& d) { return "QDtype('" + d.name() + "')"; });
  cls.def("__str__", &Q::QDtype::name);
  cls.def(py::pickle(
      [](const Q::QDtype& d) { return py::make_tuple(d.name()); },
      [](const py::tuple& state) { return Q::qdtype_from_string(state[0].cast<std::string>()); }));

  m.attr("qint8") = Q::qint8;
  m.attr("quint8") = Q::quint8;
  m.attr("qint4") = Q::qint4;
  m.attr("quint4") = Q::quint4;
  m.attr("qint2") = Q::qint2;
  m.attr("quint2") = Q::quint2;
  m.attr("qint16") = Q::qint16;
  m.attr("qint32") = Q::qint32;
  m.def(
      "qdtype_from_string", [](const std::string& name) { return Q::qdtype_from_string(name); },
      py::arg("name"),
      "Parses \"qint8\" / \"int8\", \"quint4\" / \"uint4\", ... and \"qint8[-127,127]\".");
}

void bind_conversions(py::module_& m) {
  m.def(
      "float_to_bfloat16",
      [](py::handle x) {
        return map_elements<std::uint16_t>(float32_array(x, "float_to_bfloat16: x"),
                                           [](float v) { return Q::float_to_bfloat16(v); });
      },
      py::arg("x"),
      "float32 values -> bfloat16 bit patterns (uint16 array, same shape), rounding to "
      "nearest even; NaN stays a quiet NaN. float64 input is first rounded to float32.");
  m.def(
      "bfloat16_to_float",
      [](py::handle bits) {
        return map_elements<float>(bits16_array(bits, "bfloat16_to_float: bits"),
                                   [](std::uint16_t b) { return Q::bfloat16_to_float(b); });
      },
      py::arg("bits"), "bfloat16 bit patterns (uint16 array) -> float32 values (exact).");
  m.def(
      "float_to_float16",
      [](py::handle x) {
        return map_elements<std::uint16_t>(float32_array(x, "float_to_float16: x"),
                                           [](float v) { return Q::float_to_float16(v); });
      },
      py::arg("x"),
      "float32 values -> IEEE half bit patterns (uint16 array), rounding to nearest even, "
      "overflow to +-Inf, NaN kept. View the result with .view(numpy.float16).");
  m.def(
      "float16_to_float",
      [](py::handle bits) {
        return map_elements<float>(bits16_array(bits, "float16_to_float: bits"),
                                   [](std::uint16_t b) { return Q::float16_to_float(b); });
      },
      py::arg("bits"),
      "IEEE half bit patterns (uint16 array, or a float16 array viewed as uint16) -> float32 "
      "(exact, subnormals included).");
}

}  // namespace

void bind_types(py::module_& m) {
  bind_qscheme(m);
  bind_qdtype(m);
  bind_conversions(m);
}

}  // namespace lucidq_python
