"""Assignment 3 (backward passes by hand): an ``autograd.Function`` for LayerNorm and one for BatchNorm.

Each is checked in three steps: its output against torch, then ∂L/∂x, ∂L/∂γ, ∂L/∂β against
torch's autograd for a random ∂L/∂y, then ``torch.autograd.gradcheck``. The gradients must come
from the student's own ``backward``: calling torch's autograd from their code fails the task.

>>> class LayerNormFunction(torch.autograd.Function):
...     @staticmethod
...     def forward(ctx, x, normalized_shape, weight, bias, eps):
...         dims = tuple(range(x.dim() - len(normalized_shape), x.dim()))
...         mean = x.mean(dims, keepdim=True)
...         rstd = torch.rsqrt(x.var(dims, unbiased=False, keepdim=True) + eps)
...         ctx.save_for_backward(x, weight, mean, rstd)
...         ctx.dims = dims
...         return (x - mean) * rstd * weight + bias
...     @staticmethod
...     def backward(ctx, dy):
...         x, weight, mean, rstd = ctx.saved_tensors
...         x_hat, g, leading = (x - mean) * rstd, dy * weight, tuple(range(x.dim() - len(ctx.dims)))
...         dx = rstd * (g - g.mean(ctx.dims, keepdim=True) - x_hat * (g * x_hat).mean(ctx.dims, keepdim=True))
...         return dx, None, (dy * x_hat).sum(leading), dy.sum(leading), None
>>> check_layer_norm_backward(LayerNormFunction, "en")
passed: LayerNormFunction (2 checks)
"""

from __future__ import annotations

import inspect
import itertools
from typing import Callable, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from normlib.axes import _fmt, as_normalized_shape
from normlib.stats import moments
from normlib_classroom.words import text

from ._report import _case, _close, _compare, _generator, _input, _name, _params, _passed, _Report, _start, _tol
from ._slips import _batch_spec, _check_normalized, _layer_spec, _Norm


def _apply(function) -> Callable:
    """``Function.apply`` for an ``autograd.Function`` subclass; any other callable as it is."""
    if inspect.isclass(function) and issubclass(function, torch.autograd.Function):
        return function.apply
    return function


def _leaf(t: Optional[Tensor]) -> Optional[Tensor]:
    return None if t is None else t.detach().clone().requires_grad_()


def _explain_grads(report: _Report, got, x: Tensor, weight: Tensor, dy: Tensor, spec: _Norm,
                   param_dims: Tuple[int, ...]) -> None:
    """Name the missing term of ∂L/∂x, or the slip in ∂L/∂γ or ∂L/∂β, when one explains the result."""
    dims = spec.pool.dims
    mean, var = moments(x, dims)
    r = torch.rsqrt(var + spec.eps)
    x_hat = (x - mean) * r
    other = tuple(d for d in range(x.dim()) if d not in param_dims)       # the axes γ and β are shared over
    total = lambda t: t.sum(other).reshape(weight.shape)                   # noqa: E731
    g_right = dy * weight.reshape([s if d in param_dims else 1 for d, s in enumerate(x.shape)])
    tol = _tol(x.dtype)
    missing = {(True, True): None, (False, True): "dx_no_mean", (True, False): "dx_no_var", (False, False): "dx_direct"}
    if isinstance(got[0], Tensor):
        for use_gamma, (mean_term, var_term) in itertools.product((True, False), missing):
            g = g_right if use_gamma else dy
            dx = g - (g.mean(dims, keepdim=True) if mean_term else 0) \
                - (x_hat * (g * x_hat).mean(dims, keepdim=True) if var_term else 0)
            if (use_gamma, mean_term, var_term) == (True, True, True) or not _close(got[0], r * dx, tol):
                continue
            for name in ([] if use_gamma else ["dx_no_gamma"]) + ([missing[mean_term, var_term]] if not (mean_term and var_term) else []):
                report.diagnose(name, f"ex:diag:{name}", "ex:sec:07_derive")
            break
    for position, name, candidate in ((1, "dgamma_no_xhat", total(dy)), (1, "dgamma_x", total(dy * x)),
                                      (2, "dbeta_xhat", total(dy * x_hat))):
        if isinstance(got[position], Tensor) and _close(got[position], candidate, tol):
            report.diagnose(name, f"ex:diag:{name}", "ex:sec:07_derive")


def _check_backward(report: _Report, call: Callable, x: Tensor, weight: Tensor, bias: Tensor,
                    reference: Callable, spec: _Norm, param_dims: Tuple[int, ...]) -> None:
    """``call(x, γ, β)`` runs the student's Function. Its output against ``reference`` (torch),
    then ∂L/∂x, ∂L/∂γ, ∂L/∂β against torch's autograd for a random ∂L/∂y, then gradcheck."""
    leaves = (_leaf(x), _leaf(weight), _leaf(bias))
    y = report.call(call, *leaves)
    _check_normalized(report, y.detach() if isinstance(y, Tensor) else y, reference(x, weight, bias), x, spec,
                      weight, bias)
    dy = torch.randn(x.shape, generator=_generator(x.numel()), dtype=x.dtype)
    got = report.call(torch.autograd.grad, y, leaves, dy, allow_unused=True)
    if not report.backward_ran:                     # torch's autograd differentiated the student's forward
        report.diagnose("no_backward", "ex:no_backward", "ex:sec:07_function")
        report.fail()
    torch_leaves = (_leaf(x), _leaf(weight), _leaf(bias))
    wanted = torch.autograd.grad(reference(*torch_leaves), torch_leaves, dy)
    ok = True
    for name, g, e in zip(("x", "γ", "β"), got, wanted):
        if g is None:
            report.add("ex:grad_none", name=name, shape=_fmt(e.shape))
            ok = False
        elif _compare(report, report.t("ex:grad", name=name), g, e, _tol(x.dtype)) != "ok":
            ok = False
    if not ok:
        _explain_grads(report, got, x, weight, dy, spec, param_dims)
        report.fail()
    small = (_leaf(x[:2]), _leaf(weight), _leaf(bias))
    if not torch.autograd.gradcheck(call, small, raise_exception=False):
        report.add("ex:gradcheck_failed")
        report.sections.append("ex:sec:07_function")
        report.fail()


def _grad_case(lang: str, shape, **more) -> str:
    return _case(lang, shape, True, **more) + ", " + text("ex:case_grad", lang)


def check_layer_norm_backward(function, lang: str = "en", *, cases=((((4, 6), (6,))), ((2, 3, 4), (3, 4))),
                              eps: float = 0.01, seed: int = 0) -> None:
    """Check an ``autograd.Function`` ``apply(x, normalized_shape, weight, bias, eps)`` (or any
    callable with those arguments): its output against ``torch.nn.functional.layer_norm``, its
    ∂L/∂x, ∂L/∂γ, ∂L/∂β against torch's autograd for a random ∂L/∂y, then ``gradcheck``.

    >>> try:
    ...     check_layer_norm_backward(lambda x, s, w, b, eps: torch.nn.functional.layer_norm(x, s, w, b, eps), "en")
    ... except AssertionError as failure:
    ...     print(failure.diagnoses)
    ('delegated',)
    """
    gen = _start(lang, function, seed)
    name, apply = _name(function, "LayerNormFunction"), _apply(function)
    for shape, normalized_shape in cases:
        dims = as_normalized_shape(normalized_shape)
        x = _input(shape, gen, torch.float64)
        weight, bias = _params(dims, gen, torch.float64)
        report = _Report(lang, name, _grad_case(lang, shape, normalized_shape=normalized_shape, eps=eps),
                         "ex:sec:07_derive", autograd=True)
        spec = _layer_spec(x, dims, eps)
        _check_backward(report, lambda a, w, b, shape=normalized_shape: apply(a, shape, w, b, eps), x, weight, bias,
                        lambda a, w, b, dims=dims: F.layer_norm(a, dims, w, b, eps), spec, spec.pool.dims)
    _passed(lang, name, len(cases))


def check_batch_norm_backward(function, lang: str = "en", *, shapes=((8, 3), (4, 3, 5)), eps: float = 0.01,
                              seed: int = 0) -> None:
    """Check an ``autograd.Function`` ``apply(x, weight, bias, eps)`` for BatchNorm in training
    mode over ``(N, C)`` or ``(N, C, L)``: output against ``torch.nn.functional.batch_norm``,
    gradients against torch's autograd, then ``gradcheck``.

    >>> def batch_norm(x, weight, bias, eps):        # right, but torch's autograd would find the gradients
    ...     x_hat = (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + eps)
    ...     return x_hat * weight + bias
    >>> try:
    ...     check_batch_norm_backward(batch_norm, "en", shapes=[(8, 3)])
    ... except AssertionError as failure:
    ...     print(failure.diagnoses)
    ('no_backward',)
    """
    gen = _start(lang, function, seed)
    name, apply = _name(function, "BatchNormFunction"), _apply(function)
    for shape in shapes:
        x = _input(shape, gen, torch.float64)
        weight, bias = _params((shape[1],), gen, torch.float64)
        report = _Report(lang, name, _grad_case(lang, shape, eps=eps), "ex:sec:07_derive", autograd=True)
        _check_backward(report, lambda a, w, b: apply(a, w, b, eps), x, weight, bias,
                        lambda a, w, b: F.batch_norm(a, None, None, w, b, training=True, eps=eps),
                        _batch_spec(x, eps), (1,))
    _passed(lang, name, len(shapes))
