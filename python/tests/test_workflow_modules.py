"""Static quantized modules against torch.ao 1.13 and against exact references.

Each case builds one float module between torch.ao's QuantStub and DeQuantStub, prepares,
calibrates and converts it with torch.ao and with lucidq (same qconfig, same batches), then
feeds both converted modules the same input codes (torch's QuantStub output) and checks:
the output grids are equal, the output codes are within 1 of torch's, and, where lucidq's
arithmetic is exact (integer sums, tables), the codes equal a float64 reference written
here from the documented formula (0 mismatches).
"""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the model workflow needs torch (python3-torch)")
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch.ao.nn.intrinsic as nni  # noqa: E402
import torch.ao.nn.quantized as nnq  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402
from torch.ao.quantization.quantization_mappings import (  # noqa: E402
    get_default_qconfig_propagation_list, get_default_static_quant_module_mappings,
)

import lucidq  # noqa: E402
from qhelpers import engine_is_exact  # noqa: E402
from lucidq.workflow import quantized as lq  # noqa: E402

MINMAX = tq.QConfig(activation=tq.MinMaxObserver.with_args(dtype=torch.quint8),
                    weight=tq.default_weight_observer)
PER_CHANNEL = tq.QConfig(activation=tq.MinMaxObserver.with_args(dtype=torch.quint8),
                         weight=tq.default_per_channel_weight_observer)
FIXED_0_TO_1 = tq.QConfig(activation=tq.default_fixed_qparams_range_0to1_observer,
                          weight=tq.default_weight_observer)


@pytest.fixture(params=["qnnpack", "onednn"])
def engine(request):
    if request.param not in torch.backends.quantized.supported_engines:
        pytest.skip(f"torch was built without the {request.param} engine")
    if not engine_is_exact(request.param):
        pytest.skip(f"torch's {request.param} engine saturates u8 x s8 products on this CPU "
                    "(no VNNI), so its codes are not a reference here")
    before = torch.backends.quantized.engine
    torch.backends.quantized.engine = request.param
    yield request.param
    torch.backends.quantized.engine = before


def converted_pair(seed, module, shape, qconfig=MINMAX, with_torch=True):
    """(torch's converted module, lucidq's, the input codes torch's QuantStub gives);
    with_torch=False: (None, lucidq's, the input codes lucidq's QuantStub gives)."""
    torch.manual_seed(seed)
    model = nn.Sequential(tq.QuantStub(), module, tq.DeQuantStub()).eval()
    model.qconfig = qconfig
    calibration = [torch.randn(shape) * 2 + 0.5 for _ in range(3)]
    mapping = {**get_default_static_quant_module_mappings(), nn.Softmax: nnq.Softmax}
    allow = get_default_qconfig_propagation_list() | {nn.Softmax}
    theirs = tq.prepare(copy.deepcopy(model), allow_list=allow)
    ours = lucidq.prepare(copy.deepcopy(model))
    with torch.no_grad():
        for batch in calibration:
            theirs(batch)
            ours(batch)
    ours = lucidq.convert(ours)
    if not with_torch:
        return None, ours[1], ours[0](torch.randn(shape) * 2 + 0.5)
    theirs = tq.convert(theirs, mapping=mapping)
    x = theirs[0](torch.randn(shape) * 2 + 0.5)
    return theirs[1], ours[1], x


def compare(theirs, ours, x, reference=None):
    """Output codes of both modules on x: grids equal, |ours − torch| ≤ 1, ours == reference
    (theirs None: the reference only). Returns (max difference to torch, mismatches against
    the reference); None for a check not made."""
    with torch.no_grad():
        o = ours(x)
    o_codes = o.int_repr().numpy().astype(np.int64)
    diff = mismatches = None
    if theirs is not None:
        with torch.no_grad():
            t = theirs(x)
        assert o.is_quantized and o.dtype == t.dtype and o.shape == t.shape
        assert o.q_scale() == pytest.approx(t.q_scale(), rel=1e-6)
        assert o.q_zero_point() == t.q_zero_point()
        diff = int(np.abs(t.int_repr().numpy().astype(np.int64) - o_codes).max())
    if reference is not None:
        expected = reference(x, o.q_scale(), o.q_zero_point())
        mismatches = int((expected != o_codes).sum())
    print(f"{type(ours).__name__}: max |lucidq - torch| = {diff} over {o_codes.size} codes, "
          f"mismatches vs reference = {mismatches}")
    assert diff is None or diff <= 1
    assert mismatches in (None, 0)
    return diff, mismatches


def _input(x):
    """float64 (code − zero point) and the input scale as float32."""
    codes = x.int_repr().numpy().astype(np.float64) - x.q_zero_point()
    return codes, np.float64(np.float32(x.q_scale()))


def _quantize(y, scale, zero_point, low=0):
    return np.clip(np.rint(y / scale) + zero_point, low, 255).astype(np.int64)


def _requantize(acc, in_scale, weight_scales, bias, scale, zero_point, relu):
    """The documented requantization of exact integer sums [B, C, ...]."""
    shape = (1, -1) + (1,) * (acc.ndim - 2)
    m = in_scale * np.float64(weight_scales) / np.float64(np.float32(scale))
    y = acc * np.broadcast_to(m, (acc.shape[1],)).reshape(shape)
    if bias is not None:
        y = y + (np.float64(bias) / np.float64(np.float32(scale))).reshape(shape)
    low = zero_point if relu else 0
    return np.clip(np.rint(y) + zero_point, low, 255).astype(np.int64)


def _conv_of(module):
    return module[0] if isinstance(module, nn.Sequential) else module


def weight_codes(conv, qconfig):
    """The int8 weight codes (float64) and float32 scales (float64) that torch's weight observer
    and quantize_per_tensor / quantize_per_channel give the float conv's weight."""
    observer = qconfig.weight()
    w = conv.weight.detach()
    observer(w)
    scales, zero_points = observer.calculate_qparams()
    if observer.qscheme in (torch.per_channel_affine, torch.per_channel_symmetric):
        q = torch.quantize_per_channel(w, scales, zero_points, observer.ch_axis, torch.qint8)
    else:
        q = torch.quantize_per_tensor(w, float(scales), int(zero_points), torch.qint8)
    return (q.int_repr().numpy().astype(np.float64),
            scales.numpy().astype(np.float32).astype(np.float64))


def conv_reference(module, qconfig, relu, transpose=False):
    """The exact integer convolution (float64 conv of codes, exact below 2**53), requantized."""
    conv = _conv_of(module)
    weight, scales = weight_codes(conv, qconfig)
    bias = None if conv.bias is None else conv.bias.detach().numpy()

    def reference(x, scale, zero_point):
        codes, in_scale = _input(x)
        dims = codes.ndim - 2
        args = dict(stride=conv.stride, padding=conv.padding, dilation=conv.dilation,
                    groups=conv.groups)
        xs, ws = torch.from_numpy(codes), torch.from_numpy(weight)
        if transpose:
            op = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[dims - 1]
            acc = op(xs, ws, output_padding=conv.output_padding, **args)
        else:
            acc = (F.conv1d, F.conv2d, F.conv3d)[dims - 1](xs, ws, **args)
        return _requantize(acc.numpy(), in_scale, scales, bias, scale, zero_point, relu)

    return reference


CONVS = {
    "Conv3d": (lambda: nn.Conv3d(4, 6, (3, 2, 3), stride=(2, 1, 1), padding=(1, 0, 2)),
               (2, 4, 5, 6, 7), False),
    "Conv3d-dilated-groups": (lambda: nn.Conv3d(4, 6, 3, padding=2, dilation=2, groups=2),
                              (1, 4, 5, 5, 6), False),
    "Conv3d-only-depth-padding": (lambda: nn.Conv3d(2, 3, (1, 3, 3), stride=2, padding=1),
                                  (2, 2, 1, 5, 5), False),
    "ConvReLU3d": (lambda: nni.ConvReLU3d(nn.Conv3d(3, 5, 3, padding=1), nn.ReLU()),
                   (2, 3, 4, 5, 5), True),
    "ConvReLU1d": (lambda: nni.ConvReLU1d(nn.Conv1d(3, 8, 3, stride=2, padding=1), nn.ReLU()),
                   (2, 3, 17), True),
}


@pytest.mark.parametrize("case", sorted(CONVS))
@pytest.mark.parametrize("qconfig", [MINMAX, PER_CHANNEL], ids=["per_tensor", "per_channel"])
def test_convolutions(seed, engine, case, qconfig):
    build, shape, relu = CONVS[case]
    module = build()
    theirs, ours, x = converted_pair(seed, module, shape, qconfig)
    codes = weight_codes(_conv_of(module), qconfig)[0]
    np.testing.assert_array_equal(ours.weight_codes().reshape(codes.shape), codes)
    compare(theirs, ours, x, conv_reference(module, qconfig, relu))


def test_conv3d_same_padding(seed):
    # torch.ao 1.13 cannot prepack padding="same"; the exact reference can
    for conv in (nn.Conv3d(2, 4, 3, padding="same", dilation=(2, 1, 1)),
                 nn.Conv3d(2, 4, (2, 3, 2), padding="same")):  # extra padding at the back
        _, ours, x = converted_pair(seed, conv, (1, 2, 5, 6, 6), PER_CHANNEL, with_torch=False)
        assert ours(x).shape == (1, 4, 5, 6, 6)
        compare(None, ours, x, conv_reference(conv, PER_CHANNEL, relu=False))


TRANSPOSED = {
    "ConvTranspose1d": (lambda: nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1), (2, 4, 9)),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0),
                                                   groups=2, dilation=(1, 2)), (2, 4, 5, 6)),
    "ConvTranspose2d-output-padding": (
        lambda: nn.ConvTranspose2d(3, 5, 3, stride=2, padding=1, output_padding=1),
        (2, 3, 4, 5)),
    "ConvTranspose3d": (lambda: nn.ConvTranspose3d(3, 4, 2, stride=(2, 1, 2), padding=(0, 1, 0)),
                        (1, 3, 3, 4, 3)),
}
TORCH_LACKS = {  # (engine, case) torch.ao 1.13 cannot run
    ("qnnpack", "ConvTranspose3d"): "qnnpack has no 3-d transposed convolution",
    ("onednn", "ConvTranspose2d-output-padding"): "onednn supports only zero output_padding",
}


@pytest.mark.parametrize("case", sorted(TRANSPOSED))
def test_transposed_convolutions(seed, engine, case):
    build, shape = TRANSPOSED[case]
    if (engine, case) in TORCH_LACKS:
        pytest.skip(f"torch's {TORCH_LACKS[engine, case]}")
    module = build()
    theirs, ours, x = converted_pair(seed, module, shape)
    compare(theirs, ours, x, conv_reference(module, MINMAX, relu=False, transpose=True))


def test_transposed_per_channel_weights_are_per_output_channel(seed):
    torch.manual_seed(seed)
    model = nn.Sequential(tq.QuantStub(), nn.ConvTranspose2d(3, 4, 3, groups=1),
                          tq.DeQuantStub()).eval()
    model.qconfig = PER_CHANNEL
    prepared = lucidq.prepare(model)
    prepared(torch.randn(2, 3, 5, 5))
    converted = lucidq.convert(prepared)[1]
    assert converted.weight_scales.shape == (4,)  # one per output channel
    x = torch.quantize_per_tensor(torch.randn(2, 3, 5, 5), 0.05, 128, torch.quint8)
    # torch's per-channel observer and quantizer on the weight as [C_out, C_in, KH, KW]
    observer = tq.default_per_channel_weight_observer()
    weight = model[1].weight.detach().transpose(0, 1).contiguous()
    observer(weight)
    scales, zero_points = observer.calculate_qparams()
    codes = torch.quantize_per_channel(weight, scales, zero_points, 0, torch.qint8).int_repr()
    np.testing.assert_array_equal(converted.weight_scales, scales.numpy().astype(np.float32))
    codes = codes.transpose(0, 1).numpy().astype(np.float64)
    acc = F.conv_transpose2d(torch.from_numpy(_input(x)[0]), torch.from_numpy(codes)).numpy()
    out = converted(x)
    expected = _requantize(acc, _input(x)[1], scales.numpy().astype(np.float32).astype(np.float64),
                           model[1].bias.detach().numpy(), out.q_scale(), out.q_zero_point(),
                           relu=False)
    mismatches = int((expected != out.int_repr().numpy()).sum())
    print(f"per-channel ConvTranspose2d: mismatches vs reference = {mismatches}")
    assert mismatches == 0


def batch_norm(module, relu):
    bn = module[0] if isinstance(module, nn.Sequential) else module
    with torch.no_grad():
        bn.weight.uniform_(0.5, 2.0)
        bn.bias.uniform_(-1, 1)
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 3.0)
    gamma, beta, mean, var = (np.float64(t.detach().numpy()) for t in (
        bn.weight, bn.bias, bn.running_mean, bn.running_var))

    def reference(x, scale, zero_point):
        codes, in_scale = _input(x)
        shape = (1, -1) + (1,) * (codes.ndim - 2)
        k = gamma / np.sqrt(var + bn.eps)
        y = k.reshape(shape) * (in_scale * codes - mean.reshape(shape)) + beta.reshape(shape)
        return _quantize(y, np.float64(np.float32(scale)), zero_point,
                         zero_point if relu else 0)

    return module, reference


def prelu(module, slopes):
    with torch.no_grad():
        module.weight.copy_(slopes(module.weight.shape))
    a = np.float64(module.weight.detach().numpy())

    def reference(x, scale, zero_point):
        codes, in_scale = _input(x)
        v = in_scale * codes
        per_channel = a.reshape((1, -1) + (1,) * (codes.ndim - 2)) if a.size > 1 else a
        return _quantize(np.where(v >= 0, v, per_channel * v), np.float64(np.float32(scale)),
                         zero_point)

    return module, reference


TABLES = {
    "BatchNorm2d": (lambda: batch_norm(nn.BatchNorm2d(5), False), (3, 5, 6, 7)),
    "BatchNorm3d": (lambda: batch_norm(nn.BatchNorm3d(4), False), (2, 4, 3, 5, 6)),
    "BNReLU2d": (lambda: batch_norm(nni.BNReLU2d(nn.BatchNorm2d(5), nn.ReLU()), True),
                 (3, 5, 6, 7)),
    "BNReLU3d": (lambda: batch_norm(nni.BNReLU3d(nn.BatchNorm3d(4), nn.ReLU()), True),
                 (2, 4, 3, 5, 6)),
}


@pytest.mark.parametrize("case", sorted(TABLES))
def test_channel_tables(seed, engine, case):
    build, shape = TABLES[case]
    torch.manual_seed(seed)
    module, reference = build()
    theirs, ours, x = converted_pair(seed, module, shape)
    compare(theirs, ours, x, reference)


def test_prelu_slopes_exact(seed):
    # torch.ao 1.13's PReLU.from_float never runs its weight observer, so it quantizes the
    # slopes with scale 1 onto quint8 (0, 1, 2, ...): compared with torch where that is
    # lossless (integer slopes), against the exact reference everywhere.
    torch.manual_seed(seed)
    for channels, slopes in [(6, lambda shape: torch.rand(shape) - 0.5),
                             (1, lambda shape: torch.full(shape, -0.3))]:
        module, reference = prelu(nn.PReLU(channels), slopes)
        _, ours, x = converted_pair(seed, module, (4, 6, 9), with_torch=False)
        compare(None, ours, x, reference)
    for channels in (6, 1):
        module, reference = prelu(nn.PReLU(channels),
                                  lambda shape: torch.randint(0, 3, shape).float())
        theirs, ours, x = converted_pair(seed, module, (4, 6, 9))
        compare(theirs, ours, x, reference)


FLOAT_RULE = {
    "LayerNorm": (lambda: nn.LayerNorm([6, 7]), (3, 5, 6, 7), MINMAX),
    "GroupNorm": (lambda: nn.GroupNorm(2, 6), (3, 6, 5, 4), MINMAX),
    "InstanceNorm1d": (lambda: nn.InstanceNorm1d(5, affine=True), (3, 5, 11), MINMAX),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(5, affine=True), (3, 5, 6, 7), MINMAX),
    "InstanceNorm3d": (lambda: nn.InstanceNorm3d(4), (2, 4, 3, 5, 6), MINMAX),
    "Softmax": (lambda: nn.Softmax(dim=1), (4, 10, 3), FIXED_0_TO_1),
    "Softmax-last": (lambda: nn.Softmax(dim=-1), (4, 3, 10), FIXED_0_TO_1),
}


def _randomize(module):
    for p in module.parameters():
        with torch.no_grad():
            p.uniform_(-1, 2)
    return module


@pytest.mark.parametrize("case", sorted(FLOAT_RULE))
def test_float_rule_modules(seed, engine, case):
    build, shape, qconfig = FLOAT_RULE[case]
    torch.manual_seed(seed)
    theirs, ours, x = converted_pair(seed, _randomize(build()), shape, qconfig)
    if case.startswith("Softmax"):
        assert (ours.scale, ours.zero_point) == (1.0 / 256.0, 0)
    compare(theirs, ours, x)
    floats = x.dequantize()  # a part of the model left float runs the float op
    torch.manual_seed(seed)
    build_float = _randomize(build()).eval()
    torch.testing.assert_close(ours(floats), build_float(floats))


def test_dropout_is_the_identity(seed):
    theirs, ours, x = converted_pair(seed, nn.Dropout(0.3), (2, 3, 4))
    assert isinstance(ours, lq.Dropout)
    assert ours(x) is x


def test_fuse_modules_builds_the_new_fused_types(seed):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Conv3d(2, 4, 3), nn.BatchNorm3d(4), nn.ReLU(), nn.BatchNorm3d(4),
                          nn.ReLU(), nn.Conv1d(2, 2, 1), nn.ReLU()).eval()
    fused = lucidq.fuse_modules(model, [["0", "1", "2"], ["3", "4"], ["5", "6"]])
    kinds = [type(m).__name__ for m in fused]
    assert kinds[:1] + kinds[3:4] + kinds[5:6] == ["ConvReLU3d", "BNReLU3d", "ConvReLU1d"]
    x = torch.randn(1, 2, 5, 5, 5)
    torch.testing.assert_close(fused[:5](x), model[:5](x), rtol=1e-4, atol=1e-5)


def test_wrong_input_names_the_module(seed):
    theirs, ours, x = converted_pair(seed, nn.Conv3d(4, 6, 3), (1, 4, 5, 5, 5))
    bad = torch.quantize_per_tensor(torch.randn(1, 3, 5, 5, 5), 0.1, 128, torch.quint8)
    with pytest.raises(lucidq.Error, match=r"input has shape \(1, 3, 5, 5, 5\).*in_channels = 4"):
        ours(bad)
    with pytest.raises(lucidq.Error, match="expected quantized activations"):
        ours(torch.randn(1, 4, 5, 5, 5))


class Mixed(nn.Module):
    """One model through every new family: transposed conv, BN+ReLU, Dropout, Conv3d,
    InstanceNorm, PReLU, LayerNorm, Softmax."""

    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.up = nn.ConvTranspose2d(3, 4, 2, stride=2)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.drop = nn.Dropout(0.2)
        self.conv3d = nn.Conv3d(1, 2, 3, padding=1)
        self.norm = nn.InstanceNorm3d(2, affine=True)
        self.prelu = nn.PReLU(2)
        self.ln = nn.LayerNorm(12)
        self.softmax = nn.Softmax(dim=-1)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.drop(self.relu(self.bn(self.up(self.quant(x)))))  # [B, 4, 12, 12]
        x = self.prelu(self.norm(self.conv3d(x.unsqueeze(1))))  # [B, 2, 4, 12, 12]
        return self.dequant(self.softmax(self.ln(x)))


def _sqnr(reference, value):
    noise = (reference - value).pow(2).sum()
    return float(10 * torch.log10(reference.pow(2).sum() / noise))


@pytest.mark.parametrize("engine", ["qnnpack"], indirect=True)
def test_mixed_model_sqnr_against_torch(seed, engine):
    """Same qconfig as torch.ao: SQNR against the float model within 1 dB of torch.ao's."""
    torch.manual_seed(seed)
    model = Mixed().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.3, 0.3)
        model.bn.running_var.uniform_(0.5, 2.0)
        model.prelu.weight.uniform_(0, 2).round_()  # torch.ao 1.13 rounds PReLU slopes
    calibration = [torch.randn(4, 3, 6, 6) for _ in range(4)]
    x = torch.randn(4, 3, 6, 6)
    fused = ["bn", "relu"]
    theirs = tq.fuse_modules(model, fused)
    theirs.qconfig = MINMAX
    theirs.softmax.qconfig = FIXED_0_TO_1
    theirs = tq.prepare(theirs, allow_list=get_default_qconfig_propagation_list() | {nn.Softmax})
    ours = lucidq.prepare(lucidq.fuse_modules(model, fused), MINMAX)
    defaults = lucidq.prepare(model)  # no qconfig: lucidq's default mapping
    with torch.no_grad():
        for batch in calibration:
            theirs(batch)
            ours(batch)
            defaults(batch)
        mapping = {**get_default_static_quant_module_mappings(), nn.Softmax: nnq.Softmax}
        theirs = tq.convert(theirs, mapping=mapping)
        ours, defaults = lucidq.convert(ours), lucidq.convert(defaults)
        assert isinstance(ours.bn, lq.BNReLU2d) and isinstance(defaults.up, lq.ConvTranspose2d)
        expected = model(x)
        sqnr = {name: _sqnr(expected, m(x)) for name, m in
                [("torch.ao", theirs), ("lucidq", ours), ("lucidq default mapping", defaults)]}
    # the default mapping (histogram observer, per-channel weights) has no torch.ao twin here
    # (torch.ao refuses per-channel transposed-conv weights): its SQNR is printed only
    print("SQNR against float (dB):", {k: round(v, 2) for k, v in sqnr.items()})
    assert sqnr["lucidq"] >= sqnr["torch.ao"] - 1.0
    assert np.isfinite(sqnr["lucidq default mapping"])


QAT_MODELS = {
    "ConvBnReLU1d": (lambda: nn.Sequential(tq.QuantStub(), nn.Conv1d(3, 4, 3, padding=1),
                                           nn.BatchNorm1d(4), nn.ReLU(), tq.DeQuantStub()),
                     [["1", "2", "3"]], (4, 3, 10)),
    "ConvBn3d": (lambda: nn.Sequential(tq.QuantStub(), nn.Conv3d(2, 3, 3, padding=1),
                                       nn.BatchNorm3d(3), tq.DeQuantStub()),
                 [["1", "2"]], (2, 2, 4, 5, 5)),
    "ConvReLU3d": (lambda: nn.Sequential(tq.QuantStub(), nn.Conv3d(2, 3, 2), nn.ReLU(),
                                         tq.DeQuantStub()), [["1", "2"]], (2, 2, 4, 5, 5)),
    "Conv3d": (lambda: nn.Sequential(tq.QuantStub(), nn.Conv3d(2, 3, 2), tq.DeQuantStub()),
               [], (2, 2, 4, 5, 5)),
}


@pytest.mark.parametrize("case", sorted(QAT_MODELS))
def test_qat_1d_3d_match_torch(seed, engine, case):
    build, groups, shape = QAT_MODELS[case]
    torch.manual_seed(seed)
    model = build().train()
    qconfig = tq.get_default_qat_qconfig(engine)
    theirs = tq.fuse_modules_qat(model, groups) if groups else copy.deepcopy(model)
    ours = lucidq.fuse_modules_qat(model, groups) if groups else copy.deepcopy(model)
    theirs.qconfig = qconfig
    theirs = tq.prepare_qat(theirs)
    ours = lucidq.prepare_qat(ours, qconfig)
    with torch.no_grad():
        for _ in range(3):
            batch = torch.randn(shape)
            torch.testing.assert_close(ours(batch), theirs(batch), rtol=1e-5, atol=1e-6)
    assert type(ours[1]).__name__ == type(theirs[1]).__name__
    theirs, ours = tq.convert(theirs.eval()), lucidq.convert(ours.eval())
    x = theirs[0](torch.randn(shape))
    compare(theirs[1], ours[1], x)


@pytest.mark.parametrize("fuse", [True, False], ids=["ConvReLU1d", "Conv1d"])
def test_qat_conv1d_is_qat_conv2d_with_height_1(seed, fuse):
    # torch.ao 1.13 has no QAT Conv1d / ConvReLU1d to compare with; lucidq's QAT Conv2d path
    # (compared with torch.ao elsewhere) on [B, C, 1, L] must give the same numbers
    torch.manual_seed(seed)
    conv1d = nn.Conv1d(3, 5, 3, padding=1)
    conv2d = nn.Conv2d(3, 5, (1, 3), padding=(0, 1))
    with torch.no_grad():
        conv2d.weight.copy_(conv1d.weight[:, :, None, :])
        conv2d.bias.copy_(conv1d.bias)
    prepared = []
    for conv in (conv1d, conv2d):
        model = nn.Sequential(tq.QuantStub(), conv, nn.ReLU(), tq.DeQuantStub()).train()
        model = lucidq.fuse_modules_qat(model, ["1", "2"]) if fuse else model
        prepared.append(lucidq.prepare_qat(model, tq.get_default_qat_qconfig("qnnpack")))
    kind = lucidq.workflow.qat.ConvReLU1d if fuse else lucidq.workflow.qat.Conv1d
    assert type(prepared[0][1]) is kind
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(8, 3, 12)
            torch.testing.assert_close(prepared[0](x), prepared[1](x[:, :, None, :])[:, :, 0, :])
        one, two = (lucidq.convert(m.eval()) for m in prepared)
        assert type(one[1]) is (lq.ConvReLU1d if fuse else lq.Conv1d)
        x = one[0](torch.randn(8, 3, 12))
        y1, y2 = one[1](x), two[1](x[:, :, None, :])
    assert (y1.q_scale(), y1.q_zero_point()) == (y2.q_scale(), y2.q_zero_point())
    mismatches = int((y1.int_repr() != y2.int_repr()[:, :, 0, :]).sum())
    print(f"QAT {kind.__name__} against QAT Conv2d on H = 1: {mismatches} code mismatches")
    assert mismatches == 0


def _lucidq_converted(module, shape, qconfig, seed):
    torch.manual_seed(seed)
    model = nn.Sequential(tq.QuantStub(), copy.deepcopy(module), tq.DeQuantStub()).eval()
    prepared = lucidq.prepare(model, qconfig)
    with torch.no_grad():
        for _ in range(2):
            prepared(torch.randn(shape) * 2 + 0.5)
    return lucidq.convert(prepared)


STATE_CASES = {
    **{name: (build, shape) for name, (build, shape, _) in CONVS.items()},
    **TRANSPOSED,
    **{name: (lambda build=build: build()[0], shape) for name, (build, shape) in TABLES.items()},
    "PReLU": (lambda: nn.PReLU(6), (4, 6, 9)),
    **{name: (lambda build=build: _randomize(build()), shape)
       for name, (build, shape, _) in FLOAT_RULE.items()},
    "Dropout": (lambda: nn.Dropout(0.25), (2, 3, 4)),
}


@pytest.mark.parametrize("case", sorted(STATE_CASES))
def test_state_round_trips(seed, tmp_path, case):
    build, shape = STATE_CASES[case]
    torch.manual_seed(seed)
    module = build()
    qconfig = FIXED_0_TO_1 if case.startswith("Softmax") else PER_CHANNEL
    converted = _lucidq_converted(module, shape, qconfig, seed)
    other = _lucidq_converted(module, shape, qconfig, seed + 1)  # other grids
    x = torch.randn(shape) * 2 + 0.5
    with torch.no_grad():
        expected = converted(x)
        other.load_state_dict(converted.state_dict())
        assert torch.equal(other(x), expected)
        lucidq.save_quantized(converted, tmp_path / "m.safetensors")
        fresh = nn.Sequential(tq.QuantStub(), build(), tq.DeQuantStub()).eval()
        lucidq.load_quantized(tmp_path / "m.safetensors", fresh)
        assert type(fresh[1]) is type(converted[1])
        assert torch.equal(fresh(x), expected)


def test_load_quantized_refuses_another_transposed_weight_shape(tmp_path, seed):
    converted = _lucidq_converted(nn.ConvTranspose2d(4, 6, 3, groups=2), (1, 4, 5, 5),
                                  PER_CHANNEL, seed)
    lucidq.save_quantized(converted, tmp_path / "m.safetensors")
    fresh = nn.Sequential(tq.QuantStub(), nn.ConvTranspose2d(4, 8, 3, groups=2),
                          tq.DeQuantStub())
    with pytest.raises(lucidq.Error, match=r"module '1': weight has shape \[4, 3, 3, 3\] in the "
                                           r"checkpoint but \[4, 4, 3, 3\] in the model"):
        lucidq.load_quantized(tmp_path / "m.safetensors", fresh)
