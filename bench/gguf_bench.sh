#!/usr/bin/env bash
# Throughput and peak memory of `lucidq quantize --type Q4_K_M` on a generated 2 GB F16 GGUF.
#
#   bench/gguf_bench.sh [LUCIDQ]      (default: build/release/tools/lucidq/lucidq)
#
# Generates the model (bench/gen_gguf.py, 5 Llama-7B-shaped layers under llama.cpp's names) in
# a temporary folder, then runs `/usr/bin/time -v lucidq quantize --type Q4_K_M` twice on
# LUCIDQ_NUM_THREADS (default 2) threads and prints input GB/s (input bytes / wall time), CPU
# time and peak RSS against the bound 3 x the largest tensor + 64 MiB, after a `cp` baseline.
# The folder is removed at the end. LUCIDQ_BENCH_DIR picks its parent (default /dev/shm when
# it has room, else $TMPDIR or /tmp); LUCIDQ_BENCH_LAYERS the size (default 5);
# LUCIDQ_BENCH_TYPE the preset (default Q4_K_M).
set -euo pipefail
cd "$(dirname "$0")/.."

lucidq=$(realpath "${1:-build/release/tools/lucidq/lucidq}")
layers=${LUCIDQ_BENCH_LAYERS:-5}
preset=${LUCIDQ_BENCH_TYPE:-Q4_K_M}
export LUCIDQ_NUM_THREADS=${LUCIDQ_NUM_THREADS:-2}
parent=${LUCIDQ_BENCH_DIR:-}
need_kb=$(( (layers * 410 + 100) * 1024 * 5 / 2 ))  # input, its copy, the output, a margin
if [[ -z "$parent" ]]; then
  parent=/dev/shm
  if [[ ! -d /dev/shm ]] || (( $(df -Pk /dev/shm | awk 'NR==2 {print $4}') < need_kb )); then
    parent=${TMPDIR:-/tmp}
  fi
fi
if (( $(df -Pk "$parent" | awk 'NR==2 {print $4}') < need_kb )); then
  echo "gguf_bench: $parent has less than $((need_kb / 1024)) MiB free" >&2
  exit 1
fi
dir=$(mktemp -d "$parent/lucidq-gguf-bench-XXXXXX")
trap 'rm -rf "$dir"' EXIT

/usr/bin/python3 bench/gen_gguf.py "$dir/model-f16.gguf" --layers "$layers"
input_bytes=$(stat -c %s "$dir/model-f16.gguf")
largest=$((11008 * 4096 * 2))
bound_kb=$(( (3 * largest + 64 * 1024 * 1024) / 1024 ))

echo
echo "lucidq $("$lucidq" --version | cut -d' ' -f2), $LUCIDQ_NUM_THREADS threads of $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "input: $(awk -v b="$input_bytes" 'BEGIN {printf "%.2f GB", b / 1e9}') F16 GGUF in $dir ($( [[ $parent == /dev/shm ]] && echo tmpfs || echo disk))"
echo "bound: 3 x $((largest / 1024 / 1024)) MiB (the largest tensor) + 64 MiB = $((bound_kb / 1024)) MiB"
/usr/bin/time -f '%e' -o "$dir/time.txt" cp "$dir/model-f16.gguf" "$dir/copy.gguf"
copy_seconds=$(cat "$dir/time.txt")
rm -f "$dir/copy.gguf"
echo "baseline: cp of the input in the same folder: $copy_seconds s, $(awk -v b="$input_bytes" \
  -v t="$copy_seconds" 'BEGIN {printf "%.2f", b / t / 1e9}') GB/s"
echo
printf '%-8s %4s %9s %8s %8s %8s %12s  %s\n' preset run "wall s" "GB/s" "user s" "sys s" "peak RSS" "within bound"
for attempt in 1 2; do
  rm -f "$dir/out.gguf"
  /usr/bin/time -v -o "$dir/time.txt" "$lucidq" quantize "$dir/model-f16.gguf" -o "$dir/out.gguf" \
    --type "$preset" --quiet
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0;
                      for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$dir/time.txt")
  user=$(awk -F': ' '/User time/ {print $2}' "$dir/time.txt")
  sys=$(awk -F': ' '/System time/ {print $2}' "$dir/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time.txt")
  printf '%-8s %4s %9.2f %8.2f %8.2f %8.2f %9d MiB  %s\n' "$preset" "$attempt" "$wall" \
    "$(awk -v b="$input_bytes" -v t="$wall" 'BEGIN {print b / t / 1e9}')" "$user" "$sys" \
    $((rss / 1024)) "$( (( rss <= bound_kb )) && echo yes || echo NO)"
done
echo
echo "output: $(awk -v b="$(stat -c %s "$dir/out.gguf")" 'BEGIN {printf "%.2f GB", b / 1e9}')"
"$lucidq" inspect "$dir/out.gguf" | sed -n '/^tensor/,$p' | tail -n 3
