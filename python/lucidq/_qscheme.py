"""QScheme: the four linear-quantization schemes (granularity x symmetry) as a Python enum."""

import enum


class QScheme(enum.Enum):
    """How (scale, zero_point) map real values onto the integer grid.

    Granularity: one pair for the whole tensor (per-tensor) or one per channel
    along an axis (per-channel; finer still per group, see QParams.group_size).
    Symmetry: affine leaves zero_point free; symmetric pins it (0 for a signed
    grid, the grid midpoint for an unsigned one) so that real 0 maps to a code.

    str() gives the lowercase name ("per_channel_symmetric"), as do the module
    aliases (lucidq.per_channel_symmetric is QScheme.PER_CHANNEL_SYMMETRIC);
    .name is the member name ("PER_CHANNEL_SYMMETRIC"), as for every Python enum.

    >>> import lucid.quantization as Q
    >>> Q.per_channel_symmetric is Q.QScheme.PER_CHANNEL_SYMMETRIC
    True
    >>> Q.per_channel_symmetric.is_per_channel
    True
    >>> str(Q.QScheme.from_string("per_tensor_affine"))
    'per_tensor_affine'
    """

    # The values are the C++ enumerators (lucid::quantization::QScheme).
    PER_TENSOR_AFFINE = 0
    PER_TENSOR_SYMMETRIC = 1
    PER_CHANNEL_AFFINE = 2
    PER_CHANNEL_SYMMETRIC = 3

    @property
    def is_per_channel(self) -> bool:
        """True for the two per-channel schemes, False for per-tensor."""
        from . import _lucidq

        return _lucidq.is_per_channel(self)

    @property
    def is_symmetric(self) -> bool:
        """True when zero_point is pinned (the two symmetric schemes)."""
        from . import _lucidq

        return _lucidq.is_symmetric(self)

    @classmethod
    def from_string(cls, name: str) -> "QScheme":
        """Parses "per_channel_symmetric" (or "PER_CHANNEL_SYMMETRIC"); ValueError otherwise."""
        from . import _lucidq

        return _lucidq.qscheme_from_string(name)

    def __str__(self) -> str:
        from . import _lucidq

        return _lucidq._qscheme_to_string(self)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)
