"""What a dynamic module reads from its qconfig: how weights and activations are quantized."""

from ... import _lucidq
from ...nn import DynamicQuantizedLinear
from .._observed import qdtype_of
from ._io import float_array, float_bias
from ._weights import int8_weight

__all__ = ["dynamic_product"]


def dynamic_product(weight, bias, qconfig, where):
    """A lucidq.DynamicQuantizedLinear over float weight [N, K] and bias (None or [N]) as the
    qconfig (a DynamicConfig or a QConfig) says. Weight: a fresh qconfig.weight() observer
    quantizes it (as torch, one observer per weight), or, with no weight observer
    (DynamicConfig's default), per-channel symmetric qint8. Activations: quantized per row
    unless qconfig.per_row is False (one scale per call, torch's choice), onto qconfig.qdtype,
    else the dtype of qconfig.activation()'s observer. `where` names the weight in errors."""
    weight_factory = getattr(qconfig, "weight", None)
    if weight_factory is None:
        packed = _lucidq.PackedWeightsInt8.quantize(float_array(weight))
    else:
        packed = int8_weight(weight, weight_factory(), where)
    per_row = getattr(qconfig, "per_row", True)
    qdtype = getattr(qconfig, "qdtype", None)
    if qdtype is None:
        qdtype = qdtype_of(qconfig.activation())
    return DynamicQuantizedLinear(packed, float_bias(bias), per_row=per_row, qdtype=qdtype)
