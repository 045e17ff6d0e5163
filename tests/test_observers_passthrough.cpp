// Tests of observer_passthrough.hpp: FixedQParams, Placeholder and Noop observers.
#include <gtest/gtest.h>

#include <vector>

#include "lucid/quantization/observer_passthrough.hpp"
#include "observer_test_data.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
using Q::testing::view_of;

TEST(FixedQParamsObserver, AlwaysTheSameQParams) {
  Q::FixedQParamsObserver obs(1.0f / 256.0f, 0);  // PyTorch's sigmoid observer
  const std::vector<float> x{-100.0f, 100.0f};
  obs.observe(view_of(x));
  EXPECT_EQ(obs.count(), 0);
  const Q::QParams q = obs.calculate_qparams();
  EXPECT_EQ(q.scale, Q::ParamArray<float>{1.0f / 256.0f});
  EXPECT_EQ(q.zero_point, Q::ParamArray<std::int32_t>{0});
  EXPECT_EQ(q.qdtype, Q::quint8);
  obs.merge(Q::FixedQParamsObserver(1.0f / 256.0f, 0));
  EXPECT_ERROR_CONTAINS(obs.merge(Q::FixedQParamsObserver(2.0f / 256.0f, 128)), "other qparams");
  const auto loaded = Q::load_observer(obs.save_state());
  EXPECT_EQ(loaded->calculate_qparams().scale, q.scale);
  EXPECT_EQ(loaded->name(), "FixedQParamsObserver");
}

TEST(FixedQParamsObserver, ValidatesItsQParams) {
  EXPECT_ERROR_CONTAINS(Q::FixedQParamsObserver(-1.0f, 0), "FixedQParamsObserver: ");
  EXPECT_ERROR_CONTAINS(Q::FixedQParamsObserver(1.0f, 300), "zero_point");
  EXPECT_ERROR_CONTAINS(Q::FixedQParamsObserver(1.0f, 0, Q::qint8), "FixedQParamsObserver");
  const Q::FixedQParamsObserver signed_obs(0.5f, 0, Q::qint8, Q::per_tensor_symmetric, -128, 127);
  EXPECT_EQ(signed_obs.calculate_qparams().qdtype, Q::qint8);
}

TEST(PlaceholderObserver, CarriesADtypeAndHasNoQParams) {
  Q::PlaceholderObserver obs("quint8", "", "quint8");
  const std::vector<float> x{1.0f};
  obs.observe(view_of(x));
  EXPECT_EQ(obs.dtype(), "quint8");
  EXPECT_EQ(obs.compute_dtype(), "quint8");
  EXPECT_ERROR_CONTAINS(obs.calculate_qparams(),
                        "PlaceholderObserver.calculate_qparams: this "
                        "observer has no qparams");
  EXPECT_ERROR_CONTAINS(Q::PlaceholderObserver("complex"), "dtype = \"complex\"");
  const auto loaded = Q::load_observer(obs.save_state());
  EXPECT_EQ(dynamic_cast<const Q::PlaceholderObserver&>(*loaded).compute_dtype(), "quint8");
  obs.merge(*loaded);
  EXPECT_ERROR_CONTAINS(obs.merge(Q::PlaceholderObserver()), "another configuration");
}

TEST(NoopObserver, Float16ByDefault) {
  Q::NoopObserver obs;
  EXPECT_EQ(obs.name(), "NoopObserver");
  EXPECT_EQ(obs.dtype(), "float16");
  EXPECT_ERROR_CONTAINS(obs.calculate_qparams(), "NoopObserver.calculate_qparams");
  const auto loaded = Q::load_observer(obs.save_state());
  EXPECT_EQ(loaded->name(), "NoopObserver");
  EXPECT_ERROR_CONTAINS(obs.merge(Q::PlaceholderObserver("float16")),
                        "other is a PlaceholderObserver");
}
