"""Dynamic Tanh as a layer, ``normlib.DyT``: proposed to replace a transformer's LayerNorm.

Zhu, Chen, He, LeCun & Liu, "Transformers without Normalization" (CVPR 2025, arXiv 2503.10622)
observe that a trained transformer's LayerNorms map their inputs along S-shaped, tanh-like curves,
and replace each of them with ``y = γ · tanh(α x) + β``: no mean, no variance, one learnable scalar α
per layer and LayerNorm's per-channel γ and β over the trailing ``normalized_shape``. The arithmetic
is :func:`normlib.functional.dyt`, one jump from ``forward``.

The layer is kept apart from :mod:`normlib.modules` (the normalization layers, drop-in for
``torch.nn``) because it normalizes nothing and torch.nn has no counterpart: its ``state_dict`` is
the authors' instead (``alpha`` of shape ``(1,)``, ``weight``, ``bias``), so their checkpoints load
with ``strict=True``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from . import functional as F
from .axes import ShapeLike, as_normalized_shape
from .messages import errors
from .modules import _affine_parameters, _reset_affine

__all__ = ["DyT"]


class DyT(nn.Module):
    """Dynamic Tanh (see :func:`normlib.functional.dyt`): ``y = γ · tanh(α x) + β``, elementwise.
    Chapter 11 puts it in place of every LayerNorm of a small transformer and trains both.

    α is one learnable scalar, held as a parameter of shape ``(1,)`` as in the authors' code, and
    starts at ``alpha_init``: α₀ = 0.5, the default of the authors' code and the paper's choice for
    its models other than LLMs (for LLMs it tunes α₀). γ (``weight``) and β (``bias``) have shape
    ``normalized_shape``, the input's trailing dims, and start at 1 and 0 as LayerNorm's. Without
    them (``elementwise_affine=False``) ``normalized_shape`` sizes nothing and any input is accepted.

    Args: ``normalized_shape`` (int, list, tuple or ``torch.Size``), ``alpha_init=0.5``,
    ``elementwise_affine=True``, ``bias=True``, ``device``, ``dtype``.

    >>> layer = DyT(4)
    >>> layer(torch.tensor([[-4.0, 0.0, 1.0, 4.0]])).detach()   # tanh(0.5 x), γ = 1, β = 0
    tensor([[-0.9640,  0.0000,  0.4621,  0.9640]])
    >>> {k: tuple(v.shape) for k, v in layer.state_dict().items()}
    {'alpha': (1,), 'weight': (4,), 'bias': (4,)}
    """

    def __init__(self, normalized_shape: ShapeLike, alpha_init: float = 0.5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        if isinstance(alpha_init, bool) or not isinstance(alpha_init, (int, float)):
            raise TypeError(errors.alpha_init_type(alpha_init))
        self.normalized_shape = as_normalized_shape(normalized_shape)
        self.alpha_init = float(alpha_init)
        self.elementwise_affine = elementwise_affine
        self.alpha = nn.Parameter(torch.empty(1, device=device, dtype=dtype))
        _affine_parameters(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """α ← alpha_init, γ ← 1, β ← 0: the layer starts as ``tanh(α₀ x)``."""
        nn.init.constant_(self.alpha, self.alpha_init)
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.dyt(input, self.alpha, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, alpha_init={self.alpha_init}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")
