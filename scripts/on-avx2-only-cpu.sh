#!/bin/sh
# Runs a command on an emulated AVX2-only CPU (qemu-user, AMD Zen 3's model), or skips (exit 77).
# Usage: scripts/on-avx2-only-cpu.sh COMMAND [ARGS...]
# The model (EPYC-Milan: avx2 fma f16c; no AVX-512, no AVX-VNNI) adds nothing on a host that
# lacks those features itself: the native run already is that CPU, so the command is skipped
# there with the reason, as it is when qemu-user is missing. Exit 77 is ctest's skip code here.
host_features=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
case " $host_features " in
  *" avx512f "* | *" avx_vnni "*) ;;
  *)
    echo "skipped: this CPU has neither AVX-512 nor AVX-VNNI, so the native tests already ran on an AVX2-only CPU (emulating one adds nothing)"
    exit 77
    ;;
esac
if ! command -v qemu-x86_64 >/dev/null 2>&1; then
  echo "skipped: qemu-x86_64 not found (scripts/install-deps.sh test installs qemu-user)"
  exit 77
fi
exec qemu-x86_64 -cpu EPYC-Milan "$@"
