"""Every public function and class of normlib has a docstring with an example; the functional
API's docstrings also give the formula and the axes reduced per layout."""

from __future__ import annotations

import inspect

import pytest

import normlib
from normlib import axes, dyt, fold, functional, modules, stats

PUBLIC = [(m, name) for m in (axes, dyt, fold, functional, modules, stats) for name in m.__all__
          if inspect.isfunction(getattr(m, name)) or inspect.isclass(getattr(m, name))]


@pytest.mark.parametrize("module,name", PUBLIC, ids=[f"{m.__name__}.{n}" for m, n in PUBLIC])
def test_public_api_has_docstring_with_example(module, name):
    obj = getattr(module, name)
    doc = inspect.getdoc(obj) or ""
    assert len(doc) > 40, f"{module.__name__}.{name} has no real docstring"
    if isinstance(obj, type) and issubclass(obj, Exception):
        return   # exceptions document when they are raised; no example to run
    assert ">>>" in doc, f"{module.__name__}.{name}: docstring has no example"


@pytest.mark.parametrize("name", ["layer_norm", "batch_norm", "instance_norm", "group_norm", "rms_norm"])
def test_functional_docstrings_give_formula_and_axes(name):
    doc = inspect.getdoc(getattr(functional, name))
    assert "math::" in doc, f"{name}: no formula"
    assert "Axes reduced" in doc or "pools the same axes" in doc, f"{name}: no axes per layout"
    assert "(N, C" in doc or "(B, L, D)" in doc, f"{name}: no layout named"
    assert "Chapter" in doc, f"{name}: does not name the chapter that derives it"


def test_package_exports():
    for name in ("LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
                 "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"):
        assert hasattr(normlib, name)
