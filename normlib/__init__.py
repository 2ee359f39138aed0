"""normlib: the normalization layers of the book, small enough to read and exact against torch.nn.

>>> import torch, normlib
>>> normlib.LayerNorm(3)(torch.tensor([[2.0, 3.0, 4.0]])).detach()
tensor([[-1.2247,  0.0000,  1.2247]])

Modules: :mod:`normlib.axes` (which elements share one statistic), :mod:`normlib.stats`
(``moments``, the two-pass mean and variance every layer uses, and the other ways of chapter 2),
:mod:`normlib.checks` (every argument check; :mod:`normlib.messages` explains errors in English
or Korean: ``normlib.set_language("ko")``), :mod:`normlib.functional` (the formulas),
:mod:`normlib.modules` (the layers, drop-in for ``torch.nn``), :mod:`normlib.dyt` (``DyT``, Dynamic
Tanh, a layer proposed to replace a normalization), :mod:`normlib.autograd`
(LayerNorm, RMSNorm and BatchNorm with backward passes derived by hand) and
:mod:`normlib.distributed` (BatchNorm with statistics synchronized across processes);
:mod:`normlib.fold` (``fold_batch_norm``: a BatchNorm folded into the Conv or Linear before it).
"""

from . import autograd, axes, checks, distributed, fold, functional, stats
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
