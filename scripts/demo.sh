#!/usr/bin/env bash
# The main job on its built-in example: install what is missing, build (release) the CLI and the
# Python module, run `lucidq demo`, then print how to reach both from a shell.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh build
cmake --preset release -DLUCIDQ_BUILD_TOOLS=ON -DLUCIDQ_BUILD_TESTS=OFF -DLUCIDQ_BUILD_PYTHON=ON >/dev/null
cmake --build build/release --target lucidq_cli _lucidq
status=0
build/release/tools/lucidq/lucidq demo "$@" || status=$?
cat <<NEXT

Built: the CLI (build/release/tools/lucidq/lucidq) and the Python module (build/release/python).
To type \`lucidq\` as the README does, run in this shell:
  export PATH="$PWD/build/release/tools/lucidq:\$PATH"
Python, from this folder:
  PYTHONPATH=build/release/python /usr/bin/python3 python/examples/quickstart.py
NEXT
exit "$status"
