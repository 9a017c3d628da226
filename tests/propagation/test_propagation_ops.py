"""Propagation through each op family, forward and backward, and the basic/aggressive rules."""

import pytest

from xla_spmd.ir import F32, S32, ArrayShape, Builder, Module, SliceDim
from xla_spmd.mesh import AxisRef, make_mesh
from xla_spmd.propagation import propagate
from xla_spmd.sharding import DimSharding, TensorSharding

MESH = make_mesh({"x": 2, "y": 4})


def shape(*dims, dtype=F32):
    return ArrayShape(dtype, dims)


def S(*dims, replicated=(), open_dims=()):
    """A sharding: each dim a list of axis names; dims listed in open_dims are open."""
    return TensorSharding(MESH, [DimSharding(tuple(d), is_closed=i not in open_dims)
                                 for i, d in enumerate(dims)], replicated=replicated)


def shardings(module):
    return {i.name: str(i.sharding) for c in module.computations for i in c.instructions}


def run(b, root, strategy=None, **kwargs):
    return shardings(propagate(Module.from_entry("m", b.build(root)), strategy, **kwargs))


def text(body):
    return f"#sdy.sharding<@mesh, [{body}]>"


def adder():
    b = Builder("add")
    a, c = b.parameter(shape()), b.parameter(shape())
    return b.build(b.add(a, c))


def test_elementwise_forward_and_backward():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], []))
    y = b.parameter(shape(8, 16), "y")
    out = b.multiply(b.negate(x, name="n"), y, name="mul")
    got = run(b, out)
    assert got["n"] == text('{"x", ?}, {?}')
    assert got["mul"] == text('{"x", ?}, {?}')
    assert got["y"] == text('{"x", ?}, {?}')          # backward into an unsharded parameter


def test_dot_forward_megatron_column_then_row():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], []))
    w1 = b.parameter(shape(16, 32), "w1", sharding=S([], ["y"]))
    w2 = b.parameter(shape(32, 16), "w2", sharding=S(["y"], []))
    h = b.dot(x, w1, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), name="h")
    a = b.tanh(h, name="a")
    out = b.dot(a, w2, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), name="out")
    got = run(b, out)
    assert got["h"] == text('{"x", ?}, {"y", ?}')
    assert got["a"] == text('{"x", ?}, {"y", ?}')
    assert got["out"] == text('{"x", ?}, {?}')       # "y" is a reduction factor: partial sums


def test_dot_backward_from_result():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x")
    w = b.parameter(shape(16, 32), "w")
    h = b.dot(x, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), name="h")
    out = b.custom_call(h, custom_call_target="Sharding", shape=shape(8, 32), name="c",
                        sharding=S(["x"], ["y"]))
    got = run(b, out)
    assert got["h"] == text('{"x", ?}, {"y", ?}')
    assert got["x"] == text('{"x", ?}, {?}')
    assert got["w"] == text('{?}, {"y", ?}')


def test_dot_conflict_basic_vs_aggressive():
    """Shardy's example: A[{"x"},{}] . B[{},{"x"}] -> basic gives C nothing, aggressive
    shards C along the factor of the larger operand."""
    def build():
        b = Builder("m")
        a = b.parameter(shape(8, 16), "a", sharding=S(["x"], []))
        w = b.parameter(shape(16, 64), "w", sharding=S([], ["x"]))
        return b, b.dot(a, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), name="c")
    b, c = build()
    assert run(b, c, "basic")["c"] == text("{?}, {?}")
    b, c = build()
    assert run(b, c, "aggressive")["c"] == text('{?}, {"x", ?}')   # w is the larger operand


def test_reshape_split_uses_sub_axes():
    b = Builder("m")
    x = b.parameter(shape(8, 3), "x", sharding=S(["y"], []))
    r = b.reshape(x, shape=shape(2, 4, 3), name="r")
    got = run(b, r)
    assert got["r"] == text('{"y":(1)2, ?}, {"y":(2)2, ?}, {?}')


def test_reshape_merge_and_back():
    b = Builder("m")
    x = b.parameter(shape(2, 4, 3), "x", sharding=S(["x"], ["y"], []))
    r = b.reshape(x, shape=shape(8, 3), name="r")
    back = b.reshape(b.negate(r, name="n"), shape=shape(2, 4, 3), name="back")
    got = run(b, back)
    assert got["r"] == text('{"x", "y", ?}, {?}')
    assert got["back"] == text('{"x", ?}, {"y", ?}, {?}')


def test_reshape_non_aligned():
    b = Builder("m")
    x = b.parameter(shape(8, 4), "x", sharding=S(["y"], []))
    r = b.reshape(x, shape=shape(2, 16), name="r")     # ([ij, k])->([i, jk]) {i=2, j=4, k=4}
    assert run(b, r)["r"] == text('{"y":(1)2, ?}, {"y":(2)2, ?}')


def test_reduce_keeps_kept_dims_and_drops_reduced():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], ["y"]))
    r = b.reduce(x, b.constant(0.0, F32), dimensions=(1,), to_apply=adder(), name="r")
    assert run(b, r)["r"] == text('{"x", ?}')


def test_reduce_backward():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x")
    r = b.reduce(x, b.constant(0.0, F32), dimensions=(1,), to_apply=adder(), name="r")
    out = b.custom_call(r, custom_call_target="Sharding", shape=shape(8), sharding=S(["y"]))
    assert run(b, out)["x"] == text('{"y", ?}, {?}')


def test_transpose_and_broadcast():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], ["y"]))
    t = b.transpose(x, dimensions=(1, 0), name="t")
    bc = b.broadcast(t, dimensions=(1, 2), shape=shape(3, 16, 8), name="bc")
    got = run(b, bc)
    assert got["t"] == text('{"y", ?}, {"x", ?}')
    assert got["bc"] == text('{?}, {"y", ?}, {"x", ?}')


def test_broadcast_backward_to_operand():
    b = Builder("m")
    bias = b.parameter(shape(16), "bias")
    act = b.parameter(shape(8, 16), "act", sharding=S(["x"], ["y"]))
    bc = b.broadcast(bias, dimensions=(1,), shape=shape(8, 16), name="bc")
    out = b.add(act, bc)
    got = run(b, out)
    assert got["bc"] == text('{"x", ?}, {"y", ?}')
    assert got["bias"] == text('{"y", ?}')


def test_slice_permutation_factor_propagates():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], ["y"]))
    s = b.slice(x, slice=(SliceDim(0, 8), SliceDim(0, 8)), name="s")
    assert run(b, s)["s"] == text('{"x", ?}, {"y", ?}')


def test_dynamic_slice_blocks_sliced_dim():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], ["y"]))
    i = b.parameter(shape(dtype=S32), "i")
    ds = b.dynamic_slice(x, i, i, dynamic_slice_sizes=(8, 4), name="ds")
    assert run(b, ds)["ds"] == text('{"x", ?}, {?}')


def test_closed_dims_and_replicated_axes_are_respected():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], ["y"]))
    y = b.parameter(shape(8, 16), "y", sharding=S([], [], open_dims=(1,)))
    z = b.parameter(shape(8, 16), "z", sharding=S([], [], open_dims=(0, 1), replicated=["y"]))
    out = b.add(b.add(x, y, name="xy"), z, name="xyz")
    got = run(b, out)
    assert got["y"] == text('{}, {"y", ?}')           # dim 0 closed: stays replicated
    assert got["z"] == '#sdy.sharding<@mesh, [{"x", ?}, {?}], replicated={"y"}>'


def test_each_axis_once_per_tensor():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], []))
    y = b.parameter(shape(8, 16), "y", sharding=S([], ["x"]))
    out = b.add(x, y, name="sum")
    got = run(b, out)
    assert got["sum"].count('"x"') == 1


def test_non_divisible_minor_dim_is_allowed():
    b = Builder("m")
    x = b.parameter(shape(7), "x", sharding=S(["y"]))
    assert run(b, b.negate(x, name="n"))["n"] == text('{"y", ?}')


def test_while_loop_state_shares_sharding():
    state_shape = shape(8, 16)
    cond = Builder("cond")
    cond.parameter(state_shape)
    cond_c = cond.build(cond.constant(True))
    body = Builder("body")
    p = body.parameter(state_shape, "body_p")
    body_c = body.build(body.tanh(p, name="body_tanh"))
    b = Builder("m")
    x = b.parameter(state_shape, "x", sharding=S(["x"], ["y"]))
    w = b.op("while", x, condition=cond_c, body=body_c, name="loop")
    out = b.negate(w, name="after")
    got = run(b, out)
    assert got["loop"] == text('{"x", ?}, {"y", ?}')
    assert got["body_p"] == text('{"x", ?}, {"y", ?}')
    assert got["body_tanh"] == text('{"x", ?}, {"y", ?}')
    assert got["after"] == text('{"x", ?}, {"y", ?}')


def test_call_propagates_into_and_out_of_callee():
    inner = Builder("inner")
    p = inner.parameter(shape(8, 16), "inner_p")
    callee = inner.build(inner.exponential(p, name="inner_exp"))
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], []))
    c = b.call(x, to_apply=callee, name="c")
    got = run(b, b.negate(c, name="n"))
    assert got["inner_exp"] == text('{"x", ?}, {?}')
    assert got["n"] == text('{"x", ?}, {?}')


@pytest.mark.parametrize("strategy", ["basic", "aggressive", "op-priority", "user-priority"])
def test_every_strategy_runs(strategy):
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], []))
    assert run(b, b.negate(x, name="n"), strategy)["n"] == text('{"x", ?}, {?}')


def test_sub_axis_refs_are_valid():
    b = Builder("m")
    x = b.parameter(shape(8, 3), "x", sharding=S(["y"], []))
    r = b.reshape(x, shape=shape(2, 4, 3), name="r")
    out = propagate(Module.from_entry("m", b.build(r)))
    assert out.entry.root.sharding.dims[0].axes == (AxisRef("y", (1, 2)),)


def test_conditional_branches_and_result():
    branches = []
    for k, op in enumerate(("negate", "exponential")):
        c = Builder(f"branch{k}")
        p = c.parameter(shape(8, 16), f"branch{k}_p")
        branches.append(c.build(c.op(op, p, name=f"branch{k}_out")))
    b = Builder("m")
    index = b.parameter(shape(dtype=S32), "index")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], []))
    y = b.parameter(shape(8, 16), "y")
    cond = b.conditional(index, x, y, branch_computations=tuple(branches), name="cond")
    got = run(b, b.tanh(cond, name="after"))
    assert got["branch0_out"] == text('{"x", ?}, {?}')
    assert got["cond"] == text('{"x", ?}, {?}')
    assert got["after"] == text('{"x", ?}, {?}')
    assert got["branch1_out"] == text('{"x", ?}, {?}')    # back from the result
    assert got["y"] == text('{"x", ?}, {?}')


def test_unknown_custom_call_blocks_propagation():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], []))
    k = b.custom_call(x, custom_call_target="my_kernel", shape=shape(8, 16), name="k")
    got = run(b, b.negate(k, name="n"))
    assert got["k"] == text("{?}, {?}")
    assert got["n"] == text("{?}, {?}")


def test_mesh_name_is_kept_for_new_shardings():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x",
                    sharding=TensorSharding(MESH, [["x"], []], mesh_name="grid"))
    assert run(b, b.negate(x, name="n"))["n"] == '#sdy.sharding<@grid, [{"x", ?}, {?}]>'
