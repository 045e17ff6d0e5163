#!/usr/bin/env bash
# Builds the libFuzzer safetensors target with clang in build/fuzz and fuzzes it for a bounded time.
#
#   scripts/run-fuzz.sh                      # 60 s
#   LUCIDQ_FUZZ_SECONDS=600 scripts/run-fuzz.sh
#
# The seed corpus (fuzz/corpus/safetensors) is copied to a temporary directory, so new inputs
# never land in the repository; crash inputs are kept in build/fuzz/artifacts/. Exits non-zero
# when the build fails or the fuzzer finds a crash; the last line is always
# "fuzz: 1 passed, 0 failed" or "fuzz: 0 passed, 1 failed".
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${LUCIDQ_FUZZ_SECONDS:-60}
cxx=${CXX_FUZZ:-clang++}
build="$root/build/fuzz"
work=$(mktemp -d "${TMPDIR:-/tmp}/lucidq-fuzz.XXXXXX")

finish() {
  local rc=$?
  rm -rf "$work"
  if [ "$rc" -eq 0 ]; then
    echo "fuzz: 1 passed, 0 failed"
  else
    echo "fuzz: 0 passed, 1 failed"
  fi
  exit "$rc"
}
trap finish EXIT

# libFuzzer's runtime ships separately from clang on Debian: install it when a trivial
# fuzz target does not link.
libfuzzer_links() {
  printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' |
    "$cxx" -x c++ -fsanitize=fuzzer - -o "$work/probe" >/dev/null 2>&1
}
if ! libfuzzer_links; then
  major=$("$cxx" -dumpversion | cut -d. -f1)
  echo "run-fuzz: libFuzzer runtime missing for $cxx $major; installing it with apt-get" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get install -y "libclang-rt-$major-dev" ||
    "${sudo_cmd[@]}" apt-get install -y "libfuzzer-$major-dev"
  libfuzzer_links || { echo "run-fuzz: libFuzzer still does not link" >&2; exit 1; }
fi

cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLUCIDQ_BUILD_FUZZ=ON -DLUCIDQ_BUILD_TESTS=OFF -DLUCIDQ_BUILD_TOOLS=OFF \
  -DLUCIDQ_BUILD_PYTHON=OFF -DLUCIDQ_BUILD_BENCH=OFF >"$work/configure.log" ||
  { cat "$work/configure.log" >&2; exit 1; }
cmake --build "$build" --target fuzz_safetensors

mkdir -p "$work/corpus" "$build/artifacts"
cp "$root"/fuzz/corpus/safetensors/* "$work/corpus/"

echo "run-fuzz: fuzz_safetensors for ${seconds}s on $(ls "$work/corpus" | wc -l) seed files" >&2
status=0
"$build/fuzz/fuzz_safetensors" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
  -dict="$root/fuzz/safetensors.dict" -artifact_prefix="$build/artifacts/" \
  "$work/corpus" 2>"$work/fuzz.log" || status=$?
tail -n 40 "$work/fuzz.log" >&2
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -n 1)
echo "run-fuzz: ${execs:-?} executions in ${seconds}s; exit status $status" >&2
exit "$status"
