"""Bytes moved: the classic patterns hit the textbook minimum; XLA's programs are matched."""

import json
from pathlib import Path

import numpy as np
import pytest
from classic_patterns import PATTERNS, XLA_BY_HAND
from spmd_oracle import check

from xla_spmd.errors import ParseError
from xla_spmd.ir import parse_hlo
from xla_spmd.mesh import make_mesh
from xla_spmd.partition import collective_table, plan_reshard
from xla_spmd.partition.report import totals
from xla_spmd.sharding import TensorSharding

DATA = Path(__file__).resolve().parents[1] / "data" / "jax"


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_classic_pattern_moves_textbook_minimum(name):
    module, minimum = PATTERNS[name]()
    rng = np.random.default_rng(0)
    args = [0.3 * rng.standard_normal(p.shape.dims).astype(np.float32)
            for p in module.entry.parameters]
    spmd = check(module, args, rtol=1e-4, atol=1e-4)
    assert totals(collective_table(spmd))["total"] == pytest.approx(minimum)


def _sharded_cases():
    manifest = json.loads((DATA / "MANIFEST.json").read_text())
    return [c["name"] for c in manifest["cases"] if c["sharded"]]


def _xla_bytes(case):
    try:
        return totals(collective_table(parse_hlo(
            (DATA / case / f"{case}.optimized.hlo").read_text())))["total"]
    except ParseError:
        return XLA_BY_HAND[case]


@pytest.mark.parametrize("case", _sharded_cases())
def test_jax_program_exact_and_no_more_bytes_than_xla(case):
    module = parse_hlo((DATA / case / f"{case}.hlo").read_text())
    arrays = np.load(DATA / case / f"{case}.npz")
    args = [arrays[f"arg{i}"] for i in range(len(module.entry.parameters))]
    outs = [arrays[f"out{i}"] for i in range(sum(k.startswith("out") for k in arrays))]
    spmd = check(module, args, propagate=True, rtol=1e-4, atol=1e-5, expected=outs)
    assert totals(collective_table(spmd))["total"] <= _xla_bytes(case)


def test_planner_formulas():
    mesh = make_mesh({"x": 2, "y": 4})

    def plan(src, dst, dims=(16, 8)):
        return plan_reshard(TensorSharding(mesh, src), TensorSharding(mesh, dst), dims, 4)
    # all-gather over y of f32[16,8] sharded 4 ways on dim 0: (n-1)/n x result bytes
    assert plan([["y"], []], [[], []]).bytes == 3 / 4 * 16 * 8 * 4
    # dynamic-slice: free
    assert plan([[], []], [["x"], ["y"]]).bytes == 0
    # all-to-all: (n-1)/n x local bytes
    assert plan([["y"], []], [[], ["y"]]).bytes == 3 / 4 * 4 * 8 * 4
    # all-reduce of partial sums: 2(n-1)/n; reduce-scatter when the target is sharded
    partial = TensorSharding(mesh, [[], []], unreduced=["y"])
    assert plan_reshard(partial, TensorSharding(mesh, [[], []]), (16, 8), 4).bytes == \
        2 * 3 / 4 * 16 * 8 * 4
    assert plan_reshard(partial, TensorSharding(mesh, [["y"], []]), (16, 8), 4).bytes == \
        3 / 4 * 16 * 8 * 4
    # same tiles on another device order: one collective-permute of the local shard
    square = make_mesh({"a": 2, "b": 2})
    swap = plan_reshard(TensorSharding(square, [["a"], ["b"]]),
                        TensorSharding(square, [["b"], ["a"]]), (4, 4), 4)
    assert [s.kind for s in swap.steps] == ["collective-permute"] and swap.bytes == 16
    # tiles of another shape: XLA splits "y" into sub-axes, all-to-alls its minor half and
    # permutes the [16,16] tiles into place (1/2 x 1024 + 1024 B); here each device gets
    # the [16,8] halves of its tile it lacks (two from another device: 2 x 512 B)
    turn = plan_reshard(TensorSharding(mesh, [["x"], ["y"]]), TensorSharding(mesh, [["y"], ["x"]]),
                        (64, 32), 4)
    assert [s.kind for s in turn.steps] == ["tile-permutes"]
    assert turn.bytes == 2 * 16 * 8 * 4
    # several axes of a dim move in one all-to-all
    rows_to_cols = plan([["x", "y"], []], [[], ["x", "y"]], (16, 64))
    assert [str(s) for s in rows_to_cols.steps] == ['all-to-all "x","y" 0->1 (448 B)']
    # partial sums wanted on a dim that pads 3 -> 8: one all-reduce (then a free slice)
    # moves less than a reduce-scatter of the padded operand
    eight = make_mesh({"x": 8})
    padded = plan_reshard(TensorSharding(eight, [[], []], unreduced=["x"]),
                          TensorSharding(eight, [["x"], []]), (3, 48), 4)
    assert [s.kind for s in padded.steps] == ["all-reduce", "slice"]
