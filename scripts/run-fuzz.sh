#!/usr/bin/env bash
# Builds the libFuzzer targets (safetensors, GGUF) with clang in build/fuzz and fuzzes each for
# half of a bounded time.
#
#   scripts/run-fuzz.sh                      # 60 s in all (30 s per target)
#   LUCIDQ_FUZZ_SECONDS=600 scripts/run-fuzz.sh
#
# The safetensors seed corpus (fuzz/corpus/safetensors) is copied to a temporary directory and
# the GGUF one is generated there (fuzz/make_gguf_corpus.py), so new inputs never land in the
# repository; crash inputs are kept in build/fuzz/artifacts/. Exits non-zero
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
cmake --build "$build" --target fuzz_safetensors fuzz_gguf

mkdir -p "$work/safetensors" "$work/gguf" "$build/artifacts"
cp "$root"/fuzz/corpus/safetensors/* "$work/safetensors/"
/usr/bin/python3 "$root/fuzz/make_gguf_corpus.py" "$work/gguf"

# run_target NAME DICT CORPUS SECONDS: fuzzes one target; returns its exit status.
run_target() {
  local name=$1 dict=$2 corpus=$3 time=$4 rc=0
  echo "run-fuzz: $name for ${time}s on $(ls "$corpus" | wc -l) seed files" >&2
  "$build/fuzz/$name" -max_total_time="$time" -timeout=10 -print_final_stats=1 \
    -dict="$dict" -artifact_prefix="$build/artifacts/$name-" \
    "$corpus" 2>"$work/$name.log" || rc=$?
  tail -n 20 "$work/$name.log" >&2
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.log" | tail -n 1)
  echo "run-fuzz: $name: ${execs:-?} executions in ${time}s; exit status $rc" >&2
  return "$rc"
}

half=$(( (seconds + 1) / 2 ))
status=0
run_target fuzz_safetensors "$root/fuzz/safetensors.dict" "$work/safetensors" "$half" || status=$?
run_target fuzz_gguf "$root/fuzz/gguf.dict" "$work/gguf" "$(( seconds - half > 0 ? seconds - half : 1 ))" ||
  status=$?
exit "$status"
