#!/usr/bin/env bash
# The main job on its built-in example: install what is missing, build (release), run `lucidq demo`.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh build
cmake --preset release -DLUCIDQ_BUILD_TOOLS=ON -DLUCIDQ_BUILD_TESTS=OFF -DLUCIDQ_BUILD_PYTHON=OFF >/dev/null
cmake --build build/release --target lucidq_cli
exec build/release/tools/lucidq/lucidq demo "$@"
