"""Which names of JAX's ``jax.numpy``, ``jax.lax`` and ``jax.nn`` exist here.

tests/data/jax_names.json lists JAX's public names (scripts/gen_jax_names.py, JAX 0.10);
tests/data/jax_names_covered.json is our list: the names among them that xla_spmd.numpy,
xla_spmd.lax and xla_spmd.nn provide. A name on our list that disappears fails the test; a
name added here is added to the list (regenerate it with ``python
tests/frontend/test_jax_coverage.py``). The README's "JAX users" section quotes the figures.
"""

import json
import re
from pathlib import Path

import pytest

import xla_spmd.lax as lax
import xla_spmd.nn as nn
import xla_spmd.numpy as xnp

ROOT = Path(__file__).resolve().parent.parent.parent
JAX_NAMES = json.loads((ROOT / "tests" / "data" / "jax_names.json").read_text())
COVERED_FILE = ROOT / "tests" / "data" / "jax_names_covered.json"
COVERED = json.loads(COVERED_FILE.read_text())
MODULES = {"numpy": xnp, "lax": lax, "nn": nn}


def current(namespace: str) -> list[str]:
    return [name for name in JAX_NAMES[namespace] if hasattr(MODULES[namespace], name)]


@pytest.mark.parametrize("namespace", sorted(MODULES))
def test_no_covered_name_disappears(namespace):
    gone = sorted(set(COVERED[namespace]) - set(current(namespace)))
    assert not gone, f"xla_spmd.{namespace} lost JAX names it had: {gone}"
    assert set(COVERED[namespace]) <= set(JAX_NAMES[namespace])


@pytest.mark.parametrize("namespace", sorted(MODULES))
def test_new_names_are_on_the_list(namespace):
    new = sorted(set(current(namespace)) - set(COVERED[namespace]))
    assert not new, (f"xla_spmd.{namespace} has JAX names not on the coverage list: {new}; "
                     "run python tests/frontend/test_jax_coverage.py and update the README")


def test_readme_quotes_the_figures():
    readme = (ROOT / "README.md").read_text()
    for namespace in MODULES:
        have, total = len(COVERED[namespace]), len(JAX_NAMES[namespace])
        pattern = rf"`jax\.{namespace}`: {have} of {total}\b"
        assert re.search(pattern, readme), f"README should say `jax.{namespace}`: {have} of " \
                                           f"{total}"


if __name__ == "__main__":
    COVERED_FILE.write_text(json.dumps({ns: current(ns) for ns in MODULES}, indent=0) + "\n")
    print({ns: f"{len(current(ns))} of {len(JAX_NAMES[ns])}" for ns in MODULES})
