// The _lucidq extension module: error translation, version, and the bindings of every concept.
#include "common.hpp"

PYBIND11_MODULE(_lucidq, m) {
  namespace py = pybind11;
  namespace Q = lucid::quantization;
  m.doc() =
      "Native part of lucidq (lucid::quantization). Import the package `lucidq` (or "
      "`lucid.quantization`), not this module.";

  // lucidq.Error is a ValueError: every bad input of the C++ core raises it, message kept.
  py::register_exception<Q::Error>(m, "Error", PyExc_ValueError);

  // The Python enum QScheme lives in lucidq/_qscheme.py; the casters convert to it.
  lucidq_python::set_qscheme_class(py::module_::import("lucidq._qscheme").attr("QScheme"));

  m.attr("__version__") = Q::version;
  m.attr("default_eps") = Q::default_eps;

  lucidq_python::bind_types(m);
  lucidq_python::bind_qparams(m);
  lucidq_python::bind_quantize(m);
  lucidq_python::bind_metrics(m);
  lucidq_python::bind_observers(m);
  lucidq_python::bind_runtime(m);
  lucidq_python::bind_plot(m);
  lucidq_python::bind_gemm(m);
  lucidq_python::bind_checkpoint(m);
  lucidq_python::bind_safetensors(m);
  lucidq_python::bind_weight_only(m);
  lucidq_python::bind_conv(m);
  lucidq_python::bind_embedding(m);
  lucidq_python::bind_ggml(m);
  lucidq_python::bind_gguf(m);
  lucidq_python::bind_algorithms(m);
}
