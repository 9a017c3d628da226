"""Runs the docstring examples of the runtime and of jit (they are part of the API)."""

import doctest
import importlib

import pytest

MODULES = ["xla_spmd.runtime.array_interface", "xla_spmd.runtime.sharded_array",
           "xla_spmd.runtime.jit_runtime", "xla_spmd.runtime.devices", "xla_spmd.frontend.jit"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    import xla_spmd.runtime  # noqa: F401 (installs the executor, as `import xla_spmd` does)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
