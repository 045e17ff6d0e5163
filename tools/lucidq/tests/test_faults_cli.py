#!/usr/bin/env python3
"""Fault injection and hostile files against the lucidq CLI: jobs of a few hundred MB stopped by
SIGINT, SIGTERM, SIGHUP and SIGKILL midway, an input truncated while it is mapped, FIFOs, deep
JSON nesting, NUL padding and GGUF tensor names that are not UTF-8.

Run by ctest (tools/lucidq/tests/CMakeLists.txt) as
    python3 test_faults_cli.py --lucidq PATH/TO/lucidq [unittest arguments, e.g. a class name]
Needs only the Python standard library. Every randomised input prints its seed (LUCIDQ_SEED).
"""

import array
import json
import os
import random
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

LUCIDQ = None  # set from --lucidq
BIG_TENSORS = 48  # tensors of 1024 x 1024 float32 (4 MiB each): a 192 MiB input


def seed():
    value = int(os.environ.get("LUCIDQ_SEED", "20261130"))
    print(f"[ seed ] LUCIDQ_SEED={value}", file=sys.stderr)
    return value


def write_big_input(path, tensors=BIG_TENSORS):
    """A float32 safetensors file of `tensors` 1024 x 1024 tensors of random values."""
    rng = random.Random(seed())
    chunk = array.array("f", (rng.uniform(-1, 1) for _ in range(1 << 16))).tobytes() * 16
    header, offset = {}, 0
    for t in range(tensors):
        header[f"layer{t}.weight"] = {"dtype": "F32", "shape": [1024, 1024],
                                      "data_offsets": [offset, offset + len(chunk)]}
        offset += len(chunk)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _ in range(tensors):
            f.write(chunk)


def raw_safetensors(header_bytes, data=b""):
    return struct.pack("<Q", len(header_bytes)) + header_bytes + data


def gguf_bytes(tensor_name):
    """A GGUF v3 file with no metadata and one F32 tensor of 32 values named `tensor_name`."""
    out = b"GGUF" + struct.pack("<Iqq", 3, 1, 0)
    out += struct.pack("<Q", len(tensor_name)) + tensor_name
    out += struct.pack("<IqIQ", 1, 32, 0, 0)
    out += b"\0" * (-len(out) % 32)
    return out + struct.pack("<32f", *([0.5] * 32))


class CliCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="lucidq-faults-")
        self.dir = self.tmp.name
        self.out = os.path.join(self.dir, "out")
        os.mkdir(self.out)

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def lucidq(self, *args, timeout=60):
        return subprocess.run([LUCIDQ, *args], cwd=self.dir, capture_output=True, text=True,
                              errors="replace", timeout=timeout)

    def start(self, *args):
        return subprocess.Popen([LUCIDQ, *args], cwd=self.dir, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, errors="replace")

    def wait_for_temporary(self, process, target_name):
        """Polls self.out until the job's hidden temporary file appears; returns its name."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for name in os.listdir(self.out):
                if name.startswith(f".{target_name}.tmp-"):
                    return name
            if process.poll() is not None:
                self.fail(f"lucidq ended ({process.returncode}) before its temporary file "
                          f"appeared: {process.stderr.read()}")
            time.sleep(0.001)
        process.kill()
        self.fail("no temporary file appeared within 30 s")


class Interrupt(CliCase):
    """A signal midway through a job: the temporary output removed, one line, 128 + N."""

    @classmethod
    def setUpClass(cls):
        cls.input_dir = tempfile.TemporaryDirectory(prefix="lucidq-faults-input-")
        cls.input = os.path.join(cls.input_dir.name, "big.safetensors")
        write_big_input(cls.input)

    @classmethod
    def tearDownClass(cls):
        cls.input_dir.cleanup()

    def interrupt(self, sig, target_name, *extra):
        target = os.path.join(self.out, target_name)
        process = self.start("quantize", self.input, "-o", target, *extra)
        self.wait_for_temporary(process, target_name)
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=30)
        self.assertEqual(process.returncode, 128 + sig, stderr)
        self.assertIn(f"lucidq: interrupted: {target} was not written\n", stderr)
        self.assertEqual(os.listdir(self.out), [])

    def test_sigint_removes_the_temporary_output_and_exits_130(self):
        self.interrupt(signal.SIGINT, "q.safetensors")

    def test_sigterm_removes_the_temporary_output_and_exits_143(self):
        self.interrupt(signal.SIGTERM, "q.safetensors", "--dtype", "qint4", "--group-size", "32")

    def test_sighup_during_a_gguf_job_exits_129(self):
        self.interrupt(signal.SIGHUP, "q.gguf", "--type", "Q8_0")

    def test_sigint_during_dequantize(self):
        quantized = self.path("q.safetensors")
        done = self.lucidq("quantize", self.input, "-o", quantized, "-q")
        self.assertEqual(done.returncode, 0, done.stderr)
        target = os.path.join(self.out, "d.safetensors")
        process = self.start("dequantize", quantized, "-o", target)
        self.wait_for_temporary(process, "d.safetensors")
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        self.assertEqual(process.returncode, 130, stderr)
        self.assertIn(f"lucidq: interrupted: {target} was not written\n", stderr)
        self.assertEqual(os.listdir(self.out), [])

    def test_sigkill_leaves_the_target_untouched(self):
        target = os.path.join(self.out, "q.safetensors")
        with open(target, "wb") as f:
            f.write(b"the previous output")
        process = self.start("quantize", self.input, "-o", target, "--force")
        temporary = self.wait_for_temporary(process, "q.safetensors")
        process.kill()
        process.communicate(timeout=30)
        self.assertEqual(process.returncode, -signal.SIGKILL)
        with open(target, "rb") as f:
            self.assertEqual(f.read(), b"the previous output")
        # SIGKILL cannot be caught: the hidden temporary file stays (docs/cli.md says so).
        self.assertEqual(sorted(os.listdir(self.out)), sorted(["q.safetensors", temporary]))


class Shrink(CliCase):
    """An input truncated while the job reads it: one clear error, exit 1, nothing left."""

    def truncated_midway(self, target_name, *extra):
        source = self.path("big.safetensors")
        write_big_input(source)
        target = os.path.join(self.out, target_name)
        process = self.start("quantize", source, "-o", target, *extra)
        self.wait_for_temporary(process, target_name)
        os.truncate(source, 4096)
        _, stderr = process.communicate(timeout=60)
        self.assertEqual(process.returncode, 1, stderr)
        self.assertIn(f"lucidq: error: {source}: the file shrank while it was being read (", stderr)
        self.assertEqual(stderr.count("\n"), 1, stderr)
        self.assertEqual(os.listdir(self.out), [])

    def test_quantize(self):
        self.truncated_midway("q.safetensors")

    def test_gguf_quantize(self):
        self.truncated_midway("q.gguf", "--type", "Q8_0")


class Storage(CliCase):
    """Output on a full file system and in a read-only folder: a clean error, nothing left. Each
    runs lucidq in a private mount namespace (unshare) over a small tmpfs; skipped with the
    reason where the machine cannot mount one."""

    def in_mount(self, options, *args):
        """Runs lucidq ARGS with self.out a tmpfs mounted with `options`; returns (exit status,
        stderr, the mount's listing)."""
        script = ('mount -t tmpfs -o "$1" lucidq-test "$2" || exit 99; shift 2; "$@"; rc=$?; '
                  'ls -A "$OUT" >&2; exit $rc')
        namespace = ["unshare", "--mount"] if os.geteuid() == 0 else \
            ["unshare", "--user", "--map-root-user", "--mount"]
        try:
            done = subprocess.run([*namespace, "sh", "-c", script, "sh", options, self.out,
                                   LUCIDQ, *args], cwd=self.dir, capture_output=True, text=True,
                                  errors="replace", timeout=60, env={**os.environ, "OUT": self.out})
        except FileNotFoundError:
            self.skipTest("no unshare(1) on this machine")
        if done.returncode == 99 or "unshare:" in done.stderr:
            self.skipTest(f"cannot mount a tmpfs here: {done.stderr.strip()[:200]}")
        lines = done.stderr.splitlines()
        error = [line for line in lines if line.startswith("lucidq:")]
        return done.returncode, error, [line for line in lines if not line.startswith("lucidq:")]

    def test_a_full_file_system(self):
        write_big_input(self.path("in.safetensors"), tensors=4)  # 16 MiB in, 4 MiB out
        target = os.path.join(self.out, "q.safetensors")
        code, error, left = self.in_mount("size=1m", "quantize", "in.safetensors", "-o", target)
        self.assertEqual(code, 1, error)
        self.assertEqual(len(error), 1, error)
        self.assertIn(f"lucidq: error: {target}: cannot write to the temporary file", error[0])
        self.assertIn("No space left on device", error[0])
        self.assertEqual(left, [])

    def test_a_read_only_folder(self):
        write_big_input(self.path("in.safetensors"), tensors=1)
        target = os.path.join(self.out, "q.safetensors")
        code, error, left = self.in_mount("ro", "quantize", "in.safetensors", "-o", target)
        self.assertEqual(code, 1, error)
        self.assertEqual(error, [f"lucidq: error: {target}: cannot create a temporary file in "
                                 f"{self.out} (Read-only file system)"])
        self.assertEqual(left, [])


class HostileInput(CliCase):
    """Inputs that used to hang, crash or blame the output: one line naming the input."""

    def assert_refused(self, args, message, output_name=None):
        done = self.lucidq(*args, timeout=20)
        self.assertEqual(done.returncode, 1, done.stderr[:2000])
        self.assertIn(message, done.stderr[:2000])
        self.assertLess(len(done.stderr), 600, done.stderr[:2000])
        self.assertEqual(os.listdir(self.out), [])

    def test_a_fifo_is_refused_at_once_by_every_command(self):
        header = b'{"w":{"dtype":"F32","shape":[4,32],"data_offsets":[0,512]}}'
        with open(self.path("small.safetensors"), "wb") as f:
            f.write(raw_safetensors(header + b" " * (-len(header) % 8), b"\0" * 512))
        for name in ("x.safetensors", "x.gguf", "x"):
            fifo = self.path(name)
            os.mkfifo(fifo)
            refusal = f"lucidq: error: {fifo}: is not a regular file (it is a FIFO; expected"
            self.assert_refused(["inspect", fifo], refusal)
            if not name.endswith(".gguf"):  # (.gguf input and .safetensors output: refused first)
                self.assert_refused(["quantize", fifo, "-o", "out/q.safetensors"], refusal)
            self.assert_refused(["quantize", fifo, "-o", "out/q.gguf"], refusal)
            self.assert_refused(["dequantize", fifo, "-o", "out/d.safetensors"], refusal)
            self.assert_refused(["plot", fifo, "--tensor", "w", "-o", "out/p.png"], refusal)
            self.assert_refused(["quantize", "small.safetensors", "-o", "out/q.safetensors",
                                 "--method", "weighted-rtn", "--dtype", "qint4", "--group-size",
                                 "32", "--calibration", fifo], refusal)
            os.unlink(fifo)

    def test_deep_nesting_gives_one_short_line(self):
        for level in (100_000, 1_000_000):
            for header in (b'{"w":' + b"[" * level + b"]" * level + b"}",
                           b"[" * level + b"]" * level):
                with open(self.path("deep.safetensors"), "wb") as f:
                    f.write(raw_safetensors(header))
                message = "deep.safetensors: header nests arrays or objects more than 127 levels"
                self.assert_refused(["inspect", "deep.safetensors"], message)
                self.assert_refused(["quantize", "deep.safetensors", "-o", "out/q.safetensors"],
                                    message)

    def test_nul_padding_and_a_byte_order_mark_are_refused(self):
        header = b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
        nul = f"header holds a NUL byte at header offset {len(header)}"
        for text, message in ((header + b"\0" * 8, nul),
                              (b"\xef\xbb\xbf" + header, "header starts with a UTF-8 byte-order")):
            with open(self.path("pad.safetensors"), "wb") as f:
                f.write(raw_safetensors(text, b"\0" * 8))
            self.assert_refused(["inspect", "pad.safetensors"], "pad.safetensors: " + message)
            self.assert_refused(["quantize", "pad.safetensors", "-o", "out/q.safetensors"],
                                "pad.safetensors: " + message)

    def test_a_gguf_tensor_name_that_is_not_utf8_names_the_input_and_tensor(self):
        with open(self.path("bad.gguf"), "wb") as f:
            f.write(gguf_bytes(b"blk.\xff.weight"))
        message = ('bad.gguf: tensor "blk.\ufffd.weight": name is not valid UTF-8 (byte 0xFF at '
                   "offset 4")
        self.assert_refused(["quantize", "bad.gguf", "-o", "out/q.gguf", "--type", "Q8_0"],
                            message)
        self.assert_refused(["dequantize", "bad.gguf", "-o", "out/d.safetensors"], message)
        self.assert_refused(["inspect", "bad.gguf"], message)


def main():
    global LUCIDQ
    args = sys.argv[1:]
    if len(args) < 2 or args[0] != "--lucidq":
        sys.exit("usage: test_faults_cli.py --lucidq PATH [unittest arguments]")
    LUCIDQ = os.path.abspath(args[1])
    unittest.main(argv=[sys.argv[0], *args[2:]], verbosity=2)


if __name__ == "__main__":
    main()
