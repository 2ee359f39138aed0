"""normlib: the normalization layers of the book, small enough to read and exact against torch.nn.

>>> import torch, normlib
>>> normlib.LayerNorm(3)(torch.tensor([[2.0, 3.0, 4.0]])).detach()
tensor([[-1.2247,  0.0000,  1.2247]])

Modules: :mod:`normlib.axes` (which elements share one statistic), :mod:`normlib.stats`
(``moments``, the two-pass mean and variance every layer uses, and the other ways of chapter 2),
:mod:`normlib.checks` (every argument check; :mod:`normlib.messages` explains errors in English
or Korean: ``normlib.set_language("ko")``, with the texts of :mod:`normlib.errors`),
:mod:`normlib.functional` (the formulas), :mod:`normlib.modules` (the layers, drop-in for
``torch.nn``), :mod:`normlib.dyt` (``DyT``, Dynamic Tanh, a layer proposed to replace a
normalization) and :mod:`normlib.fold` (``fold_batch_norm``: a BatchNorm folded into the Conv or
Linear before it).

Two more are the same layers done another way, and load the first time they are named
(``normlib.autograd``, ``from normlib import distributed``), not with ``import normlib``:
:mod:`normlib.autograd` (LayerNorm, RMSNorm and BatchNorm with backward passes derived by hand,
chapter 7) and :mod:`normlib.distributed` (BatchNorm with statistics synchronized across
processes, chapter 9). So do the error texts, :mod:`normlib.errors`, when an error is raised.
"""

from . import axes, checks, fold, functional, stats
from .axes import NormInputError
from .checks import NormDtypeError
from .dyt import DyT
from .fold import fold_batch_norm, fold_conv_bn, fold_linear_bn
from .messages import language, set_language, speaking
from .modules import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LayerNorm,
    RMSNorm,
)

__version__ = "0.1.0"

__all__ = [
    "autograd", "axes", "checks", "distributed", "functional", "stats", "NormInputError", "NormDtypeError",
    "set_language", "language", "speaking",
    "LayerNorm", "RMSNorm", "GroupNorm",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
    "DyT",
    "fold", "fold_batch_norm", "fold_conv_bn", "fold_linear_bn",
]


_ON_FIRST_USE = ("autograd", "distributed")   # chapter 7's and chapter 9's layers


def __getattr__(name: str):
    """``normlib.autograd`` and ``normlib.distributed``, imported the first time they are named."""
    if name in _ON_FIRST_USE:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_ON_FIRST_USE])
