// Bindings of QParams, calculate_qparams, observe_range / RangeStats and choose_qparams.
#include <span>
#include <sstream>

#include "common.hpp"

namespace lucidq_python {
namespace {

float one_float(py::handle x, const char* what) {
  const std::vector<float> values = float_vector(x, what);
  if (values.size() != 1) {
    throw Q::Error(std::string(what) + ": " + std::to_string(values.size()) +
                   " values (expected a single number)");
  }
  return values[0];
}

std::int32_t one_int32(py::handle x, const char* what) {
  const std::vector<std::int32_t> values = int32_vector(x, what);
  if (values.size() != 1) {
    throw Q::Error(std::string(what) + ": " + std::to_string(values.size()) +
                   " values (expected a single integer)");
  }
  return values[0];
}

// zero_point=None: the pinned code for symmetric schemes, 0 for affine, one per scale.
std::vector<std::int32_t> zero_points_or_default(py::handle zero_point, Q::QScheme qscheme,
                                                 const Q::QDtype& qdtype, std::size_t count,
                                                 const char* what) {
  if (!zero_point.is_none()) return int32_vector(zero_point, what);
  const auto z = Q::is_symmetric(qscheme) ? qdtype.symmetric_zero_point() : 0;
  return std::vector<std::int32_t>(count, static_cast<std::int32_t>(z));
}

template <class T>
std::string list_text(std::span<const T> values) {
  std::string text = "[";
  const std::size_t shown = std::min<std::size_t>(values.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) {
    if (i) text += ", ";
    text += std::string(py::repr(py::cast(values[i])));
  }
  if (shown < values.size()) text += ", ... (" + std::to_string(values.size()) + " values)";
  return text + "]";
}

std::string qparams_repr(const Q::QParams& q) {
  std::string text = "QParams(qscheme=" + Q::to_string(q.qscheme) + ", qdtype=" + q.qdtype.name() +
                     ", scale=" + list_text<float>(q.scale) +
                     ", zero_point=" + list_text<std::int32_t>(q.zero_point);
  if (Q::is_per_channel(q.qscheme)) text += ", ch_axis=" + std::to_string(q.ch_axis);
  if (q.group_size != 0) text += ", group_size=" + std::to_string(q.group_size);
  return text + ")";
}

bool same_qparams(const Q::QParams& a, const Q::QParams& b) {
  return a.qscheme == b.qscheme && a.qdtype == b.qdtype && a.scale == b.scale &&
         a.zero_point == b.zero_point && a.ch_axis == b.ch_axis && a.group_size == b.group_size;
}

void bind_qparams_class(py::module_& m) {
  py::class_<Q::QParams> cls(m, "QParams", R"doc(
A scheme together with its derived parameters: qscheme, qdtype, scale (float32),
zero_point (int32), ch_axis and group_size.

Granularity follows the scheme and group_size: per-tensor schemes hold one
(scale, zero_point); per-channel schemes one pair per index along ch_axis; with
group_size > 0 (per-group) one pair per contiguous block of group_size along
ch_axis and per index of every other axis, laid out as param_shape() says and
stored flat (row-major).

scale and zero_point read as 1-D NumPy arrays (copies); assigning to a field
does not validate, call validate() / validate_for(shape) afterwards.

>>> import lucidq as Q
>>> Q.QParams.per_tensor(3.5, -70, Q.qint8)
QParams(qscheme=per_tensor_affine, qdtype=qint8, scale=[3.5], zero_point=[-70])
)doc");
  cls.def(py::init([](Q::QScheme qscheme, Q::QDtype qdtype, py::handle scale, py::handle zero_point,
                      int ch_axis, std::int64_t group_size) {
            Q::QParams q;
            q.qscheme = qscheme;
            q.qdtype = qdtype;
            q.scale = param_array(float_vector(scale, "QParams: scale"));
            q.zero_point = param_array(zero_points_or_default(
                zero_point, qscheme, qdtype, q.scale.size(), "QParams: zero_point"));
            q.ch_axis = ch_axis;
            q.group_size = group_size;
            q.validate();
            return q;
          }),
          py::arg("qscheme") = Q::QScheme::PER_TENSOR_AFFINE, py::arg("qdtype") = Q::quint8,
          py::arg("scale") = 1.0, py::arg("zero_point") = py::none(), py::arg("ch_axis") = 0,
          py::arg("group_size") = 0,
          "Builds and validates QParams. scale / zero_point: a number or a 1-D sequence; "
          "zero_point=None means the pinned zero point for symmetric schemes and 0 for affine "
          "ones, repeated for every scale.");
  cls.def_static(
      "per_tensor",
      [](py::handle scale, py::handle zero_point, Q::QDtype qdtype, Q::QScheme qscheme) {
        return Q::QParams::per_tensor(one_float(scale, "QParams.per_tensor: scale"),
                                      one_int32(zero_point, "QParams.per_tensor: zero_point"),
                                      qdtype, qscheme);
      },
      py::arg("scale"), py::arg("zero_point"), py::arg("qdtype"),
      py::arg("qscheme") = Q::QScheme::PER_TENSOR_AFFINE,
      "One (scale, zero_point) for the whole tensor; validated.");
  cls.def_static(
      "per_channel",
      [](py::handle scale, py::handle zero_point, int ch_axis, Q::QDtype qdtype,
         Q::QScheme qscheme) {
        std::vector<float> s = float_vector(scale, "QParams.per_channel: scale");
        std::vector<std::int32_t> z = zero_points_or_default(zero_point, qscheme, qdtype, s.size(),
                                                             "QParams.per_channel: zero_point");
        return Q::QParams::per_channel(std::move(s), std::move(z), ch_axis, qdtype, qscheme);
      },
      py::arg("scale"), py::arg("zero_point"), py::arg("ch_axis"), py::arg("qdtype"),
      py::arg("qscheme") = Q::QScheme::PER_CHANNEL_AFFINE,
      "One pair per channel along ch_axis; validated (lengths must agree).");
  cls.def_static(
      "per_group",
      [](py::handle scale, py::handle zero_point, int ch_axis, std::int64_t group_size,
         Q::QDtype qdtype, Q::QScheme qscheme) {
        std::vector<float> s = float_vector(scale, "QParams.per_group: scale");
        std::vector<std::int32_t> z = zero_points_or_default(zero_point, qscheme, qdtype, s.size(),
                                                             "QParams.per_group: zero_point");
        return Q::QParams::per_group(std::move(s), std::move(z), ch_axis, group_size, qdtype,
                                     qscheme);
      },
      py::arg("scale"), py::arg("zero_point"), py::arg("ch_axis"), py::arg("group_size"),
      py::arg("qdtype"), py::arg("qscheme") = Q::QScheme::PER_CHANNEL_SYMMETRIC,
      "One pair per block of group_size along ch_axis (the last block may be shorter); "
      "validated.");
  cls.def_readwrite("qscheme", &Q::QParams::qscheme);
  cls.def_readwrite("qdtype", &Q::QParams::qdtype);
  cls.def_property(
      "scale", [](const Q::QParams& q) { return vector_to_numpy(q.scale); },
      [](Q::QParams& q, py::handle v) { q.scale = param_array(float_vector(v, "QParams.scale")); });
  cls.def_property(
      "zero_point", [](const Q::QParams& q) { return vector_to_numpy(q.zero_point); },
      [](Q::QParams& q, py::handle v) {
        q.zero_point = param_array(int32_vector(v, "QParams.zero_point"));
      });
  cls.def_readwrite("ch_axis", &Q::QParams::ch_axis);
  cls.def_readwrite("group_size", &Q::QParams::group_size);
  cls.def_property_readonly("is_per_group", &Q::QParams::is_per_group,
                            "True when group_size > 0 (a property, like QScheme.is_per_channel).");
  cls.def(
      "param_shape",
      [](const Q::QParams& q, py::handle input_shape) {
        return shape_tuple(q.param_shape(shape_from(input_shape, "param_shape: input_shape")));
      },
      py::arg("input_shape"),
      "The shape of scale / zero_point for an input of `input_shape`: () per-tensor, (C,) "
      "per-channel, the input's shape with ceil(D / group_size) along ch_axis per-group.");
  cls.def("validate", &Q::QParams::validate,
          "Checks the parameters on their own (finite scales > 0, zero points in range and "
          "pinned for symmetric schemes, equal lengths, group_size >= 0); ValueError naming the "
          "field and value.");
  cls.def(
      "validate_for",
      [](const Q::QParams& q, py::handle input_shape) {
        q.validate_for(shape_from(input_shape, "validate_for: input_shape"));
      },
      py::arg("input_shape"), "validate() plus the fit to an input of `input_shape`.");
  cls.def("__repr__", &qparams_repr);
  cls.def(
      "__iter__",
      [](const Q::QParams& q) {
        // Per-tensor: (float, int); otherwise (float32 array, int32 array).
        const bool scalar = !Q::is_per_channel(q.qscheme) && q.scale.size() == 1;
        const py::tuple pair =
            scalar ? py::make_tuple(q.scale[0], q.zero_point[0])
                   : py::make_tuple(vector_to_numpy(q.scale), vector_to_numpy(q.zero_point));
        return py::iter(pair);
      },
      "Unpacks as `scale, zero_point` (the result of Lucid's "
      "lucid.quantization.calculate_qparams): a float and an int per tensor, float32 / int32 "
      "arrays per channel or group.");
  cls.def("__eq__", [](const Q::QParams& self, py::object other) -> py::object {
    if (!py::isinstance<Q::QParams>(other)) {
      return py::reinterpret_borrow<py::object>(Py_NotImplemented);
    }
    return py::bool_(same_qparams(self, other.cast<const Q::QParams&>()));
  });
  cls.attr("__hash__") = py::none();
  cls.def(py::pickle(
      [](const Q::QParams& q) {
        return py::make_tuple(q.qscheme, q.qdtype, q.scale, q.zero_point, q.ch_axis, q.group_size);
      },
      [](const py::tuple& t) {
        Q::QParams q;
        q.qscheme = t[0].cast<Q::QScheme>();
        q.qdtype = t[1].cast<Q::QDtype>();
        q.scale = param_array(t[2].cast<std::vector<float>>());
        q.zero_point = param_array(t[3].cast<std::vector<std::int32_t>>());
        q.ch_axis = t[4].cast<int>();
        q.group_size = t[5].cast<std::int64_t>();
        q.validate();
        return q;
      }));
  m.def(
      "describe", [](const Q::QParams& q) { return Q::describe(q); }, py::arg("qparams"),
      "\"per_channel_symmetric qint8 ch_axis=0\" for messages and reports.");
}

void bind_calculate(py::module_& m) {
  m.def(
      "calculate_qparams",
      [](py::handle min_val, py::handle max_val, Q::QScheme qscheme, Q::QDtype qdtype, float eps,
         int ch_axis) {
        const std::vector<float> lo = float_vector(min_val, "calculate_qparams: min_val");
        const std::vector<float> hi = float_vector(max_val, "calculate_qparams: max_val");
        const py::array lo_array = py::module_::import("numpy").attr("asarray")(min_val);
        const py::array hi_array = py::module_::import("numpy").attr("asarray")(max_val);
        if (lo_array.ndim() == 0 && hi_array.ndim() == 0) {
          if (ch_axis != 0) {
            throw Q::Error("calculate_qparams: ch_axis = " + std::to_string(ch_axis) +
                           " with a scalar min / max (expected per-channel min / max vectors "
                           "for a channel axis)");
          }
          return Q::calculate_qparams(lo[0], hi[0], qscheme, qdtype, eps);
        }
        return Q::calculate_qparams(lo, hi, qscheme, qdtype, ch_axis, eps);
      },
      py::arg("min_val"), py::arg("max_val"), py::arg("qscheme"), py::arg("qdtype"),
      py::arg("eps") = Q::default_eps, py::kw_only(), py::arg("ch_axis") = 0, R"doc(
Derives (scale, zero_point) from an observed range, in float32 arithmetic as
PyTorch's observers do: the range is widened to include 0; affine
s = (max - min) / (qmax - qmin), z = clamp(qmin - round(min / s)); symmetric
s = max(-min, max) / ((qmax - qmin) / 2), z pinned; s = max(s, eps).

min_val / max_val: numbers (per-tensor scheme) or 1-D sequences of equal length
(per-channel scheme, one pair per channel; ch_axis is recorded in the result).
Python floats are rounded to float32 first. ValueError for NaN / Inf bounds,
min > max, a bad eps, or a scheme that does not match the granularity.

>>> import lucidq as Q
>>> qp = Q.calculate_qparams(-184.0, 728.6, Q.per_tensor_affine, Q.qint8)
>>> int(qp.zero_point[0])
-77
)doc");

  py::class_<Q::RangeStats>(m, "RangeStats",
                            "Observed min / max per slot (laid out as QParams.param_shape "
                            "says, flat) and the count of skipped non-finite elements.")
      .def_property_readonly("min", [](const Q::RangeStats& r) { return vector_to_numpy(r.min); })
      .def_property_readonly("max", [](const Q::RangeStats& r) { return vector_to_numpy(r.max); })
      .def_readonly("nonfinite_count", &Q::RangeStats::nonfinite_count)
      .def("__repr__", [](const Q::RangeStats& r) {
        return "RangeStats(min=" + list_text<float>(r.min) + ", max=" + list_text<float>(r.max) +
               ", nonfinite_count=" + std::to_string(r.nonfinite_count) + ")";
      });

  m.def(
      "observe_range",
      [](py::handle x, Q::QScheme qscheme, int ch_axis, std::int64_t group_size,
         const std::optional<std::string>& input_dtype) {
        const FloatInput in = float_input(x, input_dtype, "observe_range");
        py::gil_scoped_release release;
        return Q::observe_range(in.view, qscheme, ch_axis, group_size);
      },
      py::arg("x"), py::arg("qscheme"), py::arg("ch_axis") = 0, py::arg("group_size") = 0,
      py::kw_only(), py::arg("input_dtype") = py::none(),
      "Min / max of x for the granularity (qscheme, ch_axis, group_size); NaN / Inf are "
      "skipped and counted, a slot with no finite value gets min = max = 0.");
  m.def(
      "choose_qparams",
      [](py::handle x, Q::QScheme qscheme, Q::QDtype qdtype, int ch_axis, std::int64_t group_size,
         float eps, const std::optional<std::string>& input_dtype) {
        const FloatInput in = float_input(x, input_dtype, "choose_qparams");
        py::gil_scoped_release release;
        return Q::choose_qparams(in.view, qscheme, qdtype, ch_axis, group_size, eps);
      },
      py::arg("x"), py::arg("qscheme"), py::arg("qdtype"), py::arg("ch_axis") = 0,
      py::arg("group_size") = 0, py::arg("eps") = Q::default_eps, py::kw_only(),
      py::arg("input_dtype") = py::none(),
      "observe_range() then calculate_qparams(): the qparams a MinMax observer picks after "
      "seeing x once. Never yields a NaN, zero or infinite scale, whatever x holds.");
}

}  // namespace

void bind_qparams(py::module_& m) {
  bind_qparams_class(m);
  bind_calculate(m);
}

}  // namespace lucidq_python
