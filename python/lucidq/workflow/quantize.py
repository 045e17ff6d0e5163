"""The model workflow in one import: prepare, convert, prepare_qat, quantize_dynamic, fuse_modules, ...

(torch keeps the same functions in torch.ao.quantization.quantize.) FloatFunctional is
torch.ao's own class (its add / cat / ... are observed by prepare and become a
quantized.QFunctional at convert). Everything here is
also meant to be re-exported by lucidq.workflow and, lazily, by lucidq itself.
"""

from torch.ao.nn.quantized import FloatFunctional

from .convert import convert
from .dynamic import DynamicConfig, WeightOnlyConfig, quantize_dynamic, quantize_weight_only
from .fuse import fold_batch_norm, fuse_modules, fuse_modules_qat
from .mappings import (
    register_dynamic, register_qat, register_static, register_weight_only,
)
from .prepare import prepare, prepare_qat, propagate_qconfig
from .save import load_quantized, save_quantized
from .stubs import DeQuantStub, QuantStub, QuantWrapper

__all__ = [
    "prepare", "prepare_qat", "convert", "propagate_qconfig", "quantize_dynamic",
    "quantize_weight_only", "DynamicConfig", "WeightOnlyConfig", "fuse_modules",
    "fuse_modules_qat", "fold_batch_norm", "FloatFunctional", "QuantStub", "DeQuantStub", "QuantWrapper",
    "save_quantized", "load_quantized", "register_static", "register_qat", "register_dynamic",
    "register_weight_only",
]
