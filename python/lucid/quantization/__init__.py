"""lucid.quantization: lucidq under Lucid's name (`import lucid.quantization as Q`).

Every public name of lucidq is re-exported; the objects are the same
(lucid.quantization.QScheme is lucidq.QScheme). The torch workflow names
(QConfig, get_default_qconfig, prepare, ...) are looked up in lucidq on first
use, so torch is imported only then.
"""

import lucidq as _lucidq
from lucidq import *  # noqa: F401,F403  (the whole public API, by design)
from lucidq import __all__ as _lucidq_all

__all__ = list(_lucidq_all)
__version__ = _lucidq.__version__
__doc__ = _lucidq.__doc__


def __getattr__(name):
    """The torch workflow names (QConfig, prepare, ...), imported from lucidq on first use."""
    from lucidq._workflow_names import WORKFLOW_NAMES

    if name in WORKFLOW_NAMES:
        return getattr(_lucidq, name)
    raise AttributeError(f"module 'lucid.quantization' has no attribute {name!r}")
