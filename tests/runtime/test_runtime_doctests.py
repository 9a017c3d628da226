"""Runs the docstring examples of the runtime, the pipeline and jit (they are part of the
API)."""

import doctest
import importlib

import pytest

MODULES = ["xla_spmd.runtime.array_interface", "xla_spmd.runtime.sharded_array",
           "xla_spmd.runtime.jit_runtime", "xla_spmd.runtime.devices",
           "xla_spmd.runtime.executable", "xla_spmd.frontend.jit", "xla_spmd.pipeline",
           "xla_spmd.api", "xla_spmd.ir.custom_calls"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
