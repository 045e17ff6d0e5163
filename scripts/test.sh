#!/usr/bin/env bash
# Builds lucidq and runs every test suite: C++ (ctest), Python (pytest), the C++
# tests again under ASan + UBSan, and a bounded fuzz run. One summary line per
# suite; exits non-zero when any suite fails.
# Environment: LUCIDQ_SEED (random tests), LUCIDQ_FUZZ_SECONDS (default 60; 0 skips).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
logs="$root/build/test-logs"

scripts/install-deps.sh all || exit 1
mkdir -p "$logs"

summaries=()
failed_suites=0
total_passed=0
total_skipped=0
total_failed=0

# record SUITE PASSED FAILED [SKIPPED]: remembers one summary line. Skipped tests (a tier or
# variant this CPU lacks, a missing tool) are counted apart from passed ones, never as passed.
record() {
  local skipped=${4:-0}
  summaries+=("$1: $2 passed, $skipped skipped, $3 failed")
  total_passed=$((total_passed + $2))
  total_skipped=$((total_skipped + skipped))
  total_failed=$((total_failed + $3))
  if (($3 > 0)); then failed_suites=$((failed_suites + 1)); fi
}

# ctest_suite NAME BUILD_DIR: runs ctest and records its counts.
ctest_suite() {
  local name=$1 dir=$2 log="$logs/$1.log"
  ctest --test-dir "$dir" --output-on-failure -j2 >"$log" 2>&1
  local rc=$?
  tail -n 15 "$log"
  local line total failed skipped
  line=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$log" | tail -n 1)
  # ctest counts a skipped test as passed and lists it under "The following tests did not run".
  skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .+ \(Skipped\)$' "$log")
  if [[ -z "$line" ]]; then
    record "$name" 0 1
    return
  fi
  failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
  total=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$line")
  if ((rc != 0 && failed == 0)); then failed=1; fi
  record "$name" $((total - failed - skipped)) "$failed" "$skipped"
}

# pytest_suite NAME PATH... [-- LAUNCHER...]: runs pytest on the release build's module (under
# LAUNCHER when given) and records its counts.
pytest_suite() {
  local name=$1 log="$logs/$1.log" paths=() launcher=()
  shift
  while (($#)) && [[ "$1" != -- ]]; do paths+=("$1"); shift; done
  (($#)) && shift && launcher=("$@")
  LUCIDQ_PYTHONPATH="$root/build/release/python" PYTHONPATH="$root/build/release/python" \
    "${launcher[@]}" /usr/bin/python3 -m pytest "${paths[@]}" -q -p no:cacheprovider 2>&1 |
    grep -v "TCG doesn't support requested feature" >"$log"
  local rc=${PIPESTATUS[0]}
  tail -n 15 "$log"
  local last passed failed skipped
  last=$(grep -E "[0-9]+ (passed|failed|error)" "$log" | tail -n 1)
  passed=$(grep -oE "[0-9]+ passed" <<<"$last" | grep -oE "[0-9]+" || echo 0)
  failed=$(grep -oE "[0-9]+ (failed|errors?)" <<<"$last" | awk '{s += $1} END {print s + 0}')
  skipped=$(grep -oE "[0-9]+ skipped" <<<"$last" | grep -oE "[0-9]+" || echo 0)
  [[ -n "$passed" ]] || passed=0
  [[ -n "$failed" ]] || failed=0
  if ((rc != 0 && failed == 0)); then failed=1; fi
  record "$name" "$passed" "$failed" "$skipped"
}

build() {  # build PRESET: configure and build, recording a failure as a suite.
  local options=(-DLUCIDQ_BUILD_TESTS=ON -DLUCIDQ_BUILD_TOOLS=ON)
  [[ "$1" == release ]] && options+=(-DLUCIDQ_BUILD_PYTHON=ON)
  if ! { cmake --preset "$1" "${options[@]}" >"$logs/configure-$1.log" 2>&1 &&
         cmake --build "build/$1" -j2 >"$logs/build-$1.log" 2>&1; }; then
    tail -n 40 "$logs/configure-$1.log" "$logs/build-$1.log"
    record "build-$1" 0 1
    return 1
  fi
}

echo "== release build"
if build release; then
  echo "== C++ tests (ctest)"
  ctest_suite ctest build/release

  echo "== Python tests (pytest)"
  pytest_suite pytest python/tests

  # The CPU-sensitive Python tests again on an emulated AVX2-only CPU (AMD Zen 3's CPUID under
  # qemu-user: no AVX-512, no VNNI), where torch's onednn engine saturates and its float kernels
  # take their AVX2 paths (docs/architecture.md, "Testing on CPUs you do not have").
  echo "== Python tests on an emulated AVX2-only CPU (qemu-x86_64 -cpu EPYC-Milan)"
  if skip_reason=$(scripts/on-avx2-only-cpu.sh /bin/true); then
    pytest_suite pytest-avx2-only-cpu python/tests/test_gemm_torch.py \
      python/tests/test_workflow_digits.py python/tests/test_runtime.py \
      -- scripts/on-avx2-only-cpu.sh
  else
    echo "$skip_reason"
  fi
fi

echo "== ASan + UBSan build"
if build asan; then
  echo "== C++ tests under ASan + UBSan"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0" \
    ctest_suite ctest-asan build/asan
fi

if [[ -x scripts/run-fuzz.sh && "${LUCIDQ_FUZZ_SECONDS:-60}" != 0 ]]; then
  echo "== fuzz (safetensors reader, ${LUCIDQ_FUZZ_SECONDS:-60} s)"
  if scripts/run-fuzz.sh >"$logs/fuzz.log" 2>&1; then record fuzz 1 0; else record fuzz 0 1; fi
  tail -n 5 "$logs/fuzz.log"
fi

echo
echo "== summary (logs in build/test-logs/)"
printf '%s\n' "${summaries[@]}"
echo "total: $total_passed passed, $total_skipped skipped, $total_failed failed"
((failed_suites == 0))
