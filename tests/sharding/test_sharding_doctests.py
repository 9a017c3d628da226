"""Runs the docstring examples of the mesh and sharding packages (they are part of the API)."""

import doctest
import importlib

import pytest

MODULES = [
    "xla_spmd.mesh", "xla_spmd.mesh.axis", "xla_spmd.iota", "xla_spmd.mesh.mesh",
    "xla_spmd.mesh.text", "xla_spmd.ir.hlo_sharding", "xla_spmd.sharding",
    "xla_spmd.sharding.tensor_sharding", "xla_spmd.sharding.partition_spec",
    "xla_spmd.sharding.named_sharding",
    "xla_spmd.sharding.sdy_text", "xla_spmd.sharding.gspmd", "xla_spmd.sharding.visualize",
    "xla_spmd.sharding.manual",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
