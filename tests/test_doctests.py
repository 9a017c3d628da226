"""Runs the docstring examples of every module of the package: they are part of the API,
and an example that no test runs drifts away from the code it shows.

Modules are found by walking the installed packages (``xla_spmd`` and the folders installed
into it: mesh/, collectives/, backends/), so a new module's examples run without being listed
anywhere. Each test starts from the suite's fresh state (tests/conftest.py: 8 devices, the
default options), as an example a user pastes into a new interpreter would.
"""

import doctest
import importlib
import pkgutil

import pytest

ROOTS = ("xla_spmd", "xla_spmd.mesh", "xla_spmd.collectives", "xla_spmd.backends")


def _modules_with_examples() -> list[str]:
    names: set[str] = set()
    for root in ROOTS:
        package = importlib.import_module(root)
        names.add(root)
        names.update(info.name for info in pkgutil.walk_packages(package.__path__, root + ".")
                     if not info.name.endswith(".__main__"))  # __main__ runs the CLI
    finder = doctest.DocTestFinder()
    return sorted(name for name in names
                  if any(test.examples for test in finder.find(importlib.import_module(name))))


MODULES = _modules_with_examples()


def test_the_walk_finds_every_package():
    # a sanity check of the discovery itself: each root and its usual modules are there
    for name in ("xla_spmd.runtime.sharded_array", "xla_spmd.mesh.mesh",
                 "xla_spmd.collectives.shm", "xla_spmd.backends.cpu.fusion"):
        assert name in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
