"""Quantized linear layers on the packed int8 GEMM: static (QuantizedLinear) and dynamic.

QuantizedLinear mirrors torch.ao.nn.quantized.Linear: 8-bit activations with
fixed (calibrated) input and output parameters, int8 weights, and an output
requantized to 8-bit codes in one integer pass. DynamicQuantizedLinear mirrors
torch.ao.nn.quantized.dynamic.Linear: float in, float out, activations
quantized on the fly (per row by default). Both are thin Python shells over
lucidq.PackedWeightsInt8, gemm_requantize and linear_dynamic; every number
comes from the C++ core.
"""

import numpy as np

from ._lucidq import (
    Error,
    HistogramObserver,
    MinMaxObserver,
    PackedWeightsInt8,
    QDtype,
    QParams,
    QuantizedTensor,
    dequantize,
    gemm_requantize,
    linear_dynamic,
    qint8,
    quint8,
    quantize,
)

__all__ = ["QuantizedLinear", "DynamicQuantizedLinear"]


def _packed(weight, per_channel, weight_qdtype, owner):
    """A PackedWeightsInt8 from float weights [N, K], a QuantizedTensor or a packed weight."""
    if isinstance(weight, PackedWeightsInt8):
        return weight
    if isinstance(weight, QuantizedTensor):
        return PackedWeightsInt8.from_quantized(weight)
    w = np.asarray(weight)
    if w.ndim != 2:
        raise Error(f"{owner}: weight has shape {w.shape} (expected [out_features, in_features])")
    return PackedWeightsInt8.quantize(w, per_channel=per_channel, qdtype=weight_qdtype)


def _bias(bias, packed, owner):
    """None, or the bias as a float32 array [out_features]."""
    if bias is None:
        return None
    b = np.asarray(bias)
    if b.dtype.kind not in "fiu":
        raise Error(f"{owner}: bias has dtype {b.dtype} (expected real numbers)")
    b = np.array(b, dtype=np.float32)  # a private copy: the layer is immutable
    if b.shape != (packed.rows,):
        raise Error(
            f"{owner}: bias has shape {b.shape} (expected [out_features] = ({packed.rows},))"
        )
    return b


def _qdtype(qdtype):
    """A QDtype from a QDtype or its name ("quint8", "qint8[-127,127]")."""
    return qdtype if isinstance(qdtype, QDtype) else QDtype(qdtype)


def _check_8bit(qdtype, what, owner):
    if qdtype.bits != 8:
        raise Error(f"{owner}: {what} = {qdtype.name} (expected an 8-bit grid: quint8 or qint8)")


def _code_dtype(qdtype):
    return np.dtype(np.int8 if qdtype.is_signed else np.uint8)


def _per_tensor(observer, what, owner):
    qparams = observer.calculate_qparams()
    if len(qparams.scale) != 1:
        raise Error(
            f"{owner}: {what} gives {len(qparams.scale)} scales (expected a per-tensor observer)"
        )
    return qparams


class _PackedInt8Linear:
    """What both int8 layers share: the packed weight [out_features, in_features] and the bias."""

    @property
    def in_features(self):
        return self._packed.columns

    @property
    def out_features(self):
        return self._packed.rows

    @property
    def weight(self):
        """The int8 weight as a QuantizedTensor [out_features, in_features]."""
        return self._packed.to_quantized()

    @property
    def packed_weight(self):
        """The PackedWeightsInt8 the GEMM reads."""
        return self._packed

    @property
    def bias(self):
        """The float32 bias [out_features] (a copy), or None."""
        return None if self._bias is None else self._bias.copy()


class QuantizedLinear(_PackedInt8Linear):
    """A statically quantized linear layer, as torch.ao.nn.quantized.Linear.

    y = dequantize(requantize((quantize(x) - z_in) @ W_int8.T, bias)) with
    fixed input parameters (input_scale, input_zero_point, input_qdtype) and
    output parameters (output_scale, output_zero_point, output_qdtype). The
    weight is symmetric int8, one scale per output channel by default. The
    bias stays float (in output units, o[n] = bias[n] / output_scale, see
    lucidq.gemm_requantize); relu=True fuses a ReLU into the output clamp.

    forward_codes(x_codes) is the integer path (8-bit codes in, 8-bit codes
    out: uint8 for quint8, int8 for qint8); calling the layer on float x
    quantizes, runs forward_codes and dequantizes. Any number of leading axes.

    >>> import lucidq as Q, numpy as np
    >>> w = np.array([[0.5, -1.0, 0.25], [1.0, 0.5, -0.5]], np.float32)
    >>> layer = Q.QuantizedLinear.from_float(
    ...     w, [0.1, -0.2], input_scale=0.02, input_zero_point=128,
    ...     output_scale=0.05, output_zero_point=128)
    >>> layer  # doctest: +NORMALIZE_WHITESPACE
    QuantizedLinear(in_features=3, out_features=2, input=(0.02, 128, quint8),
                    output=(0.05, 128, quint8), per_channel=True)
    >>> x = np.array([[1.0, 0.5, -1.0]], np.float32)
    >>> layer(x).astype(np.float64).round(4).tolist()
    [[-0.15, 1.55]]
    >>> layer.forward_codes(np.array([[178, 153, 78]], np.uint8)).tolist()
    [[125, 159]]

    Calibration from sample inputs (MinMaxObserver or HistogramObserver on the
    input and on the float layer's output) picks the parameters:

    >>> rng = np.random.default_rng(0)
    >>> samples = [rng.normal(size=(16, 3)).astype(np.float32) for _ in range(4)]
    >>> calibrated = Q.QuantizedLinear.calibrate(w, None, samples)
    >>> calibrated.input_qparams.qdtype.name, calibrated.output_qparams.qdtype.name
    ('quint8', 'quint8')
    """

    def __init__(
        self,
        weight,
        bias=None,
        *,
        input_scale,
        input_zero_point,
        output_scale,
        output_zero_point,
        input_qdtype=quint8,
        output_qdtype=quint8,
        relu=False,
    ):
        """weight: a PackedWeightsInt8 (or a QuantizedTensor [N, K] with qint8 codes and zero
        points 0); bias: None or N floats. Parameters are validated here."""
        owner = type(self).__name__
        self._packed = _packed(weight, True, qint8, owner)
        self._bias = _bias(bias, self._packed, owner)
        input_qdtype = _qdtype(input_qdtype)  # accepts names too
        output_qdtype = _qdtype(output_qdtype)
        _check_8bit(input_qdtype, "input_qdtype", owner)
        _check_8bit(output_qdtype, "output_qdtype", owner)
        self._input_qparams = QParams.per_tensor(input_scale, input_zero_point, input_qdtype)
        self._output_qparams = QParams.per_tensor(output_scale, output_zero_point, output_qdtype)
        self._relu = bool(relu)
        # forward_codes' arguments, read once (QParams' fields are converted on every access)
        qin, qout = self._input_qparams, self._output_qparams
        self._input_codes = _code_dtype(input_qdtype)
        self._depth, self._rows = self._packed.columns, self._packed.rows
        self._gemm_args = (float(qin.scale[0]), int(qin.zero_point[0]), float(qout.scale[0]),
                           int(qout.zero_point[0]), output_qdtype)
        # only the keywords that differ from the defaults (pybind11 parses each one by name)
        self._gemm_keywords = {}
        if self._bias is not None:
            self._gemm_keywords["bias"] = self._bias
        if self._relu:
            self._gemm_keywords["relu"] = True

    @classmethod
    def from_float(
        cls,
        weight,
        bias=None,
        *,
        input_scale,
        input_zero_point,
        output_scale,
        output_zero_point,
        per_channel=True,
        input_qdtype=quint8,
        output_qdtype=quint8,
        relu=False,
        weight_qdtype=qint8,
    ):
        """Quantizes float weights [out_features, in_features] (symmetric int8, per output
        channel unless per_channel=False; weight_qdtype may narrow the grid, e.g.
        qint8.narrow_range()) and keeps the given activation parameters."""
        packed = _packed(weight, per_channel, weight_qdtype, cls.__name__)
        return cls(
            packed,
            bias,
            input_scale=input_scale,
            input_zero_point=input_zero_point,
            output_scale=output_scale,
            output_zero_point=output_zero_point,
            input_qdtype=input_qdtype,
            output_qdtype=output_qdtype,
            relu=relu,
        )

    @classmethod
    def from_observers(
        cls,
        weight,
        bias,
        input_observer,
        output_observer,
        *,
        per_channel=True,
        relu=False,
        weight_qdtype=qint8,
    ):
        """The layer whose activation parameters are calculate_qparams() of two calibrated
        per-tensor observers (their qdtypes become input_qdtype / output_qdtype)."""
        owner = cls.__name__
        qin = _per_tensor(input_observer, "input_observer", owner)
        qout = _per_tensor(output_observer, "output_observer", owner)
        return cls.from_float(
            weight,
            bias,
            input_scale=float(qin.scale[0]),
            input_zero_point=int(qin.zero_point[0]),
            output_scale=float(qout.scale[0]),
            output_zero_point=int(qout.zero_point[0]),
            per_channel=per_channel,
            input_qdtype=qin.qdtype,
            output_qdtype=qout.qdtype,
            relu=relu,
            weight_qdtype=weight_qdtype,
        )

    @classmethod
    def calibrate(
        cls,
        weight,
        bias,
        samples,
        *,
        observer="minmax",
        per_channel=True,
        input_qdtype=quint8,
        output_qdtype=quint8,
        relu=False,
        weight_qdtype=qint8,
    ):
        """Post-training calibration: observes every sample input x [..., K] and the float
        layer's output relu?(x @ weight.T + bias) (float32) with per-tensor affine observers,
        then from_observers. samples: one array or an iterable of arrays. observer: "minmax"
        (MinMaxObserver), "histogram" (HistogramObserver) or a callable qdtype -> observer."""
        owner = cls.__name__
        w = np.asarray(weight, dtype=np.float32)
        if w.ndim != 2:
            raise Error(
                f"{owner}: weight has shape {w.shape} (expected [out_features, in_features])"
            )
        b = None if bias is None else np.asarray(bias, dtype=np.float32)
        make = _observer_factory(observer, owner)
        obs_in, obs_out = make(_qdtype(input_qdtype)), make(
            _qdtype(output_qdtype)
        )
        if isinstance(samples, np.ndarray):
            samples = [samples]
        seen = 0
        for x in samples:
            x = np.asarray(x, dtype=np.float32)
            if x.ndim < 1 or x.shape[-1] != w.shape[1]:
                raise Error(
                    f"{owner}: sample has shape {x.shape} (expected [..., K] with K = {w.shape[1]})"
                )
            y = x @ w.T
            if b is not None:
                y = y + b
            if relu:
                y = np.maximum(y, np.float32(0))
            obs_in.observe(x)
            obs_out.observe(y)
            seen += 1
        if seen == 0:
            raise Error(f"{owner}: samples is empty (expected at least one input batch)")
        return cls.from_observers(
            w,
            bias,
            obs_in,
            obs_out,
            per_channel=per_channel,
            relu=relu,
            weight_qdtype=weight_qdtype,
        )

    @property
    def relu(self):
        return self._relu

    @property
    def input_qparams(self):
        return self._input_qparams

    @property
    def output_qparams(self):
        return self._output_qparams

    @property
    def scale(self):
        """The output scale (torch's Linear.scale)."""
        return float(self._output_qparams.scale[0])

    @property
    def zero_point(self):
        """The output zero point (torch's Linear.zero_point)."""
        return int(self._output_qparams.zero_point[0])

    def forward_codes(self, x_codes):
        """8-bit input codes [..., K] (uint8 for an unsigned input_qdtype, int8 for a signed one)
        -> output codes [..., N] (uint8 / int8 by output_qdtype)."""
        codes = np.asarray(x_codes)
        if codes.dtype != self._input_codes:
            raise Error(
                f"{type(self).__name__}.forward_codes: x_codes has dtype {codes.dtype} (expected "
                f"{self._input_codes} codes of input_qdtype {self._input_qparams.qdtype.name})"
            )
        if codes.ndim < 1 or codes.shape[-1] != self._depth:
            self._check_features(codes, "x_codes", "forward_codes")
        out = gemm_requantize(
            codes.reshape(-1, self._depth),
            self._packed,
            *self._gemm_args,
            **self._gemm_keywords,
        )
        return out.reshape(codes.shape[:-1] + (self._rows,))

    def __call__(self, x):
        """Float x [..., K] -> float32 [..., N]: quantize with the input parameters,
        forward_codes, dequantize with the output parameters."""
        x = np.asarray(x)
        self._check_features(x, "x", "__call__")
        q = quantize(x, self._input_qparams)
        codes = np.asarray(q.storage).view(_code_dtype(self._input_qparams.qdtype))
        out = self.forward_codes(codes.reshape(x.shape))
        return dequantize(QuantizedTensor(out.shape, self._output_qparams, out.view(np.uint8)))

    def _check_features(self, x, what, method):
        if x.ndim < 1 or x.shape[-1] != self.in_features:
            raise Error(
                f"{type(self).__name__}.{method}: {what} has shape {x.shape} (expected [..., K] "
                f"with K = in_features = {self.in_features})"
            )

    def __repr__(self):
        qin, qout = self._input_qparams, self._output_qparams
        text = (
            f"{type(self).__name__}(in_features={self.in_features}, "
            f"out_features={self.out_features}, "
            f"input=({_number(qin.scale[0])}, {int(qin.zero_point[0])}, {qin.qdtype.name}), "
            f"output=({_number(qout.scale[0])}, {int(qout.zero_point[0])}, {qout.qdtype.name}), "
            f"per_channel={self._packed.per_channel}"
        )
        if self._bias is None:
            text += ", bias=False"
        if self._relu:
            text += ", relu=True"
        return text + ")"


class DynamicQuantizedLinear(_PackedInt8Linear):
    """A dynamically quantized linear layer, as torch.ao.nn.quantized.dynamic.Linear.

    Float x [..., K] -> float32 [..., N]: each call quantizes x with
    calculate_qparams over its own range (per row, i.e. per token, by default;
    per_row=False uses one scale for the whole x, as PyTorch), multiplies by the
    int8 weights in integers and scales back: float(acc) * (s_x * s_w[n]) + bias[n].
    See lucidq.gemm_dynamic.

    >>> import lucidq as Q, numpy as np
    >>> w = np.array([[0.5, -1.0, 0.25], [1.0, 0.5, -0.5]], np.float32)
    >>> layer = Q.DynamicQuantizedLinear.from_float(w, [0.1, -0.2])
    >>> layer  # doctest: +NORMALIZE_WHITESPACE
    DynamicQuantizedLinear(in_features=3, out_features=2, per_channel=True, per_row=True,
                           qdtype=quint8)
    >>> y = layer(np.array([[1.0, 0.5, -1.0], [0.0, 2.0, 4.0]], np.float32))
    >>> y.shape, y.dtype
    ((2, 2), dtype('float32'))
    >>> np.abs(y - [[-0.15, 1.55], [-0.9, -1.2]]).max() < 0.02
    True
    """

    def __init__(self, weight, bias=None, *, per_row=True, qdtype=quint8):
        """weight: a PackedWeightsInt8 (or a QuantizedTensor [N, K] with qint8 codes and zero
        points 0); bias: None or N floats; qdtype: quint8 or qint8 for the activations."""
        owner = type(self).__name__
        self._packed = _packed(weight, True, qint8, owner)
        self._bias = _bias(bias, self._packed, owner)
        self._per_row = bool(per_row)
        self._qdtype = _qdtype(qdtype)
        _check_8bit(self._qdtype, "qdtype", owner)

    @classmethod
    def from_float(
        cls,
        weight,
        bias=None,
        per_channel=True,
        per_row=True,
        *,
        qdtype=quint8,
        weight_qdtype=qint8,
    ):
        """Quantizes float weights [out_features, in_features] to symmetric int8 (per output
        channel unless per_channel=False)."""
        packed = _packed(weight, per_channel, weight_qdtype, cls.__name__)
        return cls(packed, bias, per_row=per_row, qdtype=qdtype)

    @property
    def per_row(self):
        return self._per_row

    @property
    def qdtype(self):
        return self._qdtype

    def __call__(self, x):
        """Float x [..., K] -> float32 [..., N]."""
        return linear_dynamic(
            x, self._packed, self._bias, per_row=self._per_row, qdtype=self._qdtype
        )

    def __repr__(self):
        text = (
            f"{type(self).__name__}(in_features={self.in_features}, "
            f"out_features={self.out_features}, per_channel={self._packed.per_channel}, "
            f"per_row={self._per_row}, qdtype={self._qdtype.name}"
        )
        if self._bias is None:
            text += ", bias=False"
        return text + ")"


def _number(value):
    """A float32 parameter printed short (0.02, not 0.019999999552965164)."""
    return np.format_float_positional(np.float32(value), trim="-")


def _observer_factory(observer, owner):
    if callable(observer):
        return observer
    if observer == "minmax":
        return lambda qdtype: MinMaxObserver(dtype=qdtype)
    if observer == "histogram":
        return lambda qdtype: HistogramObserver(dtype=qdtype)
    raise Error(
        f'{owner}: observer = {observer!r} (expected "minmax", "histogram" or a callable '
        "qdtype -> observer)"
    )
