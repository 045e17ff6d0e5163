// Observers that look at no data: FixedQParamsObserver, PlaceholderObserver, NoopObserver.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lucid/quantization/observer.hpp"

namespace lucid::quantization {

/// Always the same qparams (PyTorch's FixedQParamsObserver, e.g. for sigmoid
/// outputs: scale 1/256, zero point 0 on quint8). observe() ignores its input
/// (it does not even count it); merge() accepts an observer of the same
/// configuration and changes nothing.
class FixedQParamsObserver : public Observer {
 public:
  /// Throws Error when the qparams are invalid: scale finite and > 0, zero
  /// point on the grid [quant_min, quant_max] of `dtype` (PyTorch's defaults:
  /// quint8, per_tensor_affine, [0, 255]), pinned for symmetric schemes.
  FixedQParamsObserver(float scale, std::int32_t zero_point, QDtype dtype = quint8,
                       QScheme qscheme = QScheme::PER_TENSOR_AFFINE, std::int64_t quant_min = 0,
                       std::int64_t quant_max = 255);

  std::string_view name() const override { return "FixedQParamsObserver"; }
  void observe(const TensorView& x) override;
  void merge(const Observer& other) override;
  QParams calculate_qparams() const override { return qparams_; }
  void reset() override {}
  std::string save_state() const override;
  void load_state(std::string_view state) override;
  std::unique_ptr<Observer> clone() const override;

 private:
  QParams qparams_;
};

/// Carries a target dtype to the converter and observes nothing (PyTorch's
/// PlaceholderObserver and NoopObserver). calculate_qparams() raises Error:
/// there are no qparams to give. `dtype` names a float type ("float32",
/// "float16", "bfloat16") or a QDtype ("quint8"); compute_dtype is the
/// dynamic-quantization hint of PlaceholderObserver ("" = none).
class PlaceholderObserver : public Observer {
 public:
  explicit PlaceholderObserver(std::string dtype = "float32", std::string custom_op_name = "",
                               std::string compute_dtype = "");

  std::string_view name() const override { return "PlaceholderObserver"; }
  void observe(const TensorView& x) override;
  void merge(const Observer& other) override;
  QParams calculate_qparams() const override;
  void reset() override {}
  std::string save_state() const override;
  void load_state(std::string_view state) override;
  std::unique_ptr<Observer> clone() const override;

  const std::string& dtype() const { return dtype_; }
  const std::string& custom_op_name() const { return custom_op_name_; }
  const std::string& compute_dtype() const { return compute_dtype_; }

 private:
  std::string dtype_;
  std::string custom_op_name_;
  std::string compute_dtype_;
};

/// PlaceholderObserver under PyTorch's other name, with its default dtype
/// float16 and no compute_dtype.
class NoopObserver : public PlaceholderObserver {
 public:
  explicit NoopObserver(std::string dtype = "float16", std::string custom_op_name = "");

  std::string_view name() const override { return "NoopObserver"; }
  std::unique_ptr<Observer> clone() const override;
};

}  // namespace lucid::quantization
