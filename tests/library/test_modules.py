"""normlib modules are drop-in replacements for torch.nn's: same state_dict, same outputs,
same running statistics after several training steps, train/eval from self.training."""

from __future__ import annotations

import pytest
import torch
import torch.nn as tnn
from torch.autograd import gradcheck

import normlib
import normlib.functional as NF

# (torch class, normlib class, constructor kwargs, input shape)
CONFIGS = [
    ("LayerNorm", dict(normalized_shape=6), (3, 5, 6)),
    ("LayerNorm", dict(normalized_shape=[4, 6], bias=False), (3, 4, 6)),
    ("LayerNorm", dict(normalized_shape=torch.Size([6]), elementwise_affine=False), (2, 6)),
    ("RMSNorm", dict(normalized_shape=6), (3, 5, 6)),
    ("RMSNorm", dict(normalized_shape=(5, 6), eps=1e-6), (3, 5, 6)),
    ("RMSNorm", dict(normalized_shape=6, elementwise_affine=False), (4, 6)),
    ("GroupNorm", dict(num_groups=2, num_channels=6), (3, 6, 5)),
    ("GroupNorm", dict(num_groups=3, num_channels=6, affine=False), (3, 6, 2, 2)),
    ("GroupNorm", dict(num_groups=3, num_channels=6, bias=False), (3, 6, 2, 2)),
    ("BatchNorm1d", dict(num_features=4), (5, 4)),
    ("BatchNorm1d", dict(num_features=4, momentum=None), (5, 4, 3)),
    ("BatchNorm1d", dict(num_features=4, momentum=0.0), (5, 4)),
    ("BatchNorm1d", dict(num_features=4, momentum=-0.5), (5, 4)),
    ("BatchNorm2d", dict(num_features=3), (4, 3, 2, 2)),
    ("BatchNorm2d", dict(num_features=3, affine=False), (4, 3, 2, 2)),
    ("BatchNorm2d", dict(num_features=3, bias=False), (4, 3, 2, 2)),
    ("BatchNorm2d", dict(num_features=3, track_running_stats=False), (4, 3, 2, 2)),
    ("BatchNorm3d", dict(num_features=2, momentum=None, eps=1e-3), (2, 2, 2, 3, 2)),
    ("InstanceNorm1d", dict(num_features=4), (3, 4, 5)),
    ("InstanceNorm1d", dict(num_features=4, affine=True, track_running_stats=True), (3, 4, 5)),
    ("InstanceNorm1d", dict(num_features=4, affine=True, track_running_stats=True), (4, 5)),  # no batch axis
    ("InstanceNorm2d", dict(num_features=3, affine=True), (2, 3, 4, 4)),
    ("InstanceNorm2d", dict(num_features=3, affine=True, bias=False), (2, 3, 4, 4)),
    ("InstanceNorm2d", dict(num_features=3, track_running_stats=True, momentum=None), (2, 3, 4, 4)),
    ("InstanceNorm3d", dict(num_features=2, affine=True, track_running_stats=True), (2, 2, 3, 3, 3)),
]


def _ids(cfg):
    name, kwargs, shape = cfg
    return f"{name}-{'-'.join(f'{k}={v}' for k, v in kwargs.items())}-{shape}"


def _randomize(module: tnn.Module, gen: torch.Generator) -> None:
    """Random γ, β and running statistics: ones and zeros hide bugs."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.5 + (1.0 if name == "weight" else 0.0))
        for name, b in module.named_buffers():
            if name == "running_mean":
                b.copy_(torch.randn(b.shape, generator=gen, dtype=b.dtype))
            elif name == "running_var":
                b.copy_(torch.rand(b.shape, generator=gen, dtype=b.dtype) + 0.5)


@pytest.mark.parametrize("cfg", CONFIGS, ids=[_ids(c) for c in CONFIGS])
def test_module_is_drop_in(cfg):
    name, kwargs, shape = cfg
    gen = torch.Generator().manual_seed(1)
    theirs = getattr(tnn, name)(**kwargs, dtype=torch.float64)
    _randomize(theirs, gen)
    ours = getattr(normlib, name)(**kwargs, dtype=torch.float64)

    # state_dict: the same keys, loads strictly both ways
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict(), strict=True)
    back = getattr(tnn, name)(**kwargs, dtype=torch.float64)
    back.load_state_dict(ours.state_dict(), strict=True)
    for k, v in theirs.state_dict().items():
        assert torch.equal(back.state_dict()[k], v), k

    opt_t = torch.optim.SGD(theirs.parameters(), lr=0.1) if list(theirs.parameters()) else None
    opt_o = torch.optim.SGD(ours.parameters(), lr=0.1) if list(ours.parameters()) else None
    for step in range(4):  # several training steps: forward, backward, parameter update
        x = torch.randn(shape, generator=gen, dtype=torch.float64) * (1 + step) + step
        target = torch.randn(shape, generator=gen, dtype=torch.float64)
        xt, xo = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
        yt, yo = theirs(xt), ours(xo)
        torch.testing.assert_close(yo, yt, rtol=1e-10, atol=1e-10, equal_nan=True)
        ((yt - target) ** 2).mean().backward()
        ((yo - target) ** 2).mean().backward()
        torch.testing.assert_close(xo.grad, xt.grad, rtol=1e-10, atol=1e-10, equal_nan=True)
        for (n, po), (_, pt) in zip(ours.named_parameters(), theirs.named_parameters()):
            torch.testing.assert_close(po.grad, pt.grad, rtol=1e-10, atol=1e-10, equal_nan=True, msg=f"grad of {n}")
        if opt_t:
            for opt in (opt_t, opt_o):
                opt.step()
                opt.zero_grad()
        for k, v in theirs.state_dict().items():
            torch.testing.assert_close(ours.state_dict()[k], v, rtol=1e-10, atol=1e-10, equal_nan=True, msg=f"{k} after step {step}")

    theirs.eval()
    ours.eval()
    x = torch.randn(shape, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(ours(x), theirs(x), rtol=1e-10, atol=1e-10, equal_nan=True)
    for k, v in theirs.state_dict().items():  # eval changes nothing
        torch.testing.assert_close(ours.state_dict()[k], v, rtol=1e-10, atol=1e-10, equal_nan=True)


def test_train_eval_follows_self_training_not_grad_mode():
    bn = normlib.BatchNorm1d(2)
    x = torch.randn(8, 2) * 3 + 5
    with torch.no_grad():                    # training mode without gradients still updates
        bn(x)
    assert bn.num_batches_tracked.item() == 1 and not torch.equal(bn.running_mean, torch.zeros(2))
    bn.eval()
    before = bn.running_mean.clone()
    y = bn(x)                                # eval mode with gradients enabled uses running stats
    assert torch.equal(bn.running_mean, before) and bn.num_batches_tracked.item() == 1
    expected = (x - bn.running_mean) / torch.sqrt(bn.running_var + bn.eps)
    torch.testing.assert_close(y, expected)


def test_momentum_none_is_the_cumulative_average():
    """With momentum=None, running_mean after k batches is the plain average of the k batch means
    (computed here directly, not by torch)."""
    torch.manual_seed(0)
    bn = normlib.BatchNorm1d(3, momentum=None, dtype=torch.float64)
    batches = [torch.randn(6, 3, dtype=torch.float64) * (i + 1) + i for i in range(5)]
    for b in batches:
        bn(b)
    means = torch.stack([b.mean(0) for b in batches])
    unbiased = torch.stack([b.var(0, correction=1) for b in batches])
    # the first batch replaces the initial (0, 1) entirely: factor 1/1
    torch.testing.assert_close(bn.running_mean, means.mean(0), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(bn.running_var, unbiased.mean(0), rtol=1e-12, atol=1e-12)
    assert bn.num_batches_tracked.item() == 5


def test_running_var_is_unbiased_and_forward_biased():
    bn = normlib.BatchNorm1d(1, momentum=1.0, eps=1e-12, dtype=torch.float64)
    x = torch.tensor([[2.0], [4.0], [6.0], [8.0]], dtype=torch.float64)
    y = bn(x)
    assert bn.running_var.item() == pytest.approx(20.0 / 3.0)      # Σ(x−5)² / (n − 1)
    assert y.flatten().tolist() == pytest.approx([(v - 5.0) / 5.0 ** 0.5 for v in (2, 4, 6, 8)])  # / sqrt(Σ/n)


def test_old_state_dict_without_num_batches_tracked_loads():
    bn = normlib.BatchNorm2d(3)
    from collections import OrderedDict
    sd = OrderedDict((k, v) for k, v in tnn.BatchNorm2d(3).state_dict().items() if k != "num_batches_tracked")
    sd._metadata = {"": {"version": 1}}  # what torch saved before num_batches_tracked existed
    bn.load_state_dict(sd, strict=True)
    assert bn.num_batches_tracked.item() == 0


def _without_count(version):
    """A BatchNorm1d(3) state_dict without num_batches_tracked: a plain dict (no version) or one
    whose metadata says ``version``."""
    from collections import OrderedDict
    sd = OrderedDict((k, v) for k, v in tnn.BatchNorm1d(3).state_dict().items() if k != "num_batches_tracked")
    if version is not None:
        sd._metadata = {"": {"version": version}}
    return sd


@pytest.mark.parametrize("version", [None, 1, 2], ids=["plain-dict", "version-1", "version-2"])
@pytest.mark.parametrize("strict", [False, True])
def test_state_dict_without_num_batches_tracked_keeps_the_modules_count(version, strict):
    """A state_dict without num_batches_tracked leaves the module's own count as it is, as torch does
    (a reset to 0 would restart momentum=None's cumulative average). Only a current-version
    (2) state_dict reports the key as missing, and so fails to load strictly."""
    results = {}
    for lib in (tnn, normlib):
        bn = lib.BatchNorm1d(3, momentum=None)
        bn.num_batches_tracked.fill_(5)
        error, missing = None, None
        try:
            missing = bn.load_state_dict(_without_count(version), strict=strict).missing_keys
        except RuntimeError as e:
            error = "Missing key(s)" in str(e) and "num_batches_tracked" in str(e)
        results[lib.__name__] = (int(bn.num_batches_tracked), error, missing)
    assert results["normlib"] == results["torch.nn"], (
        f"after loading (num_batches_tracked, strict error, missing keys): normlib {results['normlib']}, "
        f"torch {results['torch.nn']}")
    assert results["normlib"][0] == 5, f"num_batches_tracked became {results['normlib'][0]}, expected the module's 5"


def test_cumulative_average_goes_on_after_a_partial_load():
    """momentum=None after loading new γ/β only (strict=False): the average goes on over all batches."""
    torch.manual_seed(0)
    batches = [torch.randn(6, 3, dtype=torch.float64) + i for i in range(4)]
    layers = {lib.__name__: lib.BatchNorm1d(3, momentum=None, dtype=torch.float64) for lib in (tnn, normlib)}
    for bn in layers.values():
        for b in batches[:2]:
            bn(b)
        bn.load_state_dict({"weight": torch.full((3,), 2.0, dtype=torch.float64)}, strict=False)
        for b in batches[2:]:
            bn(b)
    ours, theirs = layers["normlib"], layers["torch.nn"]
    assert int(ours.num_batches_tracked) == int(theirs.num_batches_tracked) == 4
    torch.testing.assert_close(ours.running_mean, torch.stack([b.mean(0) for b in batches]).mean(0),
                               rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ours.running_mean, theirs.running_mean, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["LayerNorm", "RMSNorm"])
def test_empty_normalized_shape_raises_at_forward_like_torch(name):
    """torch builds LayerNorm(()) and RMSNorm(()) (a scalar γ) and refuses only the forward pass."""
    x = torch.randn(2, 3)
    theirs, ours = getattr(tnn, name)(()), getattr(normlib, name)(())
    assert ours.normalized_shape == theirs.normalized_shape == ()
    assert [tuple(p.shape) for p in ours.parameters()] == [tuple(p.shape) for p in theirs.parameters()]
    with pytest.raises(RuntimeError) as torch_error:
        theirs(x)
    with pytest.raises(RuntimeError, match="^Expected normalized_shape to be at least 1-dimensional") as ours_error:
        ours(x)
    assert "()" in str(ours_error.value) or "[]" in str(ours_error.value), ours_error.value
    assert str(torch_error.value).split(",")[0] == str(ours_error.value).split(",")[0]


@pytest.mark.parametrize("shape", [(2, 4, 3), (4, 3)], ids=["batched", "unbatched"])
def test_instance_norm_warns_that_num_features_is_unused(shape):
    """affine=False, no running statistics: num_features is not used, and a channel count that
    differs from it is a warning (torch's UserWarning), not an error."""
    x = torch.randn(shape)
    dim = len(shape) - 2
    with pytest.warns(UserWarning) as theirs:
        y_t = tnn.InstanceNorm1d(5)(x)
    with pytest.warns(UserWarning, match=f"input's size at dim={dim} does not match num_features") as ours:
        y_o = normlib.InstanceNorm1d(5)(x)
    assert len(ours) == len(theirs) == 1
    assert "affine=False" in str(ours[0].message) and "5" in str(ours[0].message), ours[0].message
    # torch's whole sentence first: PyTorch's own test_nn looks for "which is not used because affine=False"
    assert str(ours[0].message).startswith(str(theirs[0].message)), (ours[0].message, theirs[0].message)
    assert "which is not used because affine=False" in str(ours[0].message)
    torch.testing.assert_close(y_o, y_t)


def test_instance_norm_channel_error_names_the_dim_torch_names():
    """An unbatched (C, L) input's channels are at dim 0, and torch's message says so."""
    for shape, dim in (((2, 4, 3), 1), ((4, 3), 0)):
        with pytest.raises(ValueError, match=f"^expected input's size at dim={dim} to match num_features \\(5\\), "
                                             f"but got: 4"):
            normlib.InstanceNorm1d(5, affine=True)(torch.randn(shape))


def test_group_norm_num_groups_checked_when_torch_checks_it():
    """torch's GroupNorm(-2, 4) builds (4 is divisible by -2) and fails at the forward pass;
    GroupNorm(0, 4) fails at once (division by zero)."""
    x = torch.randn(2, 4)
    for lib in (tnn, normlib):
        layer = lib.GroupNorm(-2, 4)
        with pytest.raises(RuntimeError, match="num groups to be greater than 0"):
            layer(x)
        with pytest.raises(ZeroDivisionError):
            lib.GroupNorm(0, 4)


def test_factory_kwargs_and_repr():
    ln = normlib.LayerNorm((2, 3), dtype=torch.float64)
    assert ln.weight.dtype == torch.float64 and ln.weight.shape == (2, 3)
    for name, args, kwargs in [("LayerNorm", ((2, 3),), {}), ("LayerNorm", (3,), {"bias": False}),
                               ("RMSNorm", (3,), {}), ("GroupNorm", (2, 4), {}), ("BatchNorm2d", (4,), {}),
                               ("InstanceNorm1d", (3,), {}), ("BatchNorm1d", (3,), {"momentum": None})]:
        assert repr(getattr(normlib, name)(*args, **kwargs)) == repr(getattr(tnn, name)(*args, **kwargs))


# ------------------------------------------------------------------ gradcheck, every function, float64

def _d(*shape, gen):
    return torch.randn(*shape, generator=gen, dtype=torch.float64, requires_grad=True)


def _gradcheck_cases():
    g = torch.Generator().manual_seed(3)
    return {
        "layer_norm": (lambda x, w, b: NF.layer_norm(x, (3, 4), w, b), (_d(2, 3, 4, gen=g), _d(3, 4, gen=g), _d(3, 4, gen=g))),
        "rms_norm": (lambda x, w: NF.rms_norm(x, (4,), w, eps=1e-6), (_d(3, 5, 4, gen=g), _d(4, gen=g))),
        "group_norm": (lambda x, w, b: NF.group_norm(x, 2, w, b), (_d(3, 4, 5, gen=g), _d(4, gen=g), _d(4, gen=g))),
        "batch_norm_train": (lambda x, w, b: NF.batch_norm(x, None, None, w, b, training=True),
                             (_d(4, 3, 2, gen=g), _d(3, gen=g), _d(3, gen=g))),
        "batch_norm_eval": (lambda x, w, b: NF.batch_norm(x, torch.zeros(3, dtype=torch.float64),
                                                          torch.ones(3, dtype=torch.float64) * 2, w, b),
                            (_d(4, 3, gen=g), _d(3, gen=g), _d(3, gen=g))),
        "instance_norm": (lambda x, w, b: NF.instance_norm(x, None, None, w, b),
                          (_d(2, 3, 5, gen=g), _d(3, gen=g), _d(3, gen=g))),
    }


@pytest.mark.parametrize("name", list(_gradcheck_cases()))
def test_gradcheck(name):
    fn, inputs = _gradcheck_cases()[name]
    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-7)
