"""shard_map: HLO structure as XLA exports Shardy manual computations, collectives with
replica groups from the mesh, evaluation on a one-device mesh, gradients."""

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.lax as lax
import xla_spmd.numpy as xnp
from xla_spmd.ir import verify
from xla_spmd.mesh import AxisType, make_mesh
from xla_spmd.sharding import P

MESH = make_mesh({"x": 2, "y": 4}, axis_types=AxisType.Auto)  # propagation


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
    # all_gather's result still varies over "y" (as JAX's): returned with out_spec P("x",
    # None), this is a program of JAX's untyped shard_map (check_vma=False)
    f = xs.jit(xs.shard_map(body, mesh, in_specs=(P("x", "y"), P("y", None)),
                            out_specs=OUT_SPECS, check_vma=False))
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
    # It runs on the mesh's devices: psum over "y" of the local products is a @ b.
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 16), np.float32), rng.standard_normal((16, 8), np.float32)
    outs = f(a, b)
    np.testing.assert_allclose(np.asarray(outs[7]), a @ b, rtol=1e-5, atol=1e-5)


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


def test_gradient_through_shard_map_is_a_manual_region(x64):
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
    with pytest.raises(Exception, match="lax.psum is only meaningful inside shard_map"):
        xs.jit(lambda x: lax.psum(x, "x"))(np.ones(2, np.float32))
    with pytest.raises(Exception, match="lax.pmean is only meaningful inside shard_map"):
        xs.jit(lambda x: lax.pmean(x, "x"))(np.ones(2, np.float32))


# ---------------------------------------------------------------------------------------------
# Gradients through collectives on 8 devices: a replicated result's cotangent is split over
# its copies, a replicated operand's cotangent summed over them (JAX's convention), so each
# gradient equals the one of the same function written without shard_map.

MESH8 = make_mesh({"data": 2, "model": 4}, axis_types=AxisType.Auto)


def _named(*spec):
    return xs.NamedSharding(MESH8, P(*spec))


def _grad8(f, args, shardings, argnums=0):
    return xs.jit(xs.grad(f, argnums=argnums), in_shardings=shardings)(*args)


RNG8 = np.random.default_rng(8)
X8 = RNG8.standard_normal((8, 8)).astype(np.float32)


def test_grad_pmean_of_means_over_all_axes():
    f = xs.shard_map(lambda xb: lax.pmean(xnp.mean(xb ** 2), ("data", "model")), MESH8,
                     in_specs=(P("data", "model"),), out_specs=P())
    np.testing.assert_allclose(np.asarray(_grad8(f, (X8,), _named("data", "model"))),
                               2 * X8 / 64, rtol=1e-5)


def test_grad_psum_of_sums_over_all_axes():
    f = xs.shard_map(lambda xb: lax.psum(xnp.sum(xb ** 2), ("data", "model")), MESH8,
                     in_specs=(P("data", "model"),), out_specs=P())
    np.testing.assert_allclose(np.asarray(_grad8(f, (X8,), _named("data", "model"))),
                               2 * X8, rtol=1e-5)


def test_grad_psum_over_one_axis_sharded_result():
    weights = np.array([1.0, 3.0], np.float32)
    inner = xs.shard_map(lambda xb: xnp.reshape(lax.psum(xnp.sum(xb ** 2), "model"), (1,)),
                         MESH8, in_specs=(P("data", "model"),), out_specs=P("data"))
    g = _grad8(lambda x: xnp.sum(inner(x) * weights), (X8,), _named("data", "model"))
    expected = 2 * X8 * np.repeat(weights, 4)[:, None]
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-5)


def test_grad_replicated_operand_without_collectives():
    w = RNG8.standard_normal((3,)).astype(np.float32)
    inner = xs.shard_map(lambda wb: 2 * wb, MESH8, in_specs=(P(),), out_specs=P())
    g = _grad8(lambda w: xnp.sum(inner(w) * xnp.arange(3.0)), (w,), _named())
    np.testing.assert_allclose(np.asarray(g), 2 * np.arange(3.0), rtol=1e-6)


def test_grad_mixed_sharded_and_replicated_operands():
    x = RNG8.standard_normal((8, 6)).astype(np.float32)
    w = RNG8.standard_normal((6, 3)).astype(np.float32)
    r = RNG8.standard_normal((4, 3)).astype(np.float32)
    inner = xs.shard_map(lambda xb, wb: lax.psum(xb @ wb, "data"), MESH8,
                         in_specs=(P("data", None), P()), out_specs=P())

    def loss(x, w):
        return xnp.sum(inner(x, w) * r)

    def reference(x, w):
        return xnp.sum((x[:4] @ w + x[4:] @ w) * r)

    gx, gw = _grad8(loss, (x, w), (_named("data", None), _named()), argnums=(0, 1))
    rx, rw = xs.grad(reference, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(rx), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(gw), np.asarray(rw), rtol=1e-5, atol=1e-6)


def test_grad_all_gather_pmax_psum_scatter_on_8_devices():
    x = RNG8.standard_normal((8, 4)).astype(np.float32)
    r = RNG8.standard_normal((8, 4)).astype(np.float32)
    gather = xs.shard_map(lambda xb: lax.all_gather(xb, "data", tiled=True), MESH8,
                          in_specs=(P("data"),), out_specs=P(), check_vma=False)
    g = _grad8(lambda x: xnp.sum(gather(x) * r), (x,), _named("data"))
    np.testing.assert_allclose(np.asarray(g), r, rtol=1e-6)
    # psum_scatter of an operand replicated over "model" sums its 4 copies
    scatter = xs.shard_map(lambda xb: lax.psum_scatter(xb, "model", 1, tiled=True), MESH8,
                           in_specs=(P("data", None),), out_specs=P("data", "model"))
    g = _grad8(lambda x: xnp.sum(scatter(x) * r), (x,), _named("data", None))
    np.testing.assert_allclose(np.asarray(g), 4 * r, rtol=1e-6)
    # pmax over all 8 blocks of 4x1: the gradient goes to each position's winning block
    weights = RNG8.standard_normal((4, 1)).astype(np.float32)
    biggest = xs.shard_map(lambda xb: lax.pmax(xb, ("data", "model")), MESH8,
                           in_specs=(P("data", "model"),), out_specs=P())
    g = _grad8(lambda x: xnp.sum(biggest(x) * weights), (x,), _named("data", "model"))
    blocks = x.reshape(2, 4, 4, 1).transpose(0, 2, 1, 3).reshape(8, 4, 1)
    winners = (blocks == blocks.max(0)) * weights
    expected = winners.reshape(2, 4, 4, 1).transpose(0, 2, 1, 3).reshape(8, 4)
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-6)


def test_shard_map_as_a_decorator_factory():
    mesh = make_mesh({"x": 8})

    @xs.shard_map(mesh=mesh, in_specs=(P("x"), P()), out_specs=P("x"))
    def scaled(block, scale):
        return block * scale + lax.axis_index("x").astype(block.dtype)

    x = np.arange(16.0, dtype=np.float32)
    want = x * 3 + np.repeat(np.arange(8.0, dtype=np.float32), 2)
    np.testing.assert_array_equal(np.asarray(scaled(x, np.float32(3))), want)
    with pytest.raises(TypeError, match="needs mesh="):
        xs.shard_map(lambda a: a, mesh=mesh)
