// Binding of plot_quantization_errors: the "Quantization in Depth" notes' error figure, from
// Python arrays.
#include <optional>

#include "common.hpp"
#include "lucid/quantization/plot.hpp"

namespace lucidq_python {

void bind_plot(py::module_& m) {
  m.def(
      "plot_quantization_errors",
      [](py::handle original, py::handle quantized, py::handle dequantized, const std::string& path,
         bool overwrite, const std::string& title) {
        Q::PlotOptions options;
        options.overwrite = overwrite;
        options.title = title;
        const FloatInput x = float_input(original, std::nullopt, "original");
        if (py::isinstance<Q::QuantizedTensor>(quantized)) {
          Q::plot_quantization_errors(x.view, quantized.cast<const Q::QuantizedTensor&>(), path,
                                      options);
          return;
        }
        const FloatInput x_hat = float_input(dequantized, std::nullopt, "dequantized");
        const auto codes =
            py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>::ensure(quantized);
        if (!codes) throw Q::Error("plot_quantization_errors: quantized must be an integer array");
        Q::plot_quantization_errors(
            x.view,
            std::span<const std::int32_t>(codes.data(), static_cast<std::size_t>(codes.size())),
            x_hat.view, path, options);
      },
      py::arg("original"), py::arg("quantized"), py::arg("dequantized"), py::arg("path"),
      py::kw_only(), py::arg("overwrite") = false, py::arg("title") = "",
      "Draws the notes' figure to `path` (.png or .svg): original, codes, dequantized and\n"
      "|error| heatmaps. `quantized` is a QuantizedTensor (then `dequantized` may be None)\n"
      "or the integer codes with the original's shape. An existing file is replaced only\n"
      "with overwrite=True; the file is written atomically.");
}

}  // namespace lucidq_python
