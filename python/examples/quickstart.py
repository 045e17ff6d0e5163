"""lucidq quickstart: the "Quantization in Depth" example, then per-channel int4 weights and QAT.

Run from the repository root after building:
    PYTHONPATH=build/release/python /usr/bin/python3 python/examples/quickstart.py
"""

import numpy as np

import lucid.quantization as Q

# The notes' tensor ("Quantization in Depth").
x = np.array([[191.6, -13.5, 728.6], [92.14, 295.5, -184], [0, 684.6, 245.5]], dtype=np.float32)

# 1. A given scale and zero point: q = clamp(round(x / s) + z, -128, 127).
qp = Q.QParams.per_tensor(3.5, -70, Q.qint8)
q = Q.quantize(x, qp)
print("codes:", q.int_repr().tolist())
print("dequantized:", Q.dequantize(q).tolist())
print(f"given s=3.5 z=-70: MSE {Q.quantization_error(x, Q.dequantize(q)):.4f}")

# 2. Scale and zero point derived from the data's range (affine, qint8).
q = Q.quantize(x, Q.per_tensor_affine, Q.qint8)
s, z = q.qparams.scale[0], q.qparams.zero_point[0]
print(f"derived: scale={s:.6f} zero_point={z} MSE {Q.quantization_error(x, Q.dequantize(q)):.4f}")

# 3. Weights: per-channel symmetric int4, packed two codes per byte.
rng = np.random.default_rng(0)
channel_size = np.linspace(0.1, 2.0, 8, dtype=np.float32)[:, None]
w = rng.standard_normal((8, 64)).astype(np.float32) * channel_size
qw = Q.quantize(w, Q.per_channel_symmetric, Q.qint4, ch_axis=0)
m = Q.error_metrics(w, qw)
print(f"int4 weights: {w.nbytes} bytes -> {qw.storage.nbytes} bytes ({qw.qdtype.storage}), "
      f"{len(qw.qparams.scale)} scales, SQNR {m.sqnr_db:.1f} dB")
worst = max(Q.error_metrics_per_channel(w, qw, 0), key=lambda e: e.rmse)
print(f"worst channel RMSE {worst.rmse:.4f}")

# 4. Quantization-aware training: fake quantization and its straight-through gradient.
act = Q.QParams.per_tensor(0.05, 0, Q.quint8)  # post-ReLU activations in [0, 12.75]
y, mask = Q.fake_quantize(np.array([-1.0, 0.26, 3.0, 20.0], np.float32), act, return_mask=True)
grad = Q.fake_quantize_backward(np.ones(4, np.float32), mask)
print("fake_quantize:", y.tolist(), "gradient mask:", grad.tolist())
