"""Every `sharding={...}` XLA printed in tests/data/jax parses, converts to an axis-based
sharding and prints back identically (issue: mesh and axis-based shardings, "done when")."""

from pathlib import Path

import pytest

from xla_spmd.ir import TupleShape
from xla_spmd.ir.hlo_parser import parse_hlo
from xla_spmd.ir.hlo_sharding import HloSharding
from xla_spmd.sharding import hlo_to_axes

DATA = Path(__file__).resolve().parent.parent / "data" / "jax"


def printed_shardings():
    found = {}
    for path in sorted(DATA.glob("*/*.hlo")):
        module = parse_hlo(path.read_text(), str(path))
        for computation in module.computations:
            for inst in computation.instructions:
                if isinstance(inst.sharding, HloSharding):
                    leaves = (inst.shape.leaves() if isinstance(inst.shape, TupleShape)
                              else (inst.shape,))
                    found.setdefault(str(inst.sharding), (inst.sharding, leaves, path.name))
    return found


SHARDINGS = printed_shardings()


def test_the_data_has_many_forms():
    texts = " ".join(SHARDINGS)
    for form in ("last_tile_dim_replicate", "T(1,0)", "{replicated}", "{manual}", "{{"):
        assert form in texts


@pytest.mark.parametrize("text", sorted(SHARDINGS))
def test_converts_to_axes_and_back_identically(text):
    sharding, leaves, source = SHARDINGS[text]
    elements = sharding.elements if sharding.is_tuple else (sharding,)
    assert len(elements) == len(leaves), source
    back = []
    for element, leaf in zip(elements, leaves):
        imported = hlo_to_axes(element, rank=leaf.rank)
        back.append(imported.to_hlo_sharding())
    printed = str(HloSharding.tuple_(back)) if sharding.is_tuple else str(back[0])
    assert printed == text
