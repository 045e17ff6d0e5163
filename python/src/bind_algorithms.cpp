// Bindings of the weight algorithms (GPTQ, AWQ, SmoothQuant, HQQ, importance-weighted RTN) and
// calibration statistics.
#include "common.hpp"

namespace lucidq_python {
namespace {

// A float64 C-contiguous array of `x` (any real array-like) with `ndim` dimensions.
py::array_t<double> float64_array(py::handle x, int ndim, const char* what) {
  py::array_t<double, py::array::c_style | py::array::forcecast> a;
  try {
    a = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(x);
  } catch (const py::error_already_set&) {
    a = {};
  }
  if (!a || a.ndim() != ndim) {
    throw Q::Error(std::string(what) + ": expected a " + std::to_string(ndim) +
                   "-D array of real numbers");
  }
  return a;
}

std::span<const double> span_of(const py::array_t<double>& a) {
  return {a.data(), static_cast<std::size_t>(a.size())};
}

Q::TensorView weight_view(const py::array_t<float>& w) {
  return Q::TensorView(w.data(), Q::ScalarType::float32, shape_of(w));
}

Q::WeightGrid grid_of(const Q::QDtype& qdtype, bool symmetric, std::int64_t group_size) {
  Q::WeightGrid grid{qdtype, symmetric, group_size};
  grid.validate();
  return grid;
}

}  // namespace

void bind_algorithms(py::module_& m) {
  py::class_<Q::HessianAccumulator>(m, "HessianAccumulator", R"doc(
H = sum of x x^T over calibration rows ([K, K], float64; streaming and mergeable).
add_rows takes [T, K] (or [K]) float arrays; NaN / inf raise ValueError.)doc")
      .def(py::init<std::int64_t>(), py::arg("features"))
      .def(py::init([](py::handle sum, std::int64_t rows) {
             const auto h = float64_array(sum, 2, "HessianAccumulator: sum");
             if (h.shape(0) != h.shape(1)) {
               throw Q::Error("HessianAccumulator: sum has shape " +
                              py::str(shape_tuple(shape_of(h))).cast<std::string>() +
                              " (expected a square [K, K] matrix)");
             }
             return Q::HessianAccumulator(h.shape(0),
                                          std::vector<double>(h.data(), h.data() + h.size()), rows);
           }),
           py::arg("sum"), py::arg("rows"))
      .def(
          "add_rows",
          [](Q::HessianAccumulator& self, py::handle x) {
            const auto a = float32_array(x, "HessianAccumulator.add_rows: x");
            const Q::TensorView view(a.data(), Q::ScalarType::float32, shape_of(a));
            py::gil_scoped_release release;
            self.add_rows(view);
          },
          py::arg("x"))
      .def("merge", &Q::HessianAccumulator::merge, py::arg("other"))
      .def_property_readonly("features", &Q::HessianAccumulator::features)
      .def_property_readonly("rows", &Q::HessianAccumulator::rows)
      .def("sum",
           [](const Q::HessianAccumulator& self) {
             return vector_to_numpy(self.sum(), Q::Shape{self.features(), self.features()});
           })
      .def("second_moments", [](const Q::HessianAccumulator& self) {
        return vector_to_numpy(self.second_moments());
      });

  py::class_<Q::ChannelStats>(m, "ChannelStats", R"doc(
Per-input-channel max |x|, sum |x| and sum x^2 over calibration rows (streaming, mergeable).)doc")
      .def(py::init<std::int64_t>(), py::arg("features"))
      .def(py::init([](py::handle abs_max, py::handle abs_sum, py::handle square_sum,
                       std::int64_t rows) {
             const auto a = float64_array(abs_sum, 1, "ChannelStats: abs_sum");
             const auto q = float64_array(square_sum, 1, "ChannelStats: square_sum");
             return Q::ChannelStats(float_vector(abs_max, "ChannelStats: abs_max"),
                                    std::vector<double>(a.data(), a.data() + a.size()),
                                    std::vector<double>(q.data(), q.data() + q.size()), rows);
           }),
           py::arg("abs_max"), py::arg("abs_sum"), py::arg("square_sum"), py::arg("rows"))
      .def(
          "add_rows",
          [](Q::ChannelStats& self, py::handle x) {
            const auto a = float32_array(x, "ChannelStats.add_rows: x");
            self.add_rows(Q::TensorView(a.data(), Q::ScalarType::float32, shape_of(a)));
          },
          py::arg("x"))
      .def("merge", &Q::ChannelStats::merge, py::arg("other"))
      .def_property_readonly("features", &Q::ChannelStats::features)
      .def_property_readonly("rows", &Q::ChannelStats::rows)
      .def_property_readonly(
          "abs_max", [](const Q::ChannelStats& self) { return vector_to_numpy(self.abs_max()); })
      .def_property_readonly(
          "abs_sum", [](const Q::ChannelStats& self) { return vector_to_numpy(self.abs_sum()); })
      .def_property_readonly(
          "square_sum",
          [](const Q::ChannelStats& self) { return vector_to_numpy(self.square_sum()); })
      .def("mean_abs", [](const Q::ChannelStats& self) { return vector_to_numpy(self.mean_abs()); })
      .def("second_moments",
           [](const Q::ChannelStats& self) { return vector_to_numpy(self.second_moments()); });

  m.def(
      "quantize_rtn",
      [](py::handle weight, const Q::QDtype& qdtype, bool symmetric, std::int64_t group_size) {
        const auto w = float32_array(weight, "quantize_rtn: weight");
        return Q::quantize_rtn(weight_view(w), grid_of(qdtype, symmetric, group_size));
      },
      py::arg("weight"), py::arg("qdtype"), py::arg("symmetric"), py::arg("group_size"),
      "Round-to-nearest of a Linear weight [N, K] on a weight grid (group_size 0: per row).");

  m.def(
      "output_error_proxy",
      [](py::handle weight, py::handle reconstructed, py::handle hessian) {
        const auto w = float32_array(weight, "output_error_proxy: weight");
        const auto r = float32_array(reconstructed, "output_error_proxy: reconstructed");
        const auto h = float64_array(hessian, 2, "output_error_proxy: hessian");
        return Q::output_error_proxy(weight_view(w), weight_view(r), span_of(h));
      },
      py::arg("weight"), py::arg("reconstructed"), py::arg("hessian"),
      "tr((W - W_hat) H (W - W_hat)^T) for H = sum x x^T.");

  m.def(
      "_gptq",
      [](py::handle weight, py::handle hessian, const Q::QDtype& qdtype, bool symmetric,
         std::int64_t group_size, double percent_damp, std::int64_t block_size, bool act_order,
         bool static_groups) {
        const auto w = float32_array(weight, "gptq: weight");
        const auto h = float64_array(hessian, 2, "gptq: hessian");
        Q::GptqOptions options;
        options.grid = grid_of(qdtype, symmetric, group_size);
        options.percent_damp = percent_damp;
        options.block_size = block_size;
        options.act_order = act_order;
        options.static_groups = static_groups;
        Q::GptqResult r;
        {
          py::gil_scoped_release release;
          r = Q::gptq_quantize(weight_view(w), span_of(h), options);
        }
        py::dict out;
        out["quantized"] = r.quantized;
        out["permuted_columns"] = r.permuted_columns;
        out["permutation"] = vector_to_numpy(r.permutation);
        out["g_idx"] = vector_to_numpy(r.g_idx);
        out["dequantized"] = tensor_to_numpy(std::move(r.dequantized));
        out["loss"] = r.loss;
        out["dead_columns"] = r.dead_columns;
        out["fell_back_to_rtn"] = r.fell_back_to_rtn;
        out["warning"] = r.warning;
        return out;
      },
      py::arg("weight"), py::arg("hessian"), py::arg("qdtype"), py::arg("symmetric"),
      py::arg("group_size"), py::arg("percent_damp"), py::arg("block_size"), py::arg("act_order"),
      py::arg("static_groups"));

  m.def(
      "_awq",
      [](py::handle weight, py::handle hessian, std::int64_t rows, py::handle mean_abs,
         const Q::QDtype& qdtype, bool symmetric, std::int64_t group_size, int grid_points,
         bool clip) {
        const auto w = float32_array(weight, "awq: weight");
        const auto h = float64_array(hessian, 2, "awq: hessian");
        const auto a = float64_array(mean_abs, 1, "awq: mean_abs");
        Q::AwqOptions options;
        options.grid = grid_of(qdtype, symmetric, group_size);
        options.grid_points = grid_points;
        options.clip = clip;
        Q::AwqResult r;
        {
          py::gil_scoped_release release;
          r = Q::awq_quantize(weight_view(w), span_of(h), rows, span_of(a), options);
        }
        py::dict out;
        out["quantized"] = r.quantized;
        out["scales"] = vector_to_numpy(r.scales);
        out["alpha"] = r.alpha;
        out["loss_per_alpha"] = vector_to_numpy(r.loss_per_alpha);
        out["loss"] = r.loss;
        return out;
      },
      py::arg("weight"), py::arg("hessian"), py::arg("rows"), py::arg("mean_abs"),
      py::arg("qdtype"), py::arg("symmetric"), py::arg("group_size"), py::arg("grid_points"),
      py::arg("clip"));

  m.def(
      "_hqq",
      [](py::handle weight, const Q::QDtype& qdtype, std::int64_t group_size, double lp_norm,
         double beta, double kappa, int iterations, bool early_stop, int scale_search_steps) {
        const auto w = float32_array(weight, "hqq: weight");
        Q::HqqOptions options;
        options.grid = grid_of(qdtype, false, group_size);
        options.lp_norm = lp_norm;
        options.beta = beta;
        options.kappa = kappa;
        options.iterations = iterations;
        options.early_stop = early_stop;
        options.scale_search_steps = scale_search_steps;
        const auto r = Q::hqq_quantize(weight_view(w), options);
        py::dict out;
        out["quantized"] = r.quantized;
        out["start_abs_error"] = r.start_abs_error;
        out["final_abs_error"] = r.final_abs_error;
        return out;
      },
      py::arg("weight"), py::arg("qdtype"), py::arg("group_size"), py::arg("lp_norm"),
      py::arg("beta"), py::arg("kappa"), py::arg("iterations"), py::arg("early_stop"),
      py::arg("scale_search_steps"));

  m.def(
      "quantize_weighted_rtn",
      [](py::handle weight, py::handle importance, const Q::QDtype& qdtype, bool symmetric,
         std::int64_t group_size) {
        const auto w = float32_array(weight, "quantize_weighted_rtn: weight");
        const auto imp = float64_array(importance, 1, "quantize_weighted_rtn: importance");
        return Q::quantize_weighted_rtn(weight_view(w), span_of(imp),
                                        grid_of(qdtype, symmetric, group_size));
      },
      py::arg("weight"), py::arg("importance"), py::arg("qdtype"), py::arg("symmetric"),
      py::arg("group_size"),
      "Per-group scales minimising sum importance_j (w_j - w_hat_j)^2 (importance: [K], e.g. "
      "mean x_j^2).");

  m.def(
      "smooth_quant_scales",
      [](py::handle act_abs_max, const std::vector<py::object>& weights, double alpha) {
        const auto a = float_vector(act_abs_max, "smooth_quant_scales: act_abs_max");
        std::vector<py::array_t<float>> arrays;
        std::vector<Q::TensorView> views;
        for (const auto& w : weights) {
          arrays.push_back(float32_array(w, "smooth_quant_scales: weight"));
          views.push_back(weight_view(arrays.back()));
        }
        return vector_to_numpy(Q::smooth_quant_scales(a, views, alpha));
      },
      py::arg("act_abs_max"), py::arg("weights"), py::arg("alpha") = 0.5,
      "SmoothQuant's s_j = max|X_j|^alpha / max|W_j|^(1 - alpha) for Linears sharing one input.");
}

}  // namespace lucidq_python
