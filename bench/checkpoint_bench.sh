#!/usr/bin/env bash
# Throughput and peak memory of `lucidq quantize` on a generated 2 GB bf16 LLM-like checkpoint.
#
#   bench/checkpoint_bench.sh [LUCIDQ]      (default: build/release/tools/lucidq/lucidq)
#
# Generates the checkpoint (bench/gen_checkpoint.py, 5 Llama-7B-shaped layers) in a temporary
# folder, then runs `/usr/bin/time -v lucidq quantize` twice per configuration -- int8 per
# channel, and int4 in groups of 128 -- and prints input GB/s (input bytes / wall time), CPU
# time, and peak RSS against the bound 3 x the largest tensor + 64 MiB, after a baseline: `cp`
# of the same file in the same folder (read and write, no computing). The folder is removed
# at the end. LUCIDQ_BENCH_DIR picks the folder's parent (default: /dev/shm when it has room,
# so the figures measure lucidq rather than the disk; set it to a disk folder to include the
# output's fsync). LUCIDQ_BENCH_LAYERS changes the size (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."

lucidq=$(realpath "${1:-build/release/tools/lucidq/lucidq}")
layers=${LUCIDQ_BENCH_LAYERS:-5}
parent=${LUCIDQ_BENCH_DIR:-}
need_kb=$(( (layers * 420 + 200) * 1024 * 5 / 2 ))  # input, its copy, the output, a margin
if [[ -z "$parent" ]]; then
  parent=/dev/shm
  if [[ ! -d /dev/shm ]] || (( $(df -Pk /dev/shm | awk 'NR==2 {print $4}') < need_kb )); then
    parent=${TMPDIR:-/tmp}
  fi
fi
if (( $(df -Pk "$parent" | awk 'NR==2 {print $4}') < need_kb )); then
  echo "checkpoint_bench: $parent has less than $((need_kb / 1024)) MiB free" >&2
  exit 1
fi
dir=$(mktemp -d "$parent/lucidq-bench-XXXXXX")
trap 'rm -rf "$dir"' EXIT

/usr/bin/python3 bench/gen_checkpoint.py "$dir/llm.safetensors" --layers "$layers"
input_bytes=$(stat -c %s "$dir/llm.safetensors")
largest=$((11008 * 4096 * 2))
bound_kb=$(( (3 * largest + 64 * 1024 * 1024) / 1024 ))

echo
echo "lucidq $("$lucidq" --version | cut -d' ' -f2), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "input: $(awk -v b="$input_bytes" 'BEGIN {printf "%.2f GB", b / 1e9}') bf16 in $dir ($( [[ $parent == /dev/shm ]] && echo tmpfs || echo disk))"
echo "bound: 3 x $((largest / 1024 / 1024)) MiB (the largest tensor) + 64 MiB = $((bound_kb / 1024)) MiB"
echo
/usr/bin/time -f '%e' -o "$dir/time.txt" cp "$dir/llm.safetensors" "$dir/copy.safetensors"
copy_seconds=$(cat "$dir/time.txt")
rm -f "$dir/copy.safetensors"
echo "baseline: cp of the input in the same folder: $copy_seconds s, $(awk -v b="$input_bytes" \
  -v t="$copy_seconds" 'BEGIN {printf "%.2f", b / t / 1e9}') GB/s"
echo
printf '%-22s %4s %9s %8s %8s %8s %12s  %s\n' config run "wall s" "GB/s" "user s" "sys s" "peak RSS" "within bound"
run() {
  local name=$1
  shift
  for attempt in 1 2; do
    rm -f "$dir/out.safetensors"  # a new output each time: replacing one costs its deletion too
    /usr/bin/time -v -o "$dir/time.txt" "$lucidq" quantize "$dir/llm.safetensors" \
      -o "$dir/out.safetensors" --quiet "$@"
    local wall user sys rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0;
                        for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$dir/time.txt")
    user=$(awk -F': ' '/User time/ {print $2}' "$dir/time.txt")
    sys=$(awk -F': ' '/System time/ {print $2}' "$dir/time.txt")
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time.txt")
    printf '%-22s %4s %9.2f %8.2f %8.2f %8.2f %8d MiB  %s\n' "$name" "$attempt" "$wall" \
      "$(awk -v b="$input_bytes" -v t="$wall" 'BEGIN {print b / t / 1e9}')" "$user" "$sys" \
      $((rss / 1024)) "$( ((rss <= bound_kb)) && echo yes || echo NO)"
  done
  echo "  output: $(stat -c %s "$dir/out.safetensors" | awk '{printf "%.2f GB", $1 / 1e9}')"
}
run "int8 per-channel"
run "int4 group 128" --dtype qint4 --group-size 128
