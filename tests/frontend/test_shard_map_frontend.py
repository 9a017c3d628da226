"""shard_map: HLO structure as XLA exports Shardy manual computations, collectives with
replica groups from the mesh, evaluation on a one-device mesh, gradients."""

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.lax as lax
import xla_spmd.numpy as xnp
from xla_spmd.ir import verify
from xla_spmd.mesh import make_mesh
from xla_spmd.sharding import P

MESH = make_mesh({"x": 2, "y": 4})


def body(a, b):
    n = lax.axis_size("y")
    return (lax.psum(a, "y"), lax.pmax(a, ("x", "y")), lax.all_gather(a, "y", axis=1, tiled=True),
            lax.ppermute(a, "y", [(i, (i + 1) % n) for i in range(n)]),
            lax.all_to_all(a, "y", 0, 1, tiled=True),
            lax.psum_scatter(b, "y", scatter_dimension=1, tiled=True),
            xnp.reshape(lax.axis_index("y") + 10 * lax.axis_index("x"), (1, 1)),
            lax.psum(a @ b, "y"), lax.pmean(a, "x"))


OUT_SPECS = (P("x", "y"), P("x", "y"), P("x", None), P("x", "y"), P("x", "y"), P("x", "y"),
             P("x", "y"), P("x", None), P("x", "y"))


def lowered(mesh, a, b):
    f = xs.jit(xs.shard_map(body, mesh, in_specs=(P("x", "y"), P("y", None)),
                            out_specs=OUT_SPECS))
    return f, f.lower(a, b)


def test_structure_matches_xla_export():
    f, low = lowered(MESH, np.zeros((8, 16), np.float32), np.zeros((16, 8), np.float32))
    verify(low.module)
    entry = low.module.entry
    calls = [i for i in entry.instructions if i.opcode == "custom-call"]
    assert [c.attrs.custom_call_target for c in calls] == [
        "xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape"]
    assert dict(calls[0].frontend_attributes)["xla.sdy.manual_axes"] == \
        '#sdy<manual_axes{"x", "y"}>'
    assert dict(calls[0].frontend_attributes)["xla.sdy.in_shardings"] == \
        '#sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>, <@mesh, [{"y"}, {}]>]>'
    assert str(calls[0].shape) == "(f32[4,4], f32[4,8])"
    assert str(calls[1].shape).startswith("(f32[8,16], f32[8,16], f32[8,16], f32[8,16], "
                                          "f32[2,64], f32[8,8], s32[2,4], f32[8,8]")
    (call,) = [i for i in entry.instructions if i.opcode == "call"]
    assert call.attrs.to_apply.name.startswith("xla.sdy.manual_computation_body.")
    assert call.frontend_attribute("inlineable") == "false"
    ops = {}
    for inst in call.attrs.to_apply.instructions:
        ops.setdefault(inst.opcode, inst)
    assert ops["all-reduce"].attrs.replica_groups.groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert ops["all-reduce"].attrs.use_global_device_ids
    assert ops["collective-permute"].attrs.source_target_pairs[:4] == \
        ((0, 1), (1, 2), (2, 3), (3, 0))
    assert "partition-id" in ops and "reduce-scatter" in ops and "all-to-all" in ops
    with pytest.raises(Exception, match="one device"):
        f(np.zeros((8, 16), np.float32), np.zeros((16, 8), np.float32))


def test_one_device_mesh_evaluates():
    mesh = make_mesh({"x": 1, "y": 1})
    a, b = np.random.randn(4, 4).astype(np.float32), np.random.randn(4, 4).astype(np.float32)
    f, _ = lowered(mesh, a, b)
    outs = [np.asarray(o) for o in f(a, b)]
    for o in (outs[0], outs[1], outs[2], outs[3], outs[4], outs[8]):
        np.testing.assert_allclose(o, a, rtol=1e-6)
    np.testing.assert_allclose(outs[5], b, rtol=1e-6)
    assert outs[6].tolist() == [[0]]
    np.testing.assert_allclose(outs[7], a @ b, rtol=1e-5)


def test_gradient_through_shard_map_is_a_manual_region():
    def loss(mesh):
        def f(a, b):
            out = xs.shard_map(lambda a, b: lax.psum(xnp.tanh(a @ b), "y"), mesh,
                               in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None))(a, b)
            return xnp.sum(out)
        return f

    low = xs.jit(xs.grad(loss(MESH), argnums=(0, 1))).lower(np.zeros((8, 16), np.float32),
                                                             np.zeros((16, 8), np.float32))
    verify(low.module)
    names = [c.name for c in low.module.computations]
    assert any(n.startswith("xla.sdy.manual_computation_body") for n in names)
    mesh1 = make_mesh({"x": 1, "y": 1})
    a, b = np.random.randn(3, 4), np.random.randn(4, 2)
    ga, gb = xs.jit(xs.grad(loss(mesh1), argnums=(0, 1)))(a, b)
    d = 1 - np.tanh(a @ b) ** 2
    np.testing.assert_allclose(np.asarray(ga), d @ b.T, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(gb), a.T @ d, rtol=1e-10)


def test_collective_vjps_transpose():
    mesh = make_mesh({"x": 1})

    def f(a):
        g = lax.all_gather(a, "x", axis=0, tiled=True)
        s = lax.psum_scatter(g * g, "x", scatter_dimension=0, tiled=True)
        p = lax.ppermute(s, "x", [(0, 0)])
        return lax.all_to_all(p, "x", 0, 1, tiled=True) + lax.pmax(a, "x")

    g = xs.grad(lambda a: xnp.sum(xs.shard_map(f, mesh, P("x"), P("x"))(a)))(np.ones((2, 2)))
    np.testing.assert_allclose(np.asarray(g), 3.0)


def test_collectives_outside_shard_map_are_errors():
    with pytest.raises(Exception, match="shard_map"):
        xs.jit(lambda x: lax.psum(x, "x"))(np.ones(2, np.float32))
