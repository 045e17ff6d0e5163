// The oneDNN baseline of bench_gemm: matmul u8 × s8 with prepacked weights and creation-time
// scales.
#include <dnnl.hpp>

#include "gemm_baselines.hpp"

namespace lucidq_bench {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

struct OneDnnMatmul::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  memory src, dst;
  std::vector<memory> weights;
};

OneDnnMatmul::OneDnnMatmul(const GemmInputs& in, Dst dst, int weight_copies)
    : impl_(std::make_unique<Impl>()) {
  auto& s = *impl_;
  const memory::desc src_md({in.m, in.k}, dt::u8, tag::ab);
  const memory::desc weights_any({in.k, in.n}, dt::s8, tag::any);
  const memory::desc dst_md({in.m, in.n}, dst == Dst::f32 ? dt::f32 : dt::s32, tag::ab);
  dnnl::primitive_attr attr;
  if (dst == Dst::f32) {
    std::vector<float> scales(static_cast<std::size_t>(in.n));
    for (std::size_t j = 0; j < scales.size(); ++j)
      scales[j] = in.a_scale * in.w_scales[j];
    attr.set_output_scales(1 << 1, scales);  // mask 2: one scale per column of C
  }
  if (in.a_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {in.a_zero_point});
  s.pd =
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, weights_any, dst_md), attr, s.engine);
  s.primitive = dnnl::matmul(s.pd);
  s.src = memory(src_md, s.engine, const_cast<std::uint8_t*>(in.a.data()));
  s.dst = memory(s.pd.dst_desc(), s.engine);
  // W[N, K] row-major is the K × N weights matrix in column-major ("ba") order.
  const memory::desc user_md({in.k, in.n}, dt::s8, tag::ba);
  memory user(user_md, s.engine, const_cast<std::int8_t*>(in.w.data()));
  for (int c = 0; c < weight_copies; ++c) {
    memory packed(s.pd.weights_desc(), s.engine);
    dnnl::reorder(user, packed).execute(s.stream, user, packed);
    s.weights.push_back(packed);
  }
  s.stream.wait();
}

OneDnnMatmul::~OneDnnMatmul() = default;

void OneDnnMatmul::run(int copy) {
  auto& s = *impl_;
  s.primitive.execute(s.stream, {{DNNL_ARG_SRC, s.src},
                                 {DNNL_ARG_WEIGHTS, s.weights[static_cast<std::size_t>(copy)]},
                                 {DNNL_ARG_DST, s.dst}});
  s.stream.wait();
}

const void* OneDnnMatmul::output() const {
  return impl_->dst.get_data_handle();
}

std::string OneDnnMatmul::implementation() const {
  return impl_->pd.impl_info_str();
}

std::size_t OneDnnMatmul::weight_bytes() const {
  return impl_->pd.weights_desc().get_size();
}

std::string onednn_version() {
  const auto* v = dnnl::version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + (v->cpu_runtime == DNNL_RUNTIME_OMP ? " (OpenMP)" : "");
}

}  // namespace lucidq_bench
