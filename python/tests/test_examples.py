"""Runs python/examples/*.py as a user would (a subprocess with the module on PYTHONPATH)."""

import os
import pathlib
import subprocess
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def run_example(name, pythonpath):
    env = dict(os.environ, PYTHONPATH=pythonpath)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout.splitlines()


def test_quickstart(module_pythonpath):
    lines = run_example("quickstart.py", module_pythonpath)
    print("\n".join(lines))
    assert lines[0] == "codes: [[-15, -74, 127], [-44, 14, -123], [-70, 126, 0]]"
    assert lines[1] == (
        "dequantized: [[192.5, -14.0, 689.5], [91.0, 294.0, -185.5], [0.0, 686.0, 245.0]]"
    )
    assert lines[2] == "given s=3.5 z=-70: MSE 170.8753"
    assert lines[3] == "derived: scale=3.578823 zero_point=-77 MSE 1.5730"
    assert lines[4].startswith("int4 weights: 2048 bytes -> 256 bytes (packed4), 8 scales, SQNR ")
    assert lines[5].startswith("worst channel RMSE ")
    assert lines[6] == "fake_quantize: [0.0, 0.25, 3.0, 12.75] gradient mask: [0.0, 1.0, 1.0, 0.0]"
    assert len(lines) == 7
