"""lucidq.workflow: PyTorch eager-mode quantization (torch.ao.quantization 1.13's names) on lucidq's kernels.

Needs torch (imported here, so `import lucidq` alone does not need it). The
names are also reachable as lucidq.<name> and lucid.quantization.<name>,
imported on first touch. Submodules: observer (observers as torch modules),
fake_quantize (FakeQuantize, LearnableFakeQuantize), qconfig (QConfig and
presets), qconfig_mapping (QConfigMapping), quantize (prepare, convert,
prepare_qat, quantize_dynamic, fuse_modules, save_quantized, ...), fx (graph mode:
prepare_fx, convert_fx, ...).
"""

from .._workflow_names import TORCH_MISSING, WORKFLOW_NAMES

try:
    import torch  # noqa: F401
except ImportError as _error:
    raise ImportError(TORCH_MISSING) from _error

from .algorithms import *  # noqa: E402,F401,F403
from .calibration import *  # noqa: E402,F401,F403
from .fake_quantize import *  # noqa: E402,F401,F403
from .fx import *  # noqa: E402,F401,F403
from .observer import *  # noqa: E402,F401,F403
from .qconfig import *  # noqa: E402,F401,F403
from .qconfig_mapping import *  # noqa: E402,F401,F403
from .quantize import *  # noqa: E402,F401,F403

__all__ = list(WORKFLOW_NAMES)
