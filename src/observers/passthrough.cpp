// FixedQParamsObserver, PlaceholderObserver and NoopObserver: observers that look at no data.
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/observer_passthrough.hpp"
#include "observers/state.hpp"

namespace lucid::quantization {
namespace {

// A float type name ("float16") or a QDtype name ("quint8"), as PyTorch's dtype argument.
std::string checked_dtype(std::string_view who, const std::string& dtype, bool allow_empty) {
  if (allow_empty && dtype.empty()) return dtype;
  try {
    return to_string(scalar_type_from_string(dtype));
  } catch (const Error&) {
  }
  try {
    return qdtype_from_string(dtype).name();
  } catch (const Error&) {
  }
  throw Error(std::string(who) + ": dtype = \"" + dtype +
              "\" (expected a float type such as \"float16\" or a QDtype such as \"quint8\")");
}

void require_same_name(const Observer& self, const Observer& other) {
  if (other.name() != self.name()) {
    throw Error(std::string(self.name()) + ".merge: other is a " + std::string(other.name()) +
                " (expected a " + std::string(self.name()) + ")");
  }
}

}  // namespace

// ---------------------------------------------------------------- FixedQParamsObserver

FixedQParamsObserver::FixedQParamsObserver(float scale, std::int32_t zero_point, QDtype dtype,
                                           QScheme qscheme, std::int64_t quant_min,
                                           std::int64_t quant_max) {
  try {
    qparams_ =
        QParams::per_tensor(scale, zero_point, dtype.with_range(quant_min, quant_max), qscheme);
  } catch (const Error& error) {
    throw Error(std::string("FixedQParamsObserver: ") + error.what());
  }
}

void FixedQParamsObserver::observe(const TensorView&) {}

void FixedQParamsObserver::merge(const Observer& other) {
  require_same_name(*this, other);
  const auto& o = static_cast<const FixedQParamsObserver&>(other);
  if (o.qparams_.scale != qparams_.scale || o.qparams_.zero_point != qparams_.zero_point ||
      o.qparams_.qdtype != qparams_.qdtype || o.qparams_.qscheme != qparams_.qscheme) {
    throw Error("FixedQParamsObserver.merge: other has other qparams (expected the same)");
  }
}

std::string FixedQParamsObserver::save_state() const {
  detail::Json options = detail::Json::object();
  options["scale"] = detail::float_to_json(qparams_.scale[0]);
  options["zero_point"] = qparams_.zero_point[0];
  options["dtype"] = QDtype::full_range(qparams_.qdtype.bits(), qparams_.qdtype.is_signed()).name();
  options["qscheme"] = to_string(qparams_.qscheme);
  options["quant_min"] = qparams_.qdtype.quant_min();
  options["quant_max"] = qparams_.qdtype.quant_max();
  return detail::write_state(name(), std::move(options), detail::Json::object());
}

void FixedQParamsObserver::load_state(std::string_view state) {
  const auto parsed = detail::read_state(state, name());
  const std::string_view who = name();
  *this = FixedQParamsObserver(
      detail::float_from_json(detail::field<detail::Json>(parsed.options, "scale", who), who),
      detail::field<std::int32_t>(parsed.options, "zero_point", who),
      qdtype_from_string(detail::field<std::string>(parsed.options, "dtype", who)),
      qscheme_from_string(detail::field<std::string>(parsed.options, "qscheme", who)),
      detail::field<std::int64_t>(parsed.options, "quant_min", who),
      detail::field<std::int64_t>(parsed.options, "quant_max", who));
}

std::unique_ptr<Observer> FixedQParamsObserver::clone() const {
  return std::make_unique<FixedQParamsObserver>(*this);
}

// ---------------------------------------------------------------- Placeholder / Noop

PlaceholderObserver::PlaceholderObserver(std::string dtype, std::string custom_op_name,
                                         std::string compute_dtype)
    : dtype_(checked_dtype("PlaceholderObserver", dtype, false)),
      custom_op_name_(std::move(custom_op_name)),
      compute_dtype_(checked_dtype("PlaceholderObserver", compute_dtype, true)) {}

void PlaceholderObserver::observe(const TensorView&) {}

void PlaceholderObserver::merge(const Observer& other) {
  require_same_name(*this, other);
  const auto& o = static_cast<const PlaceholderObserver&>(other);
  if (o.dtype_ != dtype_ || o.custom_op_name_ != custom_op_name_ ||
      o.compute_dtype_ != compute_dtype_) {
    throw Error(std::string(name()) +
                ".merge: other has another configuration (expected the same)");
  }
}

QParams PlaceholderObserver::calculate_qparams() const {
  throw Error(std::string(name()) +
              ".calculate_qparams: this observer has no qparams (it only carries dtype \"" +
              dtype_ +
              "\" to the converter; use a MinMaxObserver or another calibrating observer)");
}

std::string PlaceholderObserver::save_state() const {
  detail::Json options = detail::Json::object();
  options["dtype"] = dtype_;
  options["custom_op_name"] = custom_op_name_;
  options["compute_dtype"] = compute_dtype_;
  return detail::write_state(name(), std::move(options), detail::Json::object());
}

void PlaceholderObserver::load_state(std::string_view state) {
  const auto parsed = detail::read_state(state, name());
  const std::string_view who = name();
  PlaceholderObserver loaded(detail::field<std::string>(parsed.options, "dtype", who),
                             detail::field<std::string>(parsed.options, "custom_op_name", who),
                             detail::field<std::string>(parsed.options, "compute_dtype", who));
  dtype_ = loaded.dtype_;
  custom_op_name_ = loaded.custom_op_name_;
  compute_dtype_ = loaded.compute_dtype_;
}

std::unique_ptr<Observer> PlaceholderObserver::clone() const {
  return std::make_unique<PlaceholderObserver>(*this);
}

NoopObserver::NoopObserver(std::string dtype, std::string custom_op_name)
    : PlaceholderObserver(std::move(dtype), std::move(custom_op_name), "") {}

std::unique_ptr<Observer> NoopObserver::clone() const {
  return std::make_unique<NoopObserver>(*this);
}

}  // namespace lucid::quantization
