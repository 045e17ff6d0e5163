"""Graph mode (torch.fx): prepare_fx, prepare_qat_fx, convert_fx, fuse_fx, summary on unmodified float models."""

from .quantize_fx import convert_fx, fuse_fx, prepare_fx, prepare_qat_fx
from .summary import summary

__all__ = ["prepare_fx", "prepare_qat_fx", "convert_fx", "fuse_fx", "summary"]
