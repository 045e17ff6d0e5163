# Weight algorithms beyond RTN (GPTQ, AWQ, SmoothQuant, HQQ, importance-weighted RTN) and their
# calibration statistics; the linear algebra is OpenBLAS (cblas) and LAPACKE.
find_package(PkgConfig REQUIRED)
pkg_check_modules(LUCIDQ_OPENBLAS REQUIRED IMPORTED_TARGET openblas)
pkg_check_modules(LUCIDQ_LAPACKE REQUIRED IMPORTED_TARGET lapacke)
target_sources(lucidq PRIVATE
  algorithms/weight_matrix.cpp
  algorithms/linalg.cpp
  algorithms/hessian.cpp
  algorithms/channel_stats.cpp
  algorithms/weight_grid.cpp
  algorithms/gptq.cpp
  algorithms/awq.cpp
  algorithms/smooth_quant.cpp
  algorithms/hqq.cpp
  algorithms/weighted_rtn.cpp)
target_link_libraries(lucidq PRIVATE PkgConfig::LUCIDQ_LAPACKE PkgConfig::LUCIDQ_OPENBLAS)
