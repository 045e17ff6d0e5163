"""Hostile files and faults through the Python readers: FIFOs, deep JSON nesting (also on a
256 KiB thread stack), the safetensors header rule, inputs that shrink while they are read,
GGUF tensor names that are not UTF-8, and Ctrl-C (a real SIGINT) during a job."""

import os
import signal
import struct
import threading
import time

import numpy as np
import pytest

import lucidq as Q
import lucidq.gguf


def _raw_safetensors(header, data=b""):
    return struct.pack("<Q", len(header)) + header + data


def _float_checkpoint(path, rng, tensors=6, rows=256, cols=1024):
    Q.save_safetensors(path, {f"layer{t}.weight": rng.normal(size=(rows, cols)).astype(np.float32)
                              for t in range(tensors)}, overwrite=True)


def _fails_fast(call, *args, **kwargs):
    """Runs call(*args) on a thread; fails if it has not returned within 10 s (a reader blocked
    on a FIFO is then released by opening the FIFO's writing end). Returns the exception."""
    outcome = {}

    def run():
        try:
            call(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            outcome["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        for arg in args:
            if isinstance(arg, (str, os.PathLike)) and os.path.exists(arg):
                try:
                    os.close(os.open(arg, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass
        thread.join()
        pytest.fail(f"{call.__name__} blocked for 10 s")
    return outcome.get("error")


def test_a_fifo_is_refused_at_once_by_every_reader(tmp_path):
    for name in ("x.safetensors", "x.gguf", "x"):
        fifo = tmp_path / name
        os.mkfifo(fifo)
        for call, args in ((Q.load_safetensors, (fifo,)), (Q.inspect_checkpoint, (fifo,)),
                           (Q.quantize_checkpoint, (fifo, tmp_path / "q.safetensors")),
                           (Q.dequantize_checkpoint, (fifo, tmp_path / "d.safetensors")),
                           (lucidq.gguf.read, (fifo,)),
                           (lucidq.gguf.quantize_file, (fifo, tmp_path / "q.gguf")),
                           (lucidq.gguf.dequantize_file, (fifo, tmp_path / "d.safetensors"))):
            error = _fails_fast(call, *args)
            assert isinstance(error, Q.Error), (call.__name__, error)
            assert f"{fifo}: is not a regular file (it is a FIFO; expected" in str(error)
        fifo.unlink()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("levels", [100_000, 1_000_000])
def test_deep_nesting_is_one_short_error_also_on_a_small_stack(tmp_path, levels):
    path = tmp_path / "deep.safetensors"
    path.write_bytes(_raw_safetensors(b'{"w":' + b"[" * levels + b"]" * levels + b"}"))
    errors = []

    def read():
        try:
            Q.load_safetensors(path)
        except Q.Error as e:
            errors.append(str(e))

    previous = threading.stack_size(256 * 1024)
    try:
        thread = threading.Thread(target=read)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous)
    assert len(errors) == 1
    assert "deep.safetensors: header nests arrays or objects more than 127 levels" in errors[0]
    assert len(errors[0]) < 300


def test_header_rule_nul_padding_and_byte_order_mark(tmp_path):
    header = b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
    data = struct.pack("<2f", 1.5, -2.0)
    good = tmp_path / "good.safetensors"
    good.write_bytes(_raw_safetensors(b"\n " + header + b" \t\r\n", data))
    np.testing.assert_array_equal(Q.load_safetensors(good)["w"], [1.5, -2.0])
    nul = f"header holds a NUL byte at header offset {len(header)}"
    for text, message in ((header + b"\0" * 4, nul),
                          (b"\xef\xbb\xbf" + header, "header starts with a UTF-8 byte-order mark")):
        bad = tmp_path / "bad.safetensors"
        bad.write_bytes(_raw_safetensors(text, data))
        with pytest.raises(Q.Error, match=f"bad.safetensors: {message}"):
            Q.load_safetensors(bad)


def _gguf(tensor_name, metadata=()):
    """A GGUF v3 file: string metadata (key, value bytes), one F32 tensor of 32 values."""
    raw = b"GGUF" + struct.pack("<Iqq", 3, 1, len(metadata))
    for key, value in metadata:
        raw += struct.pack("<Q", len(key)) + key + struct.pack("<IQ", 8, len(value)) + value
    raw += struct.pack("<Q", len(tensor_name)) + tensor_name + struct.pack("<IqIQ", 1, 32, 0, 0)
    return raw + b"\0" * (-len(raw) % 32) + struct.pack("<32f", *([0.5] * 32))


def test_gguf_tensor_name_that_is_not_utf8_names_the_input_and_tensor(tmp_path):
    path = tmp_path / "bad.gguf"
    path.write_bytes(_gguf(b"blk.\xff.weight"))
    message = 'bad.gguf: tensor "blk.\ufffd.weight": name is not valid UTF-8'
    for call, args in ((lucidq.gguf.read, (path,)),
                       (lucidq.gguf.quantize_file, (path, tmp_path / "q.gguf")),
                       (lucidq.gguf.dequantize_file, (path, tmp_path / "d.safetensors"))):
        with pytest.raises(Q.Error, match=message):
            call(*args)
    assert os.listdir(tmp_path) == ["bad.gguf"]


def test_gguf_metadata_that_is_not_utf8_is_blamed_on_the_input_by_dequantize(tmp_path):
    path = tmp_path / "meta.gguf"
    path.write_bytes(_gguf(b"w", [(b"general.name", b"caf\xe9")]))
    assert lucidq.gguf.read(path).metadata["general.name"] == "caf\ufffd"  # replaced on read
    with pytest.raises(Q.Error, match='meta.gguf: metadata key "general.name": the string value '
                                      "is not valid UTF-8"):
        lucidq.gguf.dequantize_file(path, tmp_path / "d.safetensors")
    assert os.listdir(tmp_path) == ["meta.gguf"]


def test_an_input_that_shrinks_while_read_is_a_clean_error(tmp_path, rng):
    source = tmp_path / "in.safetensors"

    def shrink(done, *_):
        if done == 1:
            os.truncate(source, 4096)

    _float_checkpoint(source, rng)
    with pytest.raises(Q.Error, match=f"{source}: the file shrank while it was being read"):
        Q.quantize_checkpoint(source, tmp_path / "q.safetensors", progress=shrink)
    _float_checkpoint(source, rng)
    with pytest.raises(Q.Error, match="the file shrank while it was being read"):
        lucidq.gguf.quantize_file(source, tmp_path / "q.gguf", progress=shrink)
    assert os.listdir(tmp_path) == ["in.safetensors"]


def test_a_real_sigint_during_a_job_raises_keyboardinterrupt_and_leaves_nothing(tmp_path, rng):
    source = tmp_path / "in.safetensors"
    _float_checkpoint(source, rng, tensors=24)
    out = tmp_path / "out"
    out.mkdir()
    sent = []

    def interrupt_when_the_temporary_file_appears():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not sent:
            if any(name.startswith(".q.safetensors.tmp-") for name in os.listdir(out)):
                os.kill(os.getpid(), signal.SIGINT)
                sent.append(True)
            time.sleep(0.001)

    watcher = threading.Thread(target=interrupt_when_the_temporary_file_appears)
    watcher.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            Q.quantize_checkpoint(source, out / "q.safetensors", dtype="qint4", group_size=32)
    finally:
        watcher.join()
    assert sent and os.listdir(out) == []
