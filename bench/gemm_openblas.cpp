// The OpenBLAS baseline of bench_gemm: cblas_sgemm on the same values in float32.
#include <cblas.h>

#include "gemm_baselines.hpp"

namespace lucidq_bench {

OpenBlasSgemm::OpenBlasSgemm(const GemmInputs& in, int weight_copies)
    : m_(in.m),
      n_(in.n),
      k_(in.k),
      a_(in.a_float.data()),
      w_(static_cast<std::size_t>(weight_copies), in.w_float),
      c_(static_cast<std::size_t>(in.m * in.n)) {}

void OpenBlasSgemm::run(int copy) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(m_),
              static_cast<blasint>(n_), static_cast<blasint>(k_), 1.0f, a_,
              static_cast<blasint>(k_), w_[static_cast<std::size_t>(copy)].data(),
              static_cast<blasint>(k_), 0.0f, c_.data(), static_cast<blasint>(n_));
}

void OpenBlasSgemm::run_gemv(int copy) {
  cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(n_), static_cast<blasint>(k_), 1.0f,
              w_[static_cast<std::size_t>(copy)].data(), static_cast<blasint>(k_), a_, 1, 0.0f,
              c_.data(), 1);
}

void openblas_threads(int threads) {
  openblas_set_num_threads(threads);
}

std::string openblas_version() {
  return openblas_get_config();
}

}  // namespace lucidq_bench
