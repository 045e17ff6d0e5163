// Bindings of the observers (observer*.hpp): the C++ class names, PyTorch's keyword arguments.
#include <cmath>

#include "common.hpp"

namespace lucidq_python {
namespace {

constexpr const char* kObserverDoc = R"doc(
A streaming accumulator of calibration statistics (the common interface).

observe(x) folds a batch in (NumPy float32 / float16 / float64 of any shape,
bfloat16 bit patterns with input_dtype="bfloat16"); NaN and +-Inf are skipped
and counted in nonfinite_count; an empty batch changes nothing. Calling the
observer, obs(x), observes x and returns it, as a torch observer's forward does.
merge(other) folds in an observer of the same class and configuration (per
thread / per shard calibration). calculate_qparams() gives QParams and raises
lucidq.Error before any finite value was seen. save_state() / load_state(text)
keep configuration and statistics as JSON text (floats bit for bit);
lucidq.load_observer(text) rebuilds any observer, and pickling works the same way.
)doc";

Q::QuantGrid make_grid(const Q::QDtype& dtype, Q::QScheme qscheme, bool reduce_range,
                       std::optional<std::int64_t> quant_min, std::optional<std::int64_t> quant_max,
                       float eps) {
  return Q::QuantGrid{dtype, qscheme, reduce_range, quant_min, quant_max, eps};
}

// A per-tensor statistic as a float (inf / -inf before data, like torch's buffers),
// a per-channel one as a float32 array.
py::object slot_values(const std::vector<float>& values, bool per_channel, float empty) {
  if (per_channel) return vector_to_numpy(values);
  return py::float_(values.empty() ? empty : values[0]);
}

// The shared keyword arguments of the range observers, after the class's own ones.
#define LUCIDQ_GRID_ARGS(default_qscheme)                             \
  py::arg("dtype") = Q::quint8, py::arg("qscheme") = default_qscheme, \
  py::arg("reduce_range") = false, py::arg("quant_min") = py::none(), \
  py::arg("quant_max") = py::none(), py::arg("eps") = Q::default_eps

// Pickling through save_state / load_state: `make_default` builds the object to load into.
template <class Class, class Make>
void bind_pickle(Class& cls, Make make_default) {
  using T = typename Class::type;
  cls.def(py::pickle([](const T& o) { return o.save_state(); },
                     [make_default](const std::string& state) {
                       std::unique_ptr<T> o = make_default();
                       o->load_state(state);
                       return o;
                     }));
}

template <class T>
using RangeClass = py::class_<T, std::unique_ptr<T>, Q::RangeObserver>;

void bind_base(py::module_& m) {
  py::class_<Q::Observer, std::unique_ptr<Q::Observer>> base(m, "Observer", kObserverDoc);
  base.def_property_readonly("name", [](const Q::Observer& o) { return std::string(o.name()); })
      .def(
          "observe",
          [](Q::Observer& o, py::handle x, const std::optional<std::string>& input_dtype) {
            const FloatInput in = float_input(x, input_dtype, "observe");
            py::gil_scoped_release release;
            o.observe(in.view);
          },
          py::arg("x"), py::kw_only(), py::arg("input_dtype") = py::none(),
          "Folds one batch into the statistics.")
      .def(
          "__call__",
          [](Q::Observer& o, py::object x, const std::optional<std::string>& input_dtype) {
            const FloatInput in = float_input(x, input_dtype, "observe");
            {
              py::gil_scoped_release release;
              o.observe(in.view);
            }
            return x;
          },
          py::arg("x"), py::kw_only(), py::arg("input_dtype") = py::none(),
          "observe(x), then returns x (the forward of a torch observer).")
      .def("merge", &Q::Observer::merge, py::arg("other"),
           "Folds in the statistics of an observer of the same class and configuration.")
      .def("calculate_qparams", &Q::Observer::calculate_qparams,
           "QParams for the data seen so far (lucidq.Error before any finite value).")
      .def("reset", &Q::Observer::reset, "Forgets the statistics; the configuration stays.")
      .def("save_state", &Q::Observer::save_state, "Configuration and statistics as JSON text.")
      .def("load_state", &Q::Observer::load_state, py::arg("state"),
           "Replaces configuration and statistics with those of save_state() text.")
      .def("clone", &Q::Observer::clone, "A deep copy.")
      .def("__copy__", &Q::Observer::clone)
      .def("__deepcopy__", [](const Q::Observer& o, py::handle) { return o.clone(); })
      .def_property_readonly("count", &Q::Observer::count, "Finite elements observed.")
      .def_property_readonly("nonfinite_count", &Q::Observer::nonfinite_count,
                             "NaN / +-Inf elements skipped.")
      .def("__repr__", [](const Q::Observer& o) {
        return std::string(o.name()) + "(count=" + std::to_string(o.count()) + ")";
      });
  m.def("load_observer", &Q::load_observer, py::arg("state"),
        "Rebuilds an observer of whichever class save_state() text names.");

  py::class_<Q::RangeObserver, std::unique_ptr<Q::RangeObserver>, Q::Observer> range(
      m, "RangeObserver",
      "Observers whose qparams come from a clipping range per slot (all but the "
      "pass-through ones).");
  range.def_property_readonly("qscheme", &Q::RangeObserver::qscheme)
      .def_property_readonly(
          "dtype", [](const Q::RangeObserver& o) { return o.grid().dtype; },
          "The dtype as configured.")
      .def_property_readonly(
          "qdtype", &Q::RangeObserver::qdtype,
          "The effective grid: dtype with quant_min / quant_max and reduce_range.")
      .def_property_readonly("reduce_range",
                             [](const Q::RangeObserver& o) { return o.grid().reduce_range; })
      .def_property_readonly("quant_min",
                             [](const Q::RangeObserver& o) { return o.qdtype().quant_min(); })
      .def_property_readonly("quant_max",
                             [](const Q::RangeObserver& o) { return o.qdtype().quant_max(); })
      .def_property_readonly("eps", [](const Q::RangeObserver& o) { return o.grid().eps; })
      .def_property_readonly("ch_axis", &Q::RangeObserver::ch_axis)
      .def_property_readonly(
          "min_val",
          [](const Q::RangeObserver& o) {
            return slot_values(o.min_val(), Q::is_per_channel(o.qscheme()), INFINITY);
          },
          "Observed statistic per slot: float per tensor (inf before data), array per channel.")
      .def_property_readonly("max_val",
                             [](const Q::RangeObserver& o) {
                               return slot_values(o.max_val(), Q::is_per_channel(o.qscheme()),
                                                  -INFINITY);
                             })
      .def(
          "clipping_range",
          [](const Q::RangeObserver& o) {
            const Q::ClipRange r = o.clipping_range();
            const bool per_channel = Q::is_per_channel(o.qscheme());
            return py::make_tuple(slot_values(r.min, per_channel, 0.0f),
                                  slot_values(r.max, per_channel, 0.0f));
          },
          "(min, max) that calculate_qparams maps onto the grid.");
}

void bind_minmax(py::module_& m) {
  RangeClass<Q::MinMaxObserver> minmax(m, "MinMaxObserver",
                                       "Running min / max (torch.ao.quantization.MinMaxObserver).");
  minmax.def(
      py::init([](const Q::QDtype& dtype, Q::QScheme qscheme, bool reduce_range,
                  std::optional<std::int64_t> qmin, std::optional<std::int64_t> qmax, float eps) {
        return std::make_unique<Q::MinMaxObserver>(
            make_grid(dtype, qscheme, reduce_range, qmin, qmax, eps));
      }),
      LUCIDQ_GRID_ARGS(Q::per_tensor_affine));
  bind_pickle(minmax, [] { return std::make_unique<Q::MinMaxObserver>(); });

  py::class_<Q::MovingAverageMinMaxObserver, std::unique_ptr<Q::MovingAverageMinMaxObserver>,
             Q::MinMaxObserver>
      moving(m, "MovingAverageMinMaxObserver",
             "Moving averages of the batch min / max "
             "(torch.ao.quantization.MovingAverageMinMaxObserver).");
  moving
      .def(py::init([](float c, const Q::QDtype& dtype, Q::QScheme qscheme, bool reduce_range,
                       std::optional<std::int64_t> qmin, std::optional<std::int64_t> qmax,
                       float eps) {
             return std::make_unique<Q::MovingAverageMinMaxObserver>(
                 make_grid(dtype, qscheme, reduce_range, qmin, qmax, eps), c);
           }),
           py::arg("averaging_constant") = 0.01f, LUCIDQ_GRID_ARGS(Q::per_tensor_affine))
      .def_property_readonly("averaging_constant",
                             &Q::MovingAverageMinMaxObserver::averaging_constant)
      .def_property_readonly("batch_count", &Q::MovingAverageMinMaxObserver::batch_count);
  bind_pickle(moving, [] { return std::make_unique<Q::MovingAverageMinMaxObserver>(); });

  RangeClass<Q::PerChannelMinMaxObserver> per_channel(
      m, "PerChannelMinMaxObserver",
      "Running min / max per channel (torch.ao.quantization.PerChannelMinMaxObserver).");
  per_channel.def(
      py::init([](int ch_axis, const Q::QDtype& dtype, Q::QScheme qscheme, bool reduce_range,
                  std::optional<std::int64_t> qmin, std::optional<std::int64_t> qmax, float eps) {
        return std::make_unique<Q::PerChannelMinMaxObserver>(
            make_grid(dtype, qscheme, reduce_range, qmin, qmax, eps), ch_axis);
      }),
      py::arg("ch_axis") = 0, LUCIDQ_GRID_ARGS(Q::per_channel_affine));
  bind_pickle(per_channel, [] { return std::make_unique<Q::PerChannelMinMaxObserver>(); });

  py::class_<Q::MovingAveragePerChannelMinMaxObserver,
             std::unique_ptr<Q::MovingAveragePerChannelMinMaxObserver>, Q::PerChannelMinMaxObserver>
      moving_pc(m, "MovingAveragePerChannelMinMaxObserver",
                "Per-channel moving averages "
                "(torch.ao.quantization.MovingAveragePerChannelMinMaxObserver).");
  moving_pc
      .def(py::init([](float c, int ch_axis, const Q::QDtype& dtype, Q::QScheme qscheme,
                       bool reduce_range, std::optional<std::int64_t> qmin,
                       std::optional<std::int64_t> qmax, float eps) {
             return std::make_unique<Q::MovingAveragePerChannelMinMaxObserver>(
                 make_grid(dtype, qscheme, reduce_range, qmin, qmax, eps), ch_axis, c);
           }),
           py::arg("averaging_constant") = 0.01f, py::arg("ch_axis") = 0,
           LUCIDQ_GRID_ARGS(Q::per_channel_affine))
      .def_property_readonly("averaging_constant",
                             &Q::MovingAveragePerChannelMinMaxObserver::averaging_constant)
      .def_property_readonly("batch_counts", [](const Q::MovingAveragePerChannelMinMaxObserver& o) {
        return vector_to_numpy(o.batch_counts());
      });
  bind_pickle(moving_pc,
              [] { return std::make_unique<Q::MovingAveragePerChannelMinMaxObserver>(); });
}

void bind_histogram(py::module_& m) {
  RangeClass<Q::HistogramObserver> histogram(
      m, "HistogramObserver",
      "PyTorch's histogram + L2-norm search (torch.ao.quantization.HistogramObserver). "
      "binning=\"pytorch\" (default) reproduces PyTorch 1.13; \"exact\" keeps exact counts "
      "that do not depend on batch order.");
  histogram
      .def(py::init([](std::int64_t bins, std::int64_t upsample_rate, const Q::QDtype& dtype,
                       Q::QScheme qscheme, bool reduce_range, std::optional<std::int64_t> qmin,
                       std::optional<std::int64_t> qmax, float eps, const std::string& binning) {
             return std::make_unique<Q::HistogramObserver>(
                 make_grid(dtype, qscheme, reduce_range, qmin, qmax, eps),
                 Q::HistogramOptions{bins, upsample_rate,
                                     Q::histogram_binning_from_string(binning)});
           }),
           py::arg("bins") = 2048, py::arg("upsample_rate") = 128,
           LUCIDQ_GRID_ARGS(Q::per_tensor_affine), py::arg("binning") = "pytorch")
      .def_property_readonly("bins", [](const Q::HistogramObserver& o) { return o.options().bins; })
      .def_property_readonly(
          "upsample_rate", [](const Q::HistogramObserver& o) { return o.options().upsample_rate; })
      .def_property_readonly(
          "binning",
          [](const Q::HistogramObserver& o) { return Q::to_string(o.options().binning); })
      .def_property_readonly(
          "histogram", [](const Q::HistogramObserver& o) { return vector_to_numpy(o.histogram()); },
          "Bin counts (float32) over [histogram_min, histogram_max].")
      .def_property_readonly("histogram_min", &Q::HistogramObserver::histogram_min)
      .def_property_readonly("histogram_max", &Q::HistogramObserver::histogram_max);
  bind_pickle(histogram, [] { return std::make_unique<Q::HistogramObserver>(); });
}

void bind_calibrators(py::module_& m) {
  py::class_<Q::HistogramCalibrator, std::unique_ptr<Q::HistogramCalibrator>, Q::RangeObserver>(
      m, "HistogramCalibrator",
      "Common base of the percentile, entropy and MSE observers: exact per-slot histograms.")
      .def_property_readonly("bins", &Q::HistogramCalibrator::bins);

  py::class_<Q::PercentileObserver, std::unique_ptr<Q::PercentileObserver>, Q::HistogramCalibrator>
      percentile(m, "PercentileObserver",
                 "Clips to the percentile-th percentile (two-sided for affine schemes, of |x| for "
                 "symmetric ones).");
  percentile
      .def(py::init([](double p, std::int64_t bins, int ch_axis, const Q::QDtype& dtype,
                       Q::QScheme qscheme, bool reduce_range, std::optional<std::int64_t> qmin,
                       std::optional<std::int64_t> qmax, float eps) {
             return std::make_unique<Q::PercentileObserver>(
                 make_grid(dtype, qscheme, reduce_range, qmin, qmax, eps),
                 Q::PercentileOptions{p, bins, ch_axis});
           }),
           py::arg("percentile") = 99.99, py::arg("bins") = 2048, py::arg("ch_axis") = 0,
           LUCIDQ_GRID_ARGS(Q::per_tensor_affine))
      .def_property_readonly("percentile",
                             [](const Q::PercentileObserver& o) { return o.options().percentile; });
  bind_pickle(percentile, [] { return std::make_unique<Q::PercentileObserver>(); });

  py::class_<Q::EntropyObserver, std::unique_ptr<Q::EntropyObserver>, Q::HistogramCalibrator>
      entropy(m, "EntropyObserver",
              "TensorRT's entropy calibration: the threshold with the least KL divergence.");
  entropy.def(
      py::init([](std::int64_t bins, const Q::QDtype& dtype, Q::QScheme qscheme, bool reduce_range,
                  std::optional<std::int64_t> qmin, std::optional<std::int64_t> qmax, float eps) {
        return std::make_unique<Q::EntropyObserver>(
            make_grid(dtype, qscheme, reduce_range, qmin, qmax, eps), Q::EntropyOptions{bins});
      }),
      py::arg("bins") = 2048, LUCIDQ_GRID_ARGS(Q::per_tensor_affine));
  bind_pickle(entropy, [] { return std::make_unique<Q::EntropyObserver>(); });

  py::class_<Q::MseObserver, std::unique_ptr<Q::MseObserver>, Q::HistogramCalibrator> mse(
      m, "MseObserver", "The clipping range that minimises the quantization MSE of the data seen.");
  mse.def(py::init([](std::int64_t bins, int ch_axis, const Q::QDtype& dtype, Q::QScheme qscheme,
                      bool reduce_range, std::optional<std::int64_t> qmin,
                      std::optional<std::int64_t> qmax, float eps) {
            return std::make_unique<Q::MseObserver>(
                make_grid(dtype, qscheme, reduce_range, qmin, qmax, eps),
                Q::MseOptions{bins, ch_axis});
          }),
          py::arg("bins") = 2048, py::arg("ch_axis") = 0, LUCIDQ_GRID_ARGS(Q::per_tensor_affine));
  bind_pickle(mse, [] { return std::make_unique<Q::MseObserver>(); });
}

void bind_passthrough(py::module_& m) {
  py::class_<Q::FixedQParamsObserver, std::unique_ptr<Q::FixedQParamsObserver>, Q::Observer> fixed(
      m, "FixedQParamsObserver",
      "Always the same qparams (torch.ao.quantization.FixedQParamsObserver).");
  fixed
      .def(py::init<float, std::int32_t, Q::QDtype, Q::QScheme, std::int64_t, std::int64_t>(),
           py::arg("scale"), py::arg("zero_point"), py::arg("dtype") = Q::quint8,
           py::arg("qscheme") = Q::per_tensor_affine, py::arg("quant_min") = 0,
           py::arg("quant_max") = 255)
      .def_property_readonly(
          "scale", [](const Q::FixedQParamsObserver& o) { return o.calculate_qparams().scale[0]; })
      .def_property_readonly("zero_point", [](const Q::FixedQParamsObserver& o) {
        return o.calculate_qparams().zero_point[0];
      });
  bind_pickle(fixed, [] { return std::make_unique<Q::FixedQParamsObserver>(1.0f, 0); });

  py::class_<Q::PlaceholderObserver, std::unique_ptr<Q::PlaceholderObserver>, Q::Observer>
      placeholder(m, "PlaceholderObserver",
                  "Carries a dtype to the converter; observes nothing and has no qparams.");
  placeholder
      .def(py::init([](const std::string& dtype, const std::string& custom_op_name,
                       const std::optional<std::string>& compute_dtype) {
             return std::make_unique<Q::PlaceholderObserver>(dtype, custom_op_name,
                                                             compute_dtype.value_or(""));
           }),
           py::arg("dtype") = "float32", py::arg("custom_op_name") = "",
           py::arg("compute_dtype") = py::none())
      .def_property_readonly("dtype", &Q::PlaceholderObserver::dtype)
      .def_property_readonly("custom_op_name", &Q::PlaceholderObserver::custom_op_name)
      .def_property_readonly("compute_dtype", [](const Q::PlaceholderObserver& o) -> py::object {
        if (o.compute_dtype().empty()) return py::none();
        return py::str(o.compute_dtype());
      });
  bind_pickle(placeholder, [] { return std::make_unique<Q::PlaceholderObserver>(); });

  py::class_<Q::NoopObserver, std::unique_ptr<Q::NoopObserver>, Q::PlaceholderObserver> noop(
      m, "NoopObserver", "PlaceholderObserver with PyTorch's NoopObserver defaults (float16).");
  noop.def(py::init<std::string, std::string>(), py::arg("dtype") = "float16",
           py::arg("custom_op_name") = "");
  bind_pickle(noop, [] { return std::make_unique<Q::NoopObserver>(); });
}

#undef LUCIDQ_GRID_ARGS

}  // namespace

void bind_observers(py::module_& m) {
  bind_base(m);
  bind_minmax(m);
  bind_histogram(m);
  bind_calibrators(m);
  bind_passthrough(m);
}

}  // namespace lucidq_python
