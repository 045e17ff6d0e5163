// Bindings of the error metrics: quantization_error, ErrorMetrics,
// error_metrics(_per_channel/_group).
#include "common.hpp"

namespace lucidq_python {
namespace {

py::dict metrics_dict(const Q::ErrorMetrics& e) {
  py::dict d;
  d["count"] = e.count;
  d["nonfinite_count"] = e.nonfinite_count;
  d["mse"] = e.mse;
  d["rmse"] = e.rmse;
  d["max_abs_error"] = e.max_abs_error;
  d["sqnr_db"] = e.sqnr_db;
  d["cosine_similarity"] = e.cosine_similarity;
  d["fraction_saturated"] = e.fraction_saturated;
  return d;
}

std::string metrics_repr(const Q::ErrorMetrics& e) {
  std::string text = "ErrorMetrics(";
  bool first = true;
  for (const auto& [key, value] : metrics_dict(e)) {
    if (!first) text += ", ";
    first = false;
    text += key.cast<std::string>() + "=" + py::repr(value).cast<std::string>();
  }
  return text + ")";
}

}  // namespace

void bind_metrics(py::module_& m) {
  py::class_<Q::ErrorMetrics>(m, "ErrorMetrics", R"doc(
How much a reconstruction x_hat differs from the original x. Elements where x is
NaN or infinite are left out of every figure and counted in nonfinite_count.

Fields (read-only): count, nonfinite_count, mse, rmse, max_abs_error, sqnr_db
(+inf when the error is 0), cosine_similarity (1 when both are 0, 0 when one is),
fraction_saturated (share of codes clamped; 0 when only arrays were compared).
dict() returns them as a plain dict.
)doc")
      .def_readonly("count", &Q::ErrorMetrics::count)
      .def_readonly("nonfinite_count", &Q::ErrorMetrics::nonfinite_count)
      .def_readonly("mse", &Q::ErrorMetrics::mse)
      .def_readonly("rmse", &Q::ErrorMetrics::rmse)
      .def_readonly("max_abs_error", &Q::ErrorMetrics::max_abs_error)
      .def_readonly("sqnr_db", &Q::ErrorMetrics::sqnr_db)
      .def_readonly("cosine_similarity", &Q::ErrorMetrics::cosine_similarity)
      .def_readonly("fraction_saturated", &Q::ErrorMetrics::fraction_saturated)
      .def("dict", &metrics_dict, "The fields as a dict, in declaration order.")
      .def("__repr__", &metrics_repr);

  m.def(
      "quantization_error",
      [](py::handle original, py::handle dequantized) {
        const FloatInput x = float_input(original, std::nullopt, "quantization_error: original");
        const FloatInput y =
            float_input(dequantized, std::nullopt, "quantization_error: dequantized");
        py::gil_scoped_release release;
        return Q::quantization_error(x.view, y.view);
      },
      py::arg("original"), py::arg("dequantized"),
      "The notes' quantization_error: mean((dequantized - original)^2) in double, non-finite "
      "originals left out. ValueError when the shapes differ.");
  m.def(
      "error_metrics",
      [](py::handle original, const Q::QuantizedTensor& quantized) {
        const FloatInput x = float_input(original, std::nullopt, "error_metrics: original");
        py::gil_scoped_release release;
        return Q::error_metrics(x.view, quantized);
      },
      py::arg("original"), py::arg("quantized"),
      "All metrics of `quantized` against the original it came from, including the share of "
      "elements whose code saturated.");
  m.def(
      "error_metrics",
      [](py::handle original, py::handle reconstructed) {
        const FloatInput x = float_input(original, std::nullopt, "error_metrics: original");
        const FloatInput y =
            float_input(reconstructed, std::nullopt, "error_metrics: reconstructed");
        py::gil_scoped_release release;
        return Q::error_metrics(x.view, y.view);
      },
      py::arg("original"), py::arg("reconstructed"),
      "All metrics of a float reconstruction (fraction_saturated is 0: unknown).");
  m.def(
      "error_metrics_per_channel",
      [](py::handle original, const Q::QuantizedTensor& quantized, int axis) {
        const FloatInput x =
            float_input(original, std::nullopt, "error_metrics_per_channel: original");
        py::gil_scoped_release release;
        return Q::error_metrics_per_channel(x.view, quantized, axis);
      },
      py::arg("original"), py::arg("quantized"), py::arg("axis"),
      "error_metrics for every index along `axis` of the original: a list of ErrorMetrics.");
  m.def(
      "error_metrics_per_group",
      [](py::handle original, const Q::QuantizedTensor& quantized) {
        const FloatInput x =
            float_input(original, std::nullopt, "error_metrics_per_group: original");
        py::gil_scoped_release release;
        return Q::error_metrics_per_group(x.view, quantized);
      },
      py::arg("original"), py::arg("quantized"),
      "error_metrics for every (scale, zero point) slot of quantized's parameters, in their "
      "order (one per group of a per-group tensor): a list of ErrorMetrics.");
}

}  // namespace lucidq_python
