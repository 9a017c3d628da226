"""Runs the docstring examples of the propagation package (they are part of the API)."""

import doctest
import importlib

import pytest

MODULES = [
    "xla_spmd.propagation", "xla_spmd.propagation.factors", "xla_spmd.propagation.registry",
    "xla_spmd.propagation.propagate", "xla_spmd.propagation.provenance",
    "xla_spmd.propagation.rules_compute", "xla_spmd.propagation.splitting",
    "xla_spmd.propagation.constraints", "xla_spmd.propagation.rebuild",
    "xla_spmd.propagation.calls", "xla_spmd.propagation.groups",
    "xla_spmd.propagation.unreduced", "xla_spmd.ir.lowered",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
    assert result.attempted > 0
