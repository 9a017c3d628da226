"""Hand-written oracle cases for each handler family (shapes small: the evaluator is numpy)."""

import numpy as np
import pytest
from spmd_oracle import check

from xla_spmd.ir import (
    F32,
    S32,
    ArrayShape,
    Builder,
    ConvDimensionNumbers,
    Module,
    PadDim,
    SliceDim,
    Window,
)
from xla_spmd.mesh import AxisRef, make_mesh
from xla_spmd.partition import collective_table
from xla_spmd.sharding import TensorSharding

MESH = make_mesh({"x": 2, "y": 4})


def S(*dims, mesh=MESH):
    return TensorSharding(mesh, [list(d) for d in dims])


def f32(*dims):
    return ArrayShape(F32, dims)


def args_for(module, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for p in module.entry.parameters:
        if p.shape.dtype is S32:
            out.append(rng.integers(0, 4, p.shape.dims).astype(np.int32))
        else:
            out.append(rng.standard_normal(p.shape.dims).astype(np.float32))
    return out


def run(b, root):
    module = Module.from_entry("m", b.build(root))
    return check(module, args_for(module))


def adder(dtype=F32, op="add"):
    rb = Builder(f"r_{op}")
    p, q = rb.parameter(ArrayShape(dtype, ())), rb.parameter(ArrayShape(dtype, ()))
    return rb.build(rb.op(op, p, q))


@pytest.mark.parametrize("out", [([], ["y"], ["x"]), (["y"], [], []), (["x"], ["y"], [])])
def test_broadcast(out):
    b = Builder("main")
    x = b.parameter(f32(4, 6), sharding=S(["x"], []))
    y = b.broadcast(x, shape=f32(4, 8, 6), dimensions=(0, 2), sharding=S(*out))
    run(b, y)


@pytest.mark.parametrize("src,dst", [((["x"], ["y"]), (["y"], ["x"])),
                                     ((["x"], []), ([], ["y"])), (([], []), (["x", "y"], []))])
def test_transpose(src, dst):
    b = Builder("main")
    x = b.parameter(f32(8, 12), sharding=S(*src))
    run(b, b.transpose(x, dimensions=(1, 0), sharding=S(*dst)))


RESHAPES = [
    ((8, 6), S(["x"], []), (2, 4, 6), S(["x"], [], [])),
    ((8, 6), S(["y"], []), (2, 4, 6), S([AxisRef("y", (1, 2))], [AxisRef("y", (2, 2))], [])),
    ((2, 4, 6), S(["x"], ["y"], []), (8, 6), S(["x", "y"], [])),
    ((8, 6), S([], ["x"]), (48,), S(["x"])),
    ((6, 8), S(["x"], []), (48,), S(["x"])),
    ((8, 6), S(["x", "y"], []), (4, 12), S(["x"], ["y"])),
    ((7, 6), S(["x"], []), (42,), S(["y"])),
]


@pytest.mark.parametrize("case", range(len(RESHAPES)))
def test_reshape(case):
    in_dims, src, out_dims, dst = RESHAPES[case]
    b = Builder("main")
    x = b.parameter(f32(*in_dims), sharding=src)
    y = b.reshape(x, shape=f32(*out_dims), sharding=dst)
    spmd = run(b, b.negate(y, sharding=dst))
    if case < 3:
        assert collective_table(spmd) == []


def test_slice_pad_concat_reverse():
    b = Builder("main")
    x = b.parameter(f32(8, 10), sharding=S(["x"], ["y"]))
    s = b.slice(x, slice=(SliceDim(0, 8), SliceDim(1, 9, 2)), sharding=S(["x"], ["y"]))
    zero = b.constant(np.float32(0))
    p = b.pad(s, zero, padding=(PadDim(1, 2, 1), PadDim(0, 0)), sharding=S(["y"], []))
    c = b.concatenate(x, x, dimensions=(1,), sharding=S(["x"], ["y"]))
    r = b.reverse(c, dimensions=(0, 1), sharding=S([], ["x", "y"]))
    out = b.tuple(p, r, sharding=(S(["y"], []), S([], ["x", "y"])))
    run(b, out)


def test_dynamic_slice_and_update():
    b = Builder("main")
    x = b.parameter(f32(8, 12), sharding=S(["x"], ["y"]))
    i = b.constant(np.int32(3))
    j = b.constant(np.int32(0))
    ds = b.dynamic_slice(x, i, j, dynamic_slice_sizes=(4, 12), shape=f32(4, 12),
                         sharding=S([], ["y"]))
    u = b.parameter(f32(2, 12), sharding=S([], ["x"]))
    dus = b.dynamic_update_slice(x, u, i, j, sharding=S(["x"], ["y"]))
    run(b, b.tuple(ds, dus, sharding=(S([], ["y"]), S(["x"], ["y"]))))


@pytest.mark.parametrize("dims", [(8, 6), (7, 5)])
def test_iota_and_constant(dims):
    b = Builder("main")
    io = b.iota(shape=f32(*dims), iota_dimension=0, sharding=S(["y"], ["x"]))
    io2 = b.iota(shape=ArrayShape(S32, dims), iota_dimension=1, sharding=S(["y"], ["x"]))
    c = b.constant(np.arange(np.prod(dims), dtype=np.float32).reshape(dims))
    x = b.parameter(f32(*dims), sharding=S(["x"], ["y"]))
    s = b.add(b.add(io, c, sharding=S(["y"], ["x"])), x, sharding=S(["y"], ["x"]))
    run(b, b.tuple(s, io2, sharding=(S(["y"], ["x"]), S(["y"], ["x"]))))


def test_gather_index_passthrough_and_scatter_add():
    b = Builder("main")
    table = b.parameter(f32(6, 8), sharding=S([], ["y"]))
    ids = b.parameter(ArrayShape(S32, (4, 2)), sharding=S(["x"], []))
    g = b.gather(table, ids, offset_dims=(2,), collapsed_slice_dims=(0,), start_index_map=(0,),
                 index_vector_dim=2, slice_sizes=(1, 8), shape=f32(4, 2, 8),
                 sharding=S(["x"], [], ["y"]))
    updates = b.parameter(f32(4, 2, 8), sharding=S(["x"], [], []))
    zeros = b.broadcast(b.constant(np.float32(0)), shape=f32(6, 8), dimensions=())
    sc = b.scatter(zeros, ids, updates, update_window_dims=(2,), inserted_window_dims=(0,),
                   scatter_dims_to_operand_dims=(0,), index_vector_dim=2, to_apply=adder(),
                   sharding=S([], ["y"]))
    spmd = run(b, b.tuple(g, sc, sharding=(S(["x"], [], ["y"]), S([], ["y"]))))
    assert "all-gather" not in {r["kind"] for r in collective_table(spmd)}


def test_convolution_batch_and_feature():
    b = Builder("main")
    x = b.parameter(f32(4, 8, 6), sharding=S(["x"], [], ["y"]))   # b 0 f
    k = b.parameter(f32(3, 6, 8), sharding=S([], ["y"], []))     # 0 i o
    dn = ConvDimensionNumbers.from_labels("b0f_0io->b0f")
    conv = b.convolution(x, k, window=Window.make((3,), padding=((1, 1),)), dim_labels=dn,
                         shape=f32(4, 8, 8), sharding=S(["x"], [], []))
    spmd = run(b, conv)
    assert {r["kind"] for r in collective_table(spmd)} <= {"all-reduce", "all-gather"}


def test_reduce_window_and_select_and_scatter():
    b = Builder("main")
    x = b.parameter(f32(4, 8), sharding=S(["x"], ["y"]))
    init = b.constant(np.float32(-np.inf))
    rw = b.reduce_window(x, init, window=Window.make((1, 2), (1, 2)), to_apply=adder(op="maximum"),
                         shape=f32(4, 4), sharding=S(["x"], ["y"]))
    src = b.parameter(f32(4, 4), sharding=S(["x"], []))
    sb = Builder("sel")
    p, q = sb.parameter(f32()), sb.parameter(f32())
    sel = sb.build(sb.compare(p, q, direction=__import__("xla_spmd.ir", fromlist=["x"])
                              .ComparisonDirection.GE))
    zero = b.constant(np.float32(0))
    ss = b.select_and_scatter(x, src, zero, window=Window.make((1, 2), (1, 2)), select=sel,
                              scatter=adder(), sharding=S(["x"], ["y"]))
    run(b, b.tuple(rw, ss, sharding=(S(["x"], ["y"]), S(["x"], ["y"]))))


def test_sort_along_sharded_dim():
    b = Builder("main")
    x = b.parameter(f32(4, 8), sharding=S(["x"], ["y"]))
    cb = Builder("cmp")
    p, q = cb.parameter(f32()), cb.parameter(f32())
    from xla_spmd.ir import ComparisonDirection
    cmp = cb.build(cb.compare(p, q, direction=ComparisonDirection.LT))
    run(b, b.sort(x, dimensions=(1,), to_apply=cmp, sharding=S(["x"], ["y"])))


def test_while_loop_keeps_sharding():
    body_b = Builder("body")
    state = body_b.parameter(ArrayShape.__new__(ArrayShape) if False else None) if False else None
    del state
    from xla_spmd.ir import TupleShape
    st = TupleShape((ArrayShape(S32, ()), f32(8, 4)))
    sh = (S(), S(["x"], ["y"]))
    body_b = Builder("body")
    p = body_b.parameter(st, sharding=sh)
    i = body_b.get_tuple_element(p, index=0, sharding=S())
    v = body_b.get_tuple_element(p, index=1, sharding=S(["x"], ["y"]))
    one = body_b.constant(np.int32(1))
    i2 = body_b.add(i, one, sharding=S())
    v2 = body_b.add(v, b_const(body_b, v), sharding=S(["x"], ["y"]))
    body = body_b.build(body_b.tuple(i2, v2, sharding=sh))
    cond_b = Builder("cond")
    cp = cond_b.parameter(st, sharding=sh)
    ci = cond_b.get_tuple_element(cp, index=0, sharding=S())
    from xla_spmd.ir import ComparisonDirection
    cond = cond_b.build(cond_b.compare(ci, cond_b.constant(np.int32(3)),
                                       direction=ComparisonDirection.LT, sharding=S()))
    b = Builder("main")
    x = b.parameter(f32(8, 4), sharding=S([], ["x"]))
    t = b.tuple(b.constant(np.int32(0)), x, sharding=sh)
    w = b.op("while", t, condition=cond, body=body, sharding=sh)
    out = b.get_tuple_element(w, index=1, sharding=S(["x"], ["y"]))
    spmd = run(b, out)
    assert all(r["computation"] != "body" for r in collective_table(spmd))


def b_const(builder, like):
    c = builder.constant(np.float32(1.5))
    return builder.broadcast(c, shape=like.shape, dimensions=(), sharding=like.sharding)


def test_conditional_and_call():
    from xla_spmd.ir import PRED
    tb = Builder("t")
    tp = tb.parameter(f32(8, 4), sharding=S(["x"], []))
    tbr = tb.build(tb.negate(tp, sharding=S(["x"], [])))
    fb = Builder("f")
    fp = fb.parameter(f32(8, 4), sharding=S(["x"], []))
    fbr = fb.build(fb.exponential(fp, sharding=S(["x"], [])))
    cb = Builder("callee")
    cp = cb.parameter(f32(8, 4), sharding=S(["y"], []))
    callee = cb.build(cb.tanh(cp, sharding=S(["y"], [])))
    b = Builder("main")
    x = b.parameter(f32(8, 4), sharding=S(["x"], []))
    pred = b.parameter(ArrayShape(PRED, ()))
    c = b.conditional(pred, x, x, true_computation=tbr, false_computation=fbr,
                      sharding=S(["x"], ["y"]))
    d = b.call(c, to_apply=callee, sharding=S(["y"], []))
    module = Module.from_entry("m", b.build(d))
    for flag in (True, False):
        check(module, [np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32),
                       np.array(flag)])


@pytest.mark.parametrize("axes", [["y"], ["x", "y"]])
def test_convolution_spatial_halo_exchange(axes):
    b = Builder("main")
    x = b.parameter(f32(2, 16, 3), sharding=S([], axes, []))
    k = b.parameter(f32(3, 3, 4), sharding=S([], [], []))
    dn = ConvDimensionNumbers.from_labels("b0f_0io->b0f")
    conv = b.convolution(x, k, window=Window.make((3,), padding=((1, 1),)), dim_labels=dn,
                         shape=f32(2, 16, 4), sharding=S([], axes, []))
    spmd = run(b, conv)
    assert {r["kind"] for r in collective_table(spmd)} == {"collective-permute"}


def test_reduce_window_spatial_halo_exchange():
    b = Builder("main")
    x = b.parameter(f32(16, 3), sharding=S(["y"], ["x"]))
    init = b.constant(np.float32(-np.inf))
    rw = b.reduce_window(x, init, window=Window.make((3, 1), padding=((2, 0), (0, 0))),
                         to_apply=adder(op="maximum"), shape=f32(16, 3),
                         sharding=S(["y"], ["x"]))
    spmd = run(b, rw)
    assert {r["kind"] for r in collective_table(spmd)} == {"collective-permute"}


@pytest.mark.parametrize("rows", [32, 30])
def test_gather_from_row_sharded_table_masks_and_all_reduces(rows):
    b = Builder("main")
    table = b.parameter(f32(rows, 4), sharding=S(["y"], []))
    ids = b.parameter(ArrayShape(S32, (3, 1)), sharding=S([], []))
    g = b.gather(table, ids, offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,),
                 index_vector_dim=1, slice_sizes=(1, 4), shape=f32(3, 4), sharding=S([], []))
    module = Module.from_entry("m", b.build(g))
    rng = np.random.default_rng(0)
    idx = np.array([[0], [rows - 1], [rows + 5]], dtype=np.int32)  # out of range clamps
    spmd = check(module, [rng.standard_normal((rows, 4)).astype(np.float32), idx])
    assert [r["kind"] for r in collective_table(spmd)] == ["all-reduce"]
