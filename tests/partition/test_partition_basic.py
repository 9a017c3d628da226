"""Hand-written oracle cases: elementwise, dot, reduce and every reshard kind."""

import numpy as np
import pytest
from spmd_oracle import check

from xla_spmd.ir import F32, ArrayShape, Builder, Module
from xla_spmd.mesh import make_mesh
from xla_spmd.partition import collective_table
from xla_spmd.sharding import TensorSharding

MESHES = {"8": {"x": 8}, "2x4": {"x": 2, "y": 4}, "4x2": {"x": 4, "y": 2},
          "2x2x2": {"x": 2, "y": 2, "z": 2}}


def S(mesh, *dims, unreduced=()):
    return TensorSharding(mesh, [list(d) for d in dims], unreduced=list(unreduced))


def rng_args(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def kinds(module):
    return sorted(r["kind"] for r in collective_table(module))


def unary_program(mesh, shape, src, dst):
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, shape), sharding=S(mesh, *src))
    y = b.exponential(x, sharding=S(mesh, *src))
    z = b.negate(y, sharding=S(mesh, *dst))
    return Module.from_entry("m", b.build(z))


RESHARDS = [
    # (mesh, shape, src, dst, expected collective kinds)
    ("2x4", (8, 8), (["x"], []), ([], []), ["all-gather"]),
    ("2x4", (8, 8), ([], []), (["x"], ["y"]), []),
    ("2x4", (8, 8), (["x"], []), ([], ["x"]), ["all-to-all"]),
    ("2x4", (8, 8), (["x", "y"], []), (["x"], ["y"]), ["all-to-all"]),
    ("2x4", (8, 8), (["x"], ["y"]), (["y"], ["x"]), None),
    ("4x2", (8, 4), (["x"], []), (["y"], []), None),
    ("2x2x2", (8, 8), (["x"], ["y"]), (["y"], ["x"]), ["collective-permute"]),
    ("8", (8, 16), (["x"], []), ([], ["x"]), ["all-to-all"]),
    ("2x4", (7, 5), (["x"], ["y"]), ([], []), None),
    ("2x4", (7, 5), ([], []), (["y"], ["x"]), []),
    ("2x4", (10, 6), (["x", "y"], []), (["x"], []), None),
    ("2x4", (10, 6), (["x"], []), (["x", "y"], []), None),
    ("2x4", (7, 9), (["x"], []), ([], ["x"]), None),
    ("2x2x2", (6, 5), (["x", "z"], ["y"]), (["y"], ["z", "x"]), None),
]


@pytest.mark.parametrize("case", range(len(RESHARDS)))
def test_reshard(case):
    mesh_name, shape, src, dst, expected = RESHARDS[case]
    mesh = make_mesh(MESHES[mesh_name])
    module = unary_program(mesh, shape, src, dst)
    spmd = check(module, rng_args(shape))
    if expected is not None:
        assert kinds(spmd) == expected


def test_dot_megatron_column_row():
    mesh = make_mesh({"data": 2, "model": 4})
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (8, 16)), sharding=S(mesh, ["data"], []))
    w1 = b.parameter(ArrayShape(F32, (16, 32)), sharding=S(mesh, [], ["model"]))
    w2 = b.parameter(ArrayShape(F32, (32, 16)), sharding=S(mesh, ["model"], []))
    h = b.dot(x, w1, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,),
              sharding=S(mesh, ["data"], ["model"]))
    a = b.tanh(h, sharding=S(mesh, ["data"], ["model"]))
    y = b.dot(a, w2, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,),
              sharding=S(mesh, ["data"], []))
    spmd = check(Module.from_entry("m", b.build(y)), rng_args((8, 16), (16, 32), (32, 16)))
    rows = collective_table(spmd)
    assert [r["kind"] for r in rows] == ["all-reduce"]
    # (8/2 x 16) f32 partial sums, all-reduced over 4 devices: 2 * 3/4 * 256 bytes.
    assert rows[0]["bytes"] == 2 * 3 / 4 * 4 * 16 * 4


def test_dot_reduce_scatter_when_output_sharded():
    mesh = make_mesh({"x": 4})
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (8, 16)), sharding=S(mesh, [], ["x"]))
    w = b.parameter(ArrayShape(F32, (16, 8)), sharding=S(mesh, ["x"], []))
    y = b.dot(x, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,),
              sharding=S(mesh, ["x"], []))
    spmd = check(Module.from_entry("m", b.build(y)), rng_args((8, 16), (16, 8)))
    assert kinds(spmd) == ["reduce-scatter"]


@pytest.mark.parametrize("shape", [(8, 12), (7, 5)])
def test_reduce_sum_and_max(shape):
    mesh = make_mesh({"x": 2, "y": 4})
    for kind in ("add", "maximum"):
        b = Builder("main")
        x = b.parameter(ArrayShape(F32, shape), sharding=S(mesh, ["x"], ["y"]))
        e = b.exponential(x, sharding=S(mesh, ["x"], ["y"]))
        rb = Builder("r")
        p, q = rb.parameter(ArrayShape(F32, ())), rb.parameter(ArrayShape(F32, ()))
        reducer = rb.build(rb.op(kind, p, q))
        init = b.constant(np.float32(0 if kind == "add" else -np.inf))
        r = b.reduce(e, init, dimensions=(1,), to_apply=reducer, sharding=S(mesh, ["x"]))
        spmd = check(Module.from_entry("m", b.build(r)), rng_args(shape))
        assert kinds(spmd) == ["all-reduce"]


@pytest.mark.parametrize("kind", ["add", "maximum"])
def test_reduce_into_unreduced_result_keeps_only_partial_sums(kind):
    """A reduce over a sharded dim whose result is annotated unreduced (sum) on that axis:
    partial sums stay unreduced, but partial maxima must be combined by the reducer first
    (they were kept as if they were partial sums: max(a, b) read as a + b)."""
    mesh = make_mesh({"x": 2})
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (4, 3)), sharding=S(mesh, ["x"], []))
    rb = Builder("r")
    p, q = rb.parameter(ArrayShape(F32, ())), rb.parameter(ArrayShape(F32, ()))
    init = b.constant(np.float32(0 if kind == "add" else -np.inf))
    r = b.reduce(x, init, dimensions=(0,), to_apply=rb.build(rb.op(kind, p, q)),
                 sharding=S(mesh, [], unreduced=["x"]))
    out = b.negate(r, sharding=S(mesh, []))
    spmd = check(Module.from_entry("m", b.build(out)), rng_args((4, 3)))
    assert kinds(spmd) == ["all-reduce"] * (1 if kind == "add" else 2)


def test_batched_dot_uneven_contracting():
    mesh = make_mesh({"x": 2, "y": 2, "z": 2})
    b = Builder("main")
    q = b.parameter(ArrayShape(F32, (4, 6, 5)), sharding=S(mesh, ["x"], ["y"], ["z"]))
    k = b.parameter(ArrayShape(F32, (4, 7, 5)), sharding=S(mesh, ["x"], [], ["z"]))
    s = b.dot(q, k, lhs_batch_dims=(0,), rhs_batch_dims=(0,), lhs_contracting_dims=(2,),
              rhs_contracting_dims=(2,), sharding=S(mesh, ["x"], ["y"], []))
    check(Module.from_entry("m", b.build(s)), rng_args((4, 6, 5), (4, 7, 5)))
