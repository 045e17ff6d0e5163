#!/usr/bin/env bash
# Installs the Debian 12 packages lucidq needs, only those missing (apt-get, as root or via sudo).
# Usage: scripts/install-deps.sh [build|test|bench|eval|all]   (default: all = build + test;
# bench = build + what -DLUCIDQ_BUILD_BENCH=ON uses, eval = build + what bench/eval/run.py uses;
# both kept out of `all`, which scripts/test.sh runs)
set -euo pipefail

build_packages=(
  g++ cmake ninja-build pkg-config
  libcli11-dev libfmt-dev nlohmann-json3-dev libcairo2-dev fonts-dejavu-core
  python3-dev pybind11-dev python3-numpy
  libopenblas-dev liblapacke-dev  # the weight algorithms' linear algebra (dsyrk, Cholesky)
)
test_packages=(
  libgtest-dev libgmock-dev
  python3-pytest python3-torch python3-torchvision  # the workflow tests convert torchvision's quantizable models
  python3-sklearn libopenblas0  # the workflow tests train on sklearn's digits; torch trains at speed with OpenBLAS
  clang libclang-rt-14-dev
  python3-pip python3-setuptools python3-wheel python3-venv mypy  # pip install ./python (README: in a venv); the type-stub checks
  qemu-user  # ctest's avx2_only_cpu tests: the test binaries on an emulated AVX2-only CPU
)
# -DLUCIDQ_BUILD_BENCH=ON: Google Benchmark, and the baselines bench_gemm times when present.
bench_packages=(
  libbenchmark-dev libdnnl-dev libopenblas-dev
  ocl-icd-opencl-dev  # Debian's dnnl-config.cmake requires OpenCL (only Recommended by libdnnl-dev)
)

# bench/eval/run.py: the man-page corpus the byte LM trains on, torch at OpenBLAS speed, and
# the digits MLP's scikit-learn data set.
eval_packages=(
  manpages manpages-dev
  python3-torch python3-numpy python3-sklearn libopenblas0
)

want=("${build_packages[@]}")
case "${1:-all}" in
  build) ;;
  test|all) want+=("${test_packages[@]}") ;;
  bench) want+=("${bench_packages[@]}") ;;
  eval) want+=("${eval_packages[@]}") ;;
  *) echo "install-deps: unknown set '$1' (expected build, test, bench, eval or all)" >&2; exit 2 ;;
esac

missing=()
for pkg in "${want[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#want[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo)
else
  echo "install-deps: missing packages (${missing[*]}) and not root; run as root or install sudo" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
