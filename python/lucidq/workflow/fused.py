"""Fused float modules (nn.Sequential markers) that fuse_modules builds and convert swaps as one unit.

As torch.ao.nn.intrinsic: each is the float modules in order, forward runs them in
order; prepare observes only the unit's output and convert replaces the unit by one
quantized (or QAT) module. Instances of torch's own intrinsic classes are accepted
wherever these are (see mappings.py).
"""

from torch import nn

__all__ = [
    "FusedModule", "LinearReLU", "LinearBn1d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d",
    "ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d",
    "BNReLU2d", "BNReLU3d",
]


class FusedModule(nn.Sequential):
    """Base of the fused markers: checks the types of its parts."""

    _PARTS = ()

    def __init__(self, *modules):
        kinds = tuple(type(m) for m in modules)
        if len(kinds) != len(self._PARTS) or not all(
            issubclass(k, p) for k, p in zip(kinds, self._PARTS)
        ):
            raise ValueError(
                f"{type(self).__name__}: got parts {[k.__name__ for k in kinds]} "
                f"(expected {[p.__name__ for p in self._PARTS]})"
            )
        super().__init__(*modules)


class LinearReLU(FusedModule):
    """Linear then ReLU."""

    _PARTS = (nn.Linear, nn.ReLU)


class LinearBn1d(FusedModule):
    """Linear then BatchNorm1d, kept apart for QAT (fuse_modules folds them at once)."""

    _PARTS = (nn.Linear, nn.BatchNorm1d)


class ConvReLU2d(FusedModule):
    """Conv2d (BatchNorm already folded in, if there was one) then ReLU."""

    _PARTS = (nn.Conv2d, nn.ReLU)


class ConvReLU1d(FusedModule):
    """Conv1d (BatchNorm already folded in, if there was one) then ReLU."""

    _PARTS = (nn.Conv1d, nn.ReLU)


class ConvReLU3d(FusedModule):
    """Conv3d (BatchNorm already folded in, if there was one) then ReLU."""

    _PARTS = (nn.Conv3d, nn.ReLU)


class BNReLU2d(FusedModule):
    """BatchNorm2d then ReLU (quantized as one per-channel table)."""

    _PARTS = (nn.BatchNorm2d, nn.ReLU)


class BNReLU3d(FusedModule):
    """BatchNorm3d then ReLU (quantized as one per-channel table)."""

    _PARTS = (nn.BatchNorm3d, nn.ReLU)


class ConvBn1d(FusedModule):
    """Conv1d then BatchNorm1d, kept apart for QAT."""

    _PARTS = (nn.Conv1d, nn.BatchNorm1d)


class ConvBn3d(FusedModule):
    """Conv3d then BatchNorm3d, kept apart for QAT."""

    _PARTS = (nn.Conv3d, nn.BatchNorm3d)


class ConvBnReLU1d(FusedModule):
    """Conv1d, BatchNorm1d, ReLU, kept apart for QAT."""

    _PARTS = (nn.Conv1d, nn.BatchNorm1d, nn.ReLU)


class ConvBnReLU3d(FusedModule):
    """Conv3d, BatchNorm3d, ReLU, kept apart for QAT."""

    _PARTS = (nn.Conv3d, nn.BatchNorm3d, nn.ReLU)


class ConvBn2d(FusedModule):
    """Conv2d then BatchNorm2d, kept apart for QAT."""

    _PARTS = (nn.Conv2d, nn.BatchNorm2d)


class ConvBnReLU2d(FusedModule):
    """Conv2d, BatchNorm2d, ReLU, kept apart for QAT."""

    _PARTS = (nn.Conv2d, nn.BatchNorm2d, nn.ReLU)
