"""The module swap tables: which float (or QAT, or fused) type becomes which quantized or QAT type.

A registry, so later module families plug in without touching prepare / convert:
    register_static(nn.Conv2d, quantized.Conv2d)      # for convert after prepare / prepare_qat
    register_qat(nn.Conv2d, qat.Conv2d)               # for prepare_qat
    register_dynamic(nn.LSTM, quantized.dynamic.LSTM)  # for quantize_dynamic
A target class provides from_float(observed_module) and, for static targets, a class
attribute OBSERVES_OUTPUT (default True): whether prepare puts an output observer on the
float module (False for modules that keep their input grid or have a fixed one, such as
ReLU, Sigmoid, DeQuantize), and optionally WEIGHT_ONLY (default False): quantized from its
weight alone with no observer (embeddings), so prepare counts it as quantizable. torch's own intrinsic (fused) classes map like ours.
"""

from torch import nn
import torch.ao.nn.intrinsic as _torch_fused
import torch.ao.quantization as _torch_ao

from . import fused, qat, stubs
from . import quantized as q
from .quantized import dynamic as _dynamic
from .quantized import dynamic_rnn as _dynamic_rnn
from .quantized import weight_only as _weight_only

__all__ = [
    "register_static", "register_qat", "register_dynamic", "register_weight_only",
    "static_mapping", "qat_mapping", "dynamic_mapping", "weight_only_mapping",
    "observes_output",
]

_STATIC = {}
_QAT = {}
_DYNAMIC = {}
_WEIGHT_ONLY = {}


def register_static(float_type, quantized_type):
    """convert swaps modules of exactly float_type for quantized_type.from_float(module)."""
    _STATIC[float_type] = quantized_type


def register_qat(float_type, qat_type):
    """prepare_qat swaps modules of exactly float_type for qat_type.from_float(module)."""
    _QAT[float_type] = qat_type


def register_dynamic(float_type, dynamic_type):
    _DYNAMIC[float_type] = dynamic_type


def register_weight_only(float_type, weight_only_type):
    _WEIGHT_ONLY[float_type] = weight_only_type


def static_mapping():
    """A copy of the static table {float, QAT or fused type: quantized type}."""
    return dict(_STATIC)


def qat_mapping():
    return dict(_QAT)


def dynamic_mapping():
    return dict(_DYNAMIC)


def weight_only_mapping():
    return dict(_WEIGHT_ONLY)


def observes_output(module_type, mapping=None):
    """Whether prepare observes the output of a module of this type (see the module doc)."""
    target = (mapping if mapping is not None else _STATIC).get(module_type)
    return target is not None and getattr(target, "OBSERVES_OUTPUT", True)


for _float, _quantized in [
    (stubs.QuantStub, q.Quantize),
    (stubs.DeQuantStub, q.DeQuantize),
    (_torch_ao.QuantStub, q.Quantize),
    (_torch_ao.DeQuantStub, q.DeQuantize),
    (nn.Linear, q.Linear),
    (qat.Linear, q.Linear),
    (qat.LinearBn1d, q.Linear),
    (fused.LinearReLU, q.LinearReLU),
    (_torch_fused.LinearReLU, q.LinearReLU),
    (qat.LinearReLU, q.LinearReLU),
    (nn.ReLU, q.ReLU),
    (nn.ReLU6, q.ReLU6),
    (nn.Sigmoid, q.Sigmoid),
    (nn.Hardsigmoid, q.Hardsigmoid),
    (nn.Tanh, q.Tanh),
    (nn.Hardswish, q.Hardswish),
    (nn.ELU, q.ELU),
    (nn.LeakyReLU, q.LeakyReLU),
    (nn.GELU, q.GELU),
    (nn.SiLU, q.SiLU),
    (nn.Conv1d, q.Conv1d),
    (nn.Conv2d, q.Conv2d),
    (qat.Conv2d, q.Conv2d),
    (qat.ConvBn2d, q.Conv2d),
    (fused.ConvReLU2d, q.ConvReLU2d),
    (_torch_fused.ConvReLU2d, q.ConvReLU2d),
    (qat.ConvReLU2d, q.ConvReLU2d),
    (qat.ConvBnReLU2d, q.ConvReLU2d),
    (nn.Embedding, q.Embedding),
    (nn.EmbeddingBag, q.EmbeddingBag),
    (nn.MaxPool2d, q.MaxPool2d),
    (nn.BatchNorm2d, q.BatchNorm2d),
    (nn.BatchNorm3d, q.BatchNorm3d),
    (fused.BNReLU2d, q.BNReLU2d),
    (_torch_fused.BNReLU2d, q.BNReLU2d),
    (fused.BNReLU3d, q.BNReLU3d),
    (_torch_fused.BNReLU3d, q.BNReLU3d),
    (nn.PReLU, q.PReLU),
    (fused.ConvReLU1d, q.ConvReLU1d),
    (_torch_fused.ConvReLU1d, q.ConvReLU1d),
    (nn.Conv3d, q.Conv3d),
    (fused.ConvReLU3d, q.ConvReLU3d),
    (_torch_fused.ConvReLU3d, q.ConvReLU3d),
    (nn.ConvTranspose1d, q.ConvTranspose1d),
    (nn.ConvTranspose2d, q.ConvTranspose2d),
    (nn.ConvTranspose3d, q.ConvTranspose3d),
    (nn.Dropout, q.Dropout),
    (nn.LayerNorm, q.LayerNorm),
    (nn.GroupNorm, q.GroupNorm),
    (nn.InstanceNorm1d, q.InstanceNorm1d),
    (nn.InstanceNorm2d, q.InstanceNorm2d),
    (nn.InstanceNorm3d, q.InstanceNorm3d),
    (nn.Softmax, q.Softmax),
    (qat.Conv1d, q.Conv1d),
    (qat.ConvBn1d, q.Conv1d),
    (qat.ConvReLU1d, q.ConvReLU1d),
    (qat.ConvBnReLU1d, q.ConvReLU1d),
    (qat.Conv3d, q.Conv3d),
    (qat.ConvBn3d, q.Conv3d),
    (qat.ConvReLU3d, q.ConvReLU3d),
    (qat.ConvBnReLU3d, q.ConvReLU3d),
]:
    register_static(_float, _quantized)

for _float in q.functional.FLOAT_FUNCTIONAL_TYPES:
    register_static(_float, q.QFunctional)

for _float, _qat in [
    (nn.Linear, qat.Linear),
    (fused.LinearReLU, qat.LinearReLU),
    (_torch_fused.LinearReLU, qat.LinearReLU),
    (fused.LinearBn1d, qat.LinearBn1d),
    (nn.Conv2d, qat.Conv2d),
    (fused.ConvReLU2d, qat.ConvReLU2d),
    (_torch_fused.ConvReLU2d, qat.ConvReLU2d),
    (fused.ConvBn2d, qat.ConvBn2d),
    (_torch_fused.ConvBn2d, qat.ConvBn2d),
    (fused.ConvBnReLU2d, qat.ConvBnReLU2d),
    (_torch_fused.ConvBnReLU2d, qat.ConvBnReLU2d),
    (nn.Conv1d, qat.Conv1d),
    (fused.ConvReLU1d, qat.ConvReLU1d),
    (_torch_fused.ConvReLU1d, qat.ConvReLU1d),
    (fused.ConvBn1d, qat.ConvBn1d),
    (_torch_fused.ConvBn1d, qat.ConvBn1d),
    (fused.ConvBnReLU1d, qat.ConvBnReLU1d),
    (_torch_fused.ConvBnReLU1d, qat.ConvBnReLU1d),
    (nn.Conv3d, qat.Conv3d),
    (fused.ConvReLU3d, qat.ConvReLU3d),
    (_torch_fused.ConvReLU3d, qat.ConvReLU3d),
    (fused.ConvBn3d, qat.ConvBn3d),
    (_torch_fused.ConvBn3d, qat.ConvBn3d),
    (fused.ConvBnReLU3d, qat.ConvBnReLU3d),
    (_torch_fused.ConvBnReLU3d, qat.ConvBnReLU3d),
]:
    register_qat(_float, _qat)

register_dynamic(nn.Linear, _dynamic.Linear)
for _float, _recurrent in [
    (nn.LSTM, _dynamic_rnn.LSTM),
    (nn.GRU, _dynamic_rnn.GRU),
    (nn.LSTMCell, _dynamic_rnn.LSTMCell),
    (nn.GRUCell, _dynamic_rnn.GRUCell),
    (nn.RNNCell, _dynamic_rnn.RNNCell),
]:
    register_dynamic(_float, _recurrent)
register_weight_only(nn.Linear, _weight_only.Linear)
