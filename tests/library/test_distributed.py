"""normlib.distributed: synchronized BatchNorm across real processes (gloo on 127.0.0.1).

Each multi-process test starts its processes once with ``normlib_book.launch.launch`` and runs
many cases inside them; the workers below are module-level functions so that the spawned
processes can import them. References are computed here, in the test process, from
``torch.nn.BatchNorm1d/2d/3d`` on the concatenated batch, and inside the workers from
``torch.nn.SyncBatchNorm``'s own autograd Function (which has no CPU kernels in torch 2.13: the
five ATen ops it calls get CPU versions below, written from their documented meaning).
"""

from __future__ import annotations

import multiprocessing
import time

import pytest
import torch
import torch.distributed as dist
from torch import nn

import normlib
from helpers.torch_compare import assert_close_elementwise
from normlib import distributed as D
from normlib.axes import NormInputError
from normlib_book.devices import split_steps
from normlib_book.instruments import traffic
from normlib_book.launch import WorkerError, launch

# what this module needs beyond Python (tests/conftest.py: not in make test-fast)
pytestmark = pytest.mark.distributed

TOL = {torch.float32: 1e-5, torch.float64: 1e-10}

# Each case: the full batch's shape, how many rows each rank holds, and the layer's options.
CASES = [
    dict(name="2d even", shape=(8, 3, 4, 4), sizes={2: [4, 4], 3: [3, 3, 2]}),
    dict(name="2d uneven", shape=(7, 3, 5, 5), sizes={2: [2, 5], 3: [1, 4, 2]}),
    dict(name="2d empty rank", shape=(6, 2, 3, 3), sizes={2: [0, 6], 3: [3, 0, 3]}),
    dict(name="1d (N, C)", shape=(9, 5), sizes={2: [4, 5], 3: [2, 3, 4]}),
    dict(name="1d (N, C, L) offset", shape=(6, 4, 7), sizes={2: [5, 1], 3: [1, 1, 4]}, offset=1e3),
    dict(name="3d", shape=(4, 2, 3, 3, 3), sizes={2: [1, 3], 3: [2, 1, 1]}),
    dict(name="no affine, momentum None", shape=(8, 3, 4), sizes={2: [3, 5], 3: [3, 3, 2]},
         affine=False, momentum=None),
    dict(name="untracked", shape=(8, 3, 2, 2), sizes={2: [6, 2], 3: [2, 2, 4]}, track=False),
]
DTYPES = [torch.float32, torch.float64]
STEPS = 2   # two training steps (momentum=None averages them), then one evaluation step


def _batch(case: dict, dtype: torch.dtype, step: int, rounded_to: torch.dtype | None = None):
    """The full batch, upstream gradient, γ and β of one step, the same in every process.

    ``rounded_to`` first rounds them to that dtype: float64 data equal to the float32 data, for
    the exact answer to a float32 case."""
    g = torch.Generator().manual_seed(1000 * step + len(case["name"]))
    c = case["shape"][1]
    x = torch.randn(case["shape"], generator=g, dtype=torch.float64) * 2 + case.get("offset", 0.0)
    # Channel 0 drifts along the batch, so that slices differ in distribution (as sorted or
    # unshuffled data make them) and per-slice statistics are visibly off.
    x[:, 0] += 3 * torch.arange(case["shape"][0], dtype=torch.float64).reshape(-1, *[1] * (len(case["shape"]) - 2))
    upstream = torch.randn(case["shape"], generator=g, dtype=torch.float64)
    weight = torch.rand(c, generator=g, dtype=torch.float64) + 0.5
    bias = torch.randn(c, generator=g, dtype=torch.float64)
    return tuple(t.to(rounded_to or dtype).to(dtype) for t in (x, upstream, weight, bias))


def _rows(sizes, rank):
    start = sum(sizes[:rank])
    return slice(start, start + sizes[rank])


def _layer(cls, case, dtype, rounded_to=None):
    layer = cls(case["shape"][1], momentum=case.get("momentum", 0.1), affine=case.get("affine", True),
                track_running_stats=case.get("track", True)).to(dtype)
    if layer.weight is not None:
        _, _, weight, bias = _batch(case, dtype, 0, rounded_to)
        with torch.no_grad():
            layer.weight.copy_(weight)
            layer.bias.copy_(bias)
    return layer


def _run(layer, case, dtype, sizes, rank, rounded_to=None):
    """STEPS training steps and one eval step on this rank's rows: what each step produced."""
    out = []
    for step in range(STEPS + 1):
        layer.train(step < STEPS)
        x, upstream, _, _ = _batch(case, dtype, step + 1, rounded_to)
        x = x[_rows(sizes, rank)].clone().requires_grad_()
        for p in layer.parameters():
            p.grad = None
        with traffic() as calls:
            y = layer(x)
            (y * upstream[_rows(sizes, rank)]).sum().backward()
        out.append(dict(
            y=y.detach(), dx=x.grad,
            dw=None if layer.weight is None else layer.weight.grad,
            db=None if layer.bias is None else layer.bias.grad,
            running=None if layer.running_mean is None else (layer.running_mean.clone(), layer.running_var.clone()),
            calls=calls,
        ))
    return out


def compare_worker(rank, world_size):
    """Every case in both dtypes: SyncBatchNorm's steps, and the naive per-process BatchNorm's."""
    results = {}
    for case in CASES:
        for dtype in DTYPES:
            sizes = case["sizes"][world_size]
            results[case["name"], dtype] = dict(
                sync=_run(_layer(D.SyncBatchNorm, case, dtype), case, dtype, sizes, rank),
                naive=_naive(case, dtype, sizes, rank),
            )
    return results


def _naive(case, dtype, sizes, rank):
    """Plain BatchNorm on this rank's rows alone (what data parallelism does without sync)."""
    x, _, weight, bias = _batch(case, dtype, 1)
    x = x[_rows(sizes, rank)]
    if x.numel() // x.shape[1] < 2:
        return None
    return normlib.functional.batch_norm(x, None, None, weight, bias, training=True)


def _reference(case, dtype, rounded_to=None):
    """torch.nn's BatchNorm on the concatenated batch, the same steps."""
    cls = {2: nn.BatchNorm1d, 3: nn.BatchNorm1d, 4: nn.BatchNorm2d, 5: nn.BatchNorm3d}[len(case["shape"])]
    return _run(_layer(cls, case, dtype, rounded_to), case, dtype, [case["shape"][0]], 0, rounded_to)


def _assert_close(ours, ref, dtype, what, exact=None):
    """|ours − ref| ≤ tol·(1 + |ref|), or ours at least as close to the float64 answer as torch is.

    (With an offset of 1e3, the float32 inputs themselves are only resolved to about 6e-5, so
    torch's float32 result is off from the exact one by more than 1e-5 too.)"""
    assert_close_elementwise(ours.to(ref.dtype), ref, 0.0, what, TOL[dtype], exact=exact)


@pytest.fixture(scope="module", params=[2, 3], ids=["2 processes", "3 processes"])
def launched(request):
    world_size = request.param
    return world_size, launch(compare_worker, world_size, timeout=120)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_equals_batchnorm_on_the_concatenated_batch(launched, case, dtype):
    world_size, results = launched
    ranks = [r[case["name"], dtype]["sync"] for r in results]
    exact = _reference(case, torch.float64, rounded_to=dtype)
    for step, ref in enumerate(_reference(case, dtype)):
        ex = exact[step]
        what = f"{case['name']}, {world_size} processes, step {step}"
        if step == STEPS and not case.get("track", True):
            _assert_local_batchnorm(ranks, case, dtype, world_size, what)
            continue
        _assert_close(torch.cat([r[step]["y"] for r in ranks]), ref["y"], dtype, f"output ({what})", ex["y"])
        _assert_close(torch.cat([r[step]["dx"] for r in ranks]), ref["dx"], dtype, f"input gradient ({what})",
                      ex["dx"])
        if ref["dw"] is not None:
            # Each process holds its slice's share; DDP adds them up (as for every other parameter).
            _assert_close(sum(r[step]["dw"] for r in ranks), ref["dw"], dtype, f"weight gradient ({what})", ex["dw"])
            _assert_close(sum(r[step]["db"] for r in ranks), ref["db"], dtype, f"bias gradient ({what})", ex["db"])
        for rank, r in enumerate(ranks):
            if ref["running"] is None:
                assert r[step]["running"] is None
                continue
            for i, name in enumerate(("running_mean", "running_var")):
                _assert_close(r[step]["running"][i], ref["running"][i], dtype, f"{name} of rank {rank} ({what})",
                              ex["running"][i])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_one_all_gather_forward_and_one_all_reduce_backward_per_training_step(launched, case):
    world_size, results = launched
    c = case["shape"][1]
    for rank, r in enumerate(results):
        for dtype in DTYPES:
            steps = r[case["name"], dtype]["sync"]
            for step in steps[:STEPS]:
                assert [(k.op, k.numel, k.dtype, k.world_size) for k in step["calls"]] == [
                    ("all_gather", 2 * c + 1, torch.float64, world_size),   # count, C means, C M2s
                    ("all_reduce", 2 * c, dtype, world_size),               # Σ dy and Σ dy·x̂ per channel
                ], f"rank {rank}, {case['name']}, {dtype}"
                itemsize = 4 if dtype == torch.float32 else 8
                assert [k.nbytes for k in step["calls"]] == [(2 * c + 1) * 8, 2 * c * itemsize]
            # Evaluation exchanges nothing (running statistics, or the local batch if untracked).
            assert steps[STEPS]["calls"] == [], f"rank {rank}, {case['name']}, eval step"


def test_naive_per_process_batchnorm_differs(launched):
    """Without synchronization each slice is normalized with its own statistics: measurably off."""
    world_size, results = launched
    case = CASES[0]
    ref = _reference(case, torch.float64)[0]["y"]
    sizes = case["sizes"][world_size]
    gaps = [(r[case["name"], torch.float64]["naive"] - ref[_rows(sizes, rank)]).abs().max().item()
            for rank, r in enumerate(results)]
    assert min(gaps) > 0.1, f"naive per-process BatchNorm is unexpectedly close: max |Δ| per rank {gaps}"


def _assert_local_batchnorm(ranks, case, dtype, world_size, what):
    """Eval mode without running statistics: each process normalizes its own batch, as torch's does."""
    sizes = case["sizes"][world_size]
    x, upstream, _, _ = _batch(case, dtype, STEPS + 1)
    _, _, weight, bias = _batch(case, dtype, 0)      # the layer's γ and β (see _layer)
    for rank, r in enumerate(ranks):
        rows = _rows(sizes, rank)
        if x[rows].numel() // x.shape[1] < 2:
            continue
        xl = x[rows].clone().requires_grad_()
        y = torch.nn.functional.batch_norm(xl, None, None, weight, bias, training=True)
        (y * upstream[rows]).sum().backward()
        _assert_close(r[STEPS]["y"], y.detach(), dtype, f"eval output of rank {rank} ({what})")
        _assert_close(r[STEPS]["dx"], xl.grad, dtype, f"eval input gradient of rank {rank} ({what})")


# --------------------------------------------------------------------------- torch.nn.SyncBatchNorm's math

def _register_cpu_kernels_for_torch_sync_batch_norm():
    """CPU versions of the five ATen ops torch.nn.SyncBatchNorm's autograd Function calls (torch
    2.13 has them for GPUs only), from what each op means. torch's Function itself, with its
    all_gather of (mean, invstd, count), its filtering of empty ranks and its all_reduce of the two
    sums, runs unchanged on top of them."""
    if getattr(_register_cpu_kernels_for_torch_sync_batch_norm, "lib", None) is not None:
        return
    lib = torch.library.Library("aten", "IMPL")
    dims = lambda t: (0, *range(2, t.dim()))
    view = lambda v, t: v.reshape(1, -1, *[1] * (t.dim() - 2))

    def stats(input, eps):                       # this slice's mean and 1/sqrt(var + eps)
        mean = input.mean(dims(input))
        var = input.var(dims(input), correction=0)
        return mean, torch.rsqrt(var + eps)

    def gather_stats_with_counts(input, mean_all, invstd_all, running_mean, running_var, momentum, eps, counts):
        # Combine the ranks one by one, as the GPU kernel does: each rank's variance is
        # recovered from its invstd (1/invstd² − eps); then update the running statistics.
        n, mean, m2 = 0.0, torch.zeros_like(mean_all[0]), torch.zeros_like(mean_all[0])
        for c, m, istd in zip(counts.tolist(), mean_all, invstd_all):
            var = 1 / (istd * istd) - eps
            delta = m - mean
            mean = mean + delta * c / (n + c)
            m2 = m2 + var * c + delta * delta * n * c / (n + c)
            n += c
        if running_mean is not None:
            running_mean.copy_((1 - momentum) * running_mean + momentum * mean)
        if running_var is not None:
            running_var.copy_((1 - momentum) * running_var + momentum * m2 / (n - 1))
        return mean, torch.rsqrt(m2 / n + eps)

    def elemt(input, weight, bias, mean, invstd, eps):
        y = (input - view(mean, input)) * view(invstd, input)
        if weight is not None:
            y = y * view(weight, input)
        return y + view(bias, input) if bias is not None else y

    def backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g):
        sum_dy = grad_out.sum(dims(input))
        sum_dy_xmu = (grad_out * (input - view(mean, input))).sum(dims(input))
        return sum_dy, sum_dy_xmu, sum_dy_xmu * invstd, sum_dy.clone()

    def backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count):
        n = count.sum().to(input.dtype)
        istd = view(invstd, input)
        g = grad_out - view(sum_dy / n, input) - (input - view(mean, input)) * istd * istd * view(sum_dy_xmu / n, input)
        return g * istd * (view(weight, input) if weight is not None else 1)

    for name, fn in [("batch_norm_stats", stats), ("batch_norm_gather_stats_with_counts", gather_stats_with_counts),
                     ("batch_norm_elemt", elemt), ("batch_norm_backward_reduce", backward_reduce),
                     ("batch_norm_backward_elemt", backward_elemt)]:
        lib.impl(name, fn, "CPU")
    _register_cpu_kernels_for_torch_sync_batch_norm.lib = lib


def torch_sync_worker(rank, world_size):
    """The same slices through normlib's SyncBatchNorm and through torch.nn.SyncBatchNorm's Function."""
    from torch.nn.modules._functions import SyncBatchNorm as TorchSyncBatchNormFunction

    _register_cpu_kernels_for_torch_sync_batch_norm()
    out = {}
    for case in CASES:
        for dtype in DTYPES:
            sizes = case["sizes"][world_size]
            x, upstream, weight, bias = _batch(case, dtype, 1)
            rows = _rows(sizes, rank)
            results = []
            for impl in ("normlib", "torch"):
                xl = x[rows].clone().requires_grad_()
                w, b = weight.clone().requires_grad_(), bias.clone().requires_grad_()
                rm, rv = torch.zeros(x.shape[1], dtype=dtype), torch.ones(x.shape[1], dtype=dtype)
                if impl == "normlib":
                    y = D.sync_batch_norm(xl, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)
                else:
                    y = TorchSyncBatchNormFunction.apply(xl, w, b, rm, rv, 1e-5, 0.1, dist.group.WORLD, world_size)
                (y * upstream[rows]).sum().backward()
                results.append([y.detach(), xl.grad, w.grad, b.grad, rm, rv])
            out[case["name"], dtype] = results
    return out


def test_equals_torch_sync_batch_norm_math():
    """Per process, normlib's output, gradients and running statistics equal what
    torch.nn.SyncBatchNorm's own Function computes on the same slices (3 processes: uneven,
    empty and one-row slices among the cases)."""
    world_size = 3
    results = launch(torch_sync_worker, world_size, timeout=120)
    names = ["output", "input gradient", "weight gradient", "bias gradient", "running_mean", "running_var"]
    cases = {c["name"]: c for c in CASES}
    for rank, per_rank in enumerate(results):
        for (name, dtype), (ours, theirs) in per_rank.items():
            exact = _exact_slice(cases[name], dtype, world_size, rank)
            for what, o, t, e in zip(names, ours, theirs, exact):
                if t is None:     # torch leaves the gradients of an empty slice as None (= zeros)
                    assert o is None or not o.any(), f"{what}, rank {rank}, {name}"
                    continue
                _assert_close(o, t, dtype, f"{what} vs torch.nn.SyncBatchNorm, rank {rank}, {name}, {dtype}", e)


def _exact_slice(case, dtype, world_size, rank):
    """What one rank of torch_sync_worker should get, in float64 from the same (rounded) data."""
    x, upstream, weight, bias = _batch(case, torch.float64, 1, rounded_to=dtype)
    x, w, b = x.clone().requires_grad_(), weight.clone().requires_grad_(), bias.clone().requires_grad_()
    rm, rv = torch.zeros(x.shape[1], dtype=torch.float64), torch.ones(x.shape[1], dtype=torch.float64)
    y = torch.nn.functional.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)
    rows = _rows(case["sizes"][world_size], rank)
    # This rank's share of ∂L/∂γ and ∂L/∂β: the loss restricted to its rows.
    (y[rows] * upstream[rows]).sum().backward(retain_graph=True)
    w_share, b_share = w.grad.clone(), b.grad.clone()
    x.grad = None
    (y * upstream).sum().backward()
    return [y.detach()[rows], x.grad[rows], w_share, b_share, rm, rv]


# --------------------------------------------------------------------------- edge cases across processes

def edge_worker(rank, world_size):
    """Cases where the processes must agree: too few values in all, every slice empty, float16."""
    out = {}
    # One value per channel in the whole group: every process raises the same clear error
    # (none is left waiting in a collective).
    x = torch.randn(1 if rank == 0 else 0, 3)
    try:
        D.SyncBatchNorm(3)(x)
        out["one value"] = None
    except NormInputError as error:
        out["one value"] = str(error)
    # Every slice empty: an empty output, running statistics untouched, as BatchNorm on an empty batch.
    layer = D.SyncBatchNorm(2)
    x = torch.zeros(0, 2, 4, requires_grad=True)
    y = layer(x)
    y.sum().backward()
    out["all empty"] = (tuple(y.shape), layer.running_mean.clone(), layer.running_var.clone(), tuple(x.grad.shape))
    # float16 in, float16 out, computed in float32 (as normlib.functional.batch_norm).
    g = torch.Generator().manual_seed(7)
    full = torch.randn(6, 3, 5, generator=g).to(torch.float16)
    rows = _rows([2, 4] if world_size == 2 else [2, 2, 2], rank)
    out["float16"] = D.SyncBatchNorm(3)(full[rows]).detach()
    return out


def test_edge_cases_agree_across_processes():
    for world_size in (2, 3):
        results = launch(edge_worker, world_size, timeout=60)
        for rank, r in enumerate(results):
            assert r["one value"] is not None, f"rank {rank} did not raise on 1 value per channel"
            assert "more than 1 value per channel" in r["one value"] and f"over all {world_size} processes" in r["one value"]
            shape, rm, rv, grad_shape = r["all empty"]
            assert shape == (0, 2, 4) and grad_shape == (0, 2, 4)
            assert torch.equal(rm, torch.zeros(2)) and torch.equal(rv, torch.ones(2))
        full = torch.randn(6, 3, 5, generator=torch.Generator().manual_seed(7)).to(torch.float16)
        ref = torch.nn.functional.batch_norm(full, None, None, training=True)
        ours = torch.cat([r["float16"] for r in results])
        assert ours.dtype == torch.float16
        assert_close_elementwise(ours, ref, 0.0, f"float16, {world_size} processes", 1e-3)


def world_of_one_worker(rank, world_size):
    layer = D.SyncBatchNorm(3)
    x = torch.randn(5, 3, 2, generator=torch.Generator().manual_seed(3))
    with traffic() as calls:
        y = layer(x)
    return D.is_synchronized(), calls, y.detach()


def test_a_group_of_one_process_is_plain_batchnorm():
    (synchronized, calls, y), = launch(world_of_one_worker, 1, timeout=60)
    x = torch.randn(5, 3, 2, generator=torch.Generator().manual_seed(3))
    assert not synchronized and calls == []
    torch.testing.assert_close(y, torch.nn.functional.batch_norm(x, None, None, training=True))


# --------------------------------------------------------------------------- launch: failures end cleanly

def failing_worker(rank, world_size, how):
    if rank == 1:
        if how == "raise":
            raise ValueError("rank 1 gives up on purpose")
        if how == "exit":
            import os
            os._exit(3)
        if how == "hang":
            time.sleep(3600)
    dist.barrier()          # the others wait for rank 1 in a collective that never completes
    return rank


@pytest.mark.parametrize("how, timeout, message", [
    ("raise", 60, r"rank 1 of 3 failed:(.|\n)*ValueError: rank 1 gives up on purpose"),
    ("exit", 60, r"rank 1 of 3 exited with code 3 without returning a result"),
    ("hang", 10, r"ranks? .*1.* of 3 did not finish within timeout=10 s"),
])
def test_launch_stops_every_process_when_one_fails(how, timeout, message):
    started = time.monotonic()
    with pytest.raises(WorkerError, match=message):
        launch(failing_worker, 3, how, timeout=timeout)
    # Bounded: a failing rank is reported as soon as it fails, not when the timeout (which also
    # bounds the others' collectives) runs out; a hanging one when the timeout runs out.
    assert time.monotonic() - started < 40
    assert multiprocessing.active_children() == [], "launch left processes running"


def test_launch_rejects_bad_arguments():
    with pytest.raises(ValueError, match="world_size must be a positive int, got 0"):
        launch(failing_worker, 0)
    with pytest.raises(TypeError, match="fn must be a function"):
        launch("not a function", 2)
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds, got -1"):
        launch(failing_worker, 2, timeout=-1)


# --------------------------------------------------------------------------- in one process (no group)

def test_outside_a_process_group_it_is_batchnorm():
    assert not dist.is_initialized() and not D.is_synchronized()
    assert "behaves exactly as ordinary BatchNorm" in " ".join(D.SyncBatchNorm.__doc__.split())
    torch.manual_seed(0)
    for shape, cls in [((6, 4), nn.BatchNorm1d), ((6, 4, 5), nn.BatchNorm1d), ((6, 4, 3, 3), nn.BatchNorm2d),
                       ((3, 4, 2, 3, 3), nn.BatchNorm3d)]:
        ours, ref = D.SyncBatchNorm(4, momentum=None), cls(4, momentum=None)
        with torch.no_grad():
            ref.weight.uniform_(0.5, 1.5)
            ref.bias.uniform_(-1, 1)
        ours.load_state_dict(ref.state_dict())
        for step in range(3):
            ours.train(step < 2)
            ref.train(step < 2)
            x = torch.randn(shape) * 3 + 1
            xo, xr = x.clone().requires_grad_(), x.clone().requires_grad_()
            up = torch.randn(shape)
            with traffic() as calls:
                (ours(xo) * up).sum().backward()
            (ref(xr) * up).sum().backward()
            assert calls == []
            torch.testing.assert_close(xo.grad, xr.grad, atol=1e-5, rtol=1e-5)
        for key, value in ref.state_dict().items():
            torch.testing.assert_close(ours.state_dict()[key], value, atol=1e-6, rtol=1e-6, msg=key)
        torch.testing.assert_close(ours.weight.grad, ref.weight.grad, atol=1e-4, rtol=1e-5)


def test_functional_form_outside_a_process_group():
    x = torch.randn(8, 3, 4)
    rm, rv = torch.zeros(3), torch.ones(3)
    rm2, rv2 = torch.zeros(3), torch.ones(3)
    torch.testing.assert_close(D.sync_batch_norm(x, rm, rv, training=True, momentum=0.3),
                               torch.nn.functional.batch_norm(x, rm2, rv2, training=True, momentum=0.3))
    torch.testing.assert_close((rm, rv), (rm2, rv2))


def test_errors_name_what_was_expected():
    with pytest.raises(NormInputError, match=r"at least 2 dimensions \(N, C, \*\), but got a 1D input of shape \(4,\)"):
        D.SyncBatchNorm(4)(torch.randn(4))
    with pytest.raises(NormInputError, match=r"at least one channel .* shape \(4, 0, 2\)"):
        D.SyncBatchNorm(0)(torch.randn(4, 0, 2))
    with pytest.raises(NormInputError, match=r"running_mean should have shape \(5,\) .* but got running_mean of shape \(3,\)"):
        D.SyncBatchNorm(3)(torch.randn(4, 5))
    with pytest.raises(TypeError, match="expects a torch.nn.Module, got str"):
        D.SyncBatchNorm.convert_sync_batchnorm("resnet")


def test_convert_sync_batchnorm_keeps_parameters_and_buffers():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(),
        nn.Sequential(normlib.BatchNorm2d(4, momentum=None), nn.InstanceNorm2d(4), normlib.autograd.BatchNorm2d(4)),
        nn.Flatten(), nn.Linear(4 * 6 * 6, 5), nn.BatchNorm1d(5, affine=False),
    )
    model(torch.randn(8, 3, 8, 8))      # one training step: non-trivial running statistics
    model[3][0].eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tensors = {k: v for k, v in model.state_dict(keep_vars=True).items()}
    x = torch.randn(8, 3, 8, 8)
    model.eval()
    expected = model(x)
    model.train()
    model[3][0].eval()
    converted = D.SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model
    kinds = [type(m).__name__ for m in model.modules() if "Norm" in type(m).__name__]
    assert kinds == ["SyncBatchNorm", "SyncBatchNorm", "InstanceNorm2d", "SyncBatchNorm", "SyncBatchNorm"], kinds
    after = model.state_dict(keep_vars=True)
    assert list(after) == list(before), "state_dict keys changed"
    for key, value in after.items():
        assert value is tensors[key], f"{key} is a new tensor, not the original one"
        assert torch.equal(value, before[key]), key
    assert model[3][0].momentum is None and not model[3][0].training and model[1].training
    assert model[6].weight is None and not model[6].affine
    model.eval()
    torch.testing.assert_close(model(x), expected)       # eval: the same running statistics
    single = D.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(7, eps=1e-3, track_running_stats=False))
    assert isinstance(single, D.SyncBatchNorm) and single.eps == 1e-3 and single.running_mean is None


def test_split_steps_rejects_a_split_that_does_not_fit():
    """(Chapter 9's demo function; the notebook runs it live, nbval checks its printed results.)"""
    x = torch.zeros(4, 3)
    with pytest.raises(ValueError, match=r"each split must give 2 row counts adding up to 4, got \[1, 1\]"):
        split_steps(0, 2, x, x, [[1, 1]])
    with pytest.raises(ValueError, match=r"got \[4\]"):
        split_steps(0, 2, x, x, [[4]])
