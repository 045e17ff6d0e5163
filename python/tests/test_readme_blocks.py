"""Every ```sh and ```python block of README.md runs, as written, against this build.

The blocks run in order in one fresh folder laid out as the repository root after
scripts/demo.sh: `python` (the sources), `build/release` (this build) and, as the README's
"your model", the demo's `model.safetensors`; `lucidq` is on PATH as the README's export line
puts it. A block the suite cannot run carries, on the line before its fence,
    <!-- readme-test: not run: WHY -->
(C++ and CMake blocks always say how they are checked instead).
"""

import os
import pathlib
import re
import shutil
import subprocess
import time

import pytest

import lucidq

REPO = pathlib.Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"^<!-- readme-test: not run: (.+) -->$")


def readme_blocks(path):
    """[(language, code, reason or None, line number)] of the fenced blocks with a language."""
    blocks, lines = [], path.read_text().splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match or not match.group(1):
            i += 1
            continue
        marker = MARKER.match(lines[i - 1]) if i > 0 else None
        end = i + 1
        while not lines[end].startswith("```"):
            end += 1
        blocks.append((match.group(1), "\n".join(lines[i + 1:end]) + "\n",
                       marker.group(1) if marker else None, i + 1))
        i = end + 1
    return blocks


def test_every_block_runs_or_says_why(tmp_path):
    build = pathlib.Path(lucidq.__file__).resolve().parents[2]
    cli = build / "tools" / "lucidq" / "lucidq"
    if not (build / "CMakeCache.txt").is_file() or not cli.is_file():
        pytest.skip(f"needs lucidq imported from a CMake build folder with the CLI ({build})")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "release").symlink_to(build)
    (tmp_path / "python").symlink_to(REPO / "python")
    demo = subprocess.run([str(cli), "demo", "--section", "checkpoint", "--out", "demo"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert demo.returncode == 0, demo.stderr
    shutil.copyfile(tmp_path / "demo" / "model.safetensors", tmp_path / "model.safetensors")
    env = dict(os.environ, PATH=f"{cli.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
               PWD=str(tmp_path))
    env.pop("PYTHONPATH", None)  # each block says how it finds the module
    if build != REPO / "build" / "release":  # pip reuses build/release of the sources by default
        env["LUCIDQ_CMAKE_BUILD_DIR"] = str(build)

    ran, skipped = 0, []
    for language, code, reason, line in readme_blocks(REPO / "README.md"):
        if reason is not None:
            skipped.append(f"README.md:{line} ({language}): {reason}")
            continue
        assert language in ("sh", "python"), (
            f"README.md:{line}: a ```{language} block needs a '<!-- readme-test: not run: WHY -->' "
            "line before it (the test runs only sh and python blocks)")
        command = ["bash", "-euo", "pipefail", "-c", code] if language == "sh" else [
            "/usr/bin/python3", "-c", code]
        block_env = dict(env, PYTHONPATH=str(build / "python")) if language == "python" else env
        start = time.monotonic()
        result = subprocess.run(command, cwd=tmp_path, env=block_env, capture_output=True,
                                text=True, timeout=300)
        print(f"README.md:{line} ({language}): {time.monotonic() - start:.1f} s")
        assert result.returncode == 0, (
            f"README.md:{line} ({language}) failed:\n{code}\n--- stdout\n{result.stdout[-3000:]}"
            f"\n--- stderr\n{result.stderr[-3000:]}")
        ran += 1
    print(f"{ran} README blocks ran; not run:\n  " + "\n  ".join(skipped))
    assert ran >= 5
