// The GEMM baselines bench_gemm times next to lucidq: oneDNN matmul (u8 × s8) and OpenBLAS sgemm.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lucidq_bench {

/// One product's inputs, shared by every library: A[M, K] uint8 codes with one
/// scale / zero point, W[N, K] symmetric int8 codes with one scale per output
/// channel, and the same values dequantized to float32 for sgemm.
struct GemmInputs {
  std::int64_t m = 0, n = 0, k = 0;
  std::vector<std::uint8_t> a;  ///< M × K, row-major
  float a_scale = 0.05f;
  std::int32_t a_zero_point = 0;
  std::vector<std::int8_t> w;   ///< N × K, row-major (row n = output channel n)
  std::vector<float> w_scales;  ///< N
  std::vector<float> a_float;   ///< a_scale · (a − a_zero_point)
  std::vector<float> w_float;   ///< w_scales[n] · w
};

/// Random codes (fixed seed): A uniform in [0, 255], W uniform in [-127, 127].
GemmInputs make_inputs(std::int64_t m, std::int64_t n, std::int64_t k, std::int32_t a_zero_point,
                       bool with_float);

/// oneDNN matmul: u8 source, s8 weights reordered once into the layout the
/// primitive chose (weights desc format_tag::any), the source zero point and
/// (for f32 dst) the per-channel output scales a_scale · w_scales[n] fixed at
/// creation. Create after setting the OpenMP thread count.
class OneDnnMatmul {
 public:
  enum class Dst { f32, s32 };
  /// `weight_copies` > 1 packs that many separate copies of W (to time with cold caches).
  OneDnnMatmul(const GemmInputs& in, Dst dst, int weight_copies = 1);
  ~OneDnnMatmul();
  OneDnnMatmul(const OneDnnMatmul&) = delete;
  OneDnnMatmul& operator=(const OneDnnMatmul&) = delete;
  /// C = A · W_copyᵀ (waits for the stream).
  void run(int copy = 0);
  const void* output() const;
  std::string implementation() const;  ///< the primitive's impl_info_str()
  std::size_t weight_bytes() const;    ///< bytes of one packed copy

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
std::string onednn_version();

/// OpenBLAS cblas_sgemm on the dequantized float32 A and W (row-major, W transposed).
/// OpenBLAS has no prepacking API: it packs inside every call.
class OpenBlasSgemm {
 public:
  OpenBlasSgemm(const GemmInputs& in, int weight_copies = 1);
  void run(int copy = 0);
  /// cblas_sgemv for M = 1 (y = W · a): the float32 matrix-vector baseline sgemm is not.
  void run_gemv(int copy = 0);
  const float* output() const { return c_.data(); }
  std::size_t weight_bytes() const { return static_cast<std::size_t>(n_ * k_) * sizeof(float); }

 private:
  std::int64_t m_, n_, k_;
  const float* a_;
  std::vector<std::vector<float>> w_;
  std::vector<float> c_;
};
void openblas_threads(int threads);
std::string openblas_version();

}  // namespace lucidq_bench
