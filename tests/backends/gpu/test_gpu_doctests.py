"""Runs the docstring examples of the GPU backend's modules (host-only: the renderer, the
emitter and the executable on the numpy stand-in)."""

import doctest
import importlib

import pytest

MODULES = ["xla_spmd.backends.gpu.renderer", "xla_spmd.backends.gpu.emitter",
           "xla_spmd.backends.gpu.executable", "xla_spmd.backends.gpu.compiler"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
