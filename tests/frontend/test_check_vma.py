"""shard_map's check_vma (issue 16): gradients with varying-manual-axes typing (the default)
and without, against JAX 0.10's numbers (tests/data/jax_vma.json, made by
scripts/gen_jax_vma_data.py from the same programs written with JAX)."""

import json
from pathlib import Path

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.lax as lax
import xla_spmd.numpy as xnp
from xla_spmd import P

DATA = json.loads((Path(__file__).parent.parent / "data" / "jax_vma.json").read_text())
W = (np.arange(3, dtype=np.float32) - 1.0) / 2
X = (np.arange(24, dtype=np.float32).reshape(8, 3) / 10) - 1.0
R = np.cos(np.arange(24, dtype=np.float32)).reshape(8, 3)
MESH = xs.make_mesh({"a": 2, "b": 4})


def local_loss(w, x):
    return xnp.sum(xnp.tanh(x @ w) ** 2)


def smap(f, in_specs, out_specs, check_vma):
    return xs.shard_map(f, mesh=MESH, in_specs=in_specs, out_specs=out_specs,
                        check_vma=check_vma)


def cases(check_vma):
    """The programs of scripts/gen_jax_vma_data.py, written with xla_spmd."""
    grad, psum, pmean = xs.grad, lax.psum, lax.pmean
    return {
        "grad_inside_then_psum": lambda: smap(
            lambda w, x: psum(grad(local_loss)(w, x), ("a", "b")),
            (P(), P(("a", "b"))), P(), check_vma)(W, X),
        "grad_inside_then_pmean_b": lambda: smap(
            lambda w, x: pmean(grad(local_loss)(w, x), "b"),
            (P(), P(("a", "b"))), P("a"), check_vma)(W, X),
        "grad_of_psum_outside": lambda: grad(lambda w, x: smap(
            lambda w, x: psum(local_loss(w, x), ("a", "b")),
            (P(), P(("a", "b"))), P(), check_vma)(w, x))(W, X),
        "grad_of_sharded_result": lambda: grad(lambda w, x: xnp.sum(smap(
            lambda w, x: local_loss(w, x)[None],
            (P(), P(("a", "b"))), P(("a", "b")), check_vma)(w, x) ** 2))(W, X),
        "grad_of_psum_of_invariant": lambda: grad(lambda w: xnp.sum(smap(
            lambda w: psum(w * w, "b"), (P(),), P(), check_vma)(w)))(W),
        "grad_psum_over_a_only": lambda: grad(lambda x: xnp.sum(smap(
            lambda x: psum(xnp.sin(x), "a"), (P(("a", "b")),), P("b"), check_vma)(x) * R[:4]
        ))(X),
        "grad_all_gather_then_pmean": lambda: grad(lambda x: xnp.sum(smap(
            lambda x: pmean(lax.all_gather(x, "b", tiled=True) * R, "b"), (P("b"),), P(),
            check_vma)(x)))(X),
        "grad_psum_scatter_of_invariant": lambda: grad(lambda x: xnp.sum(smap(
            lambda x: lax.psum_scatter(x, "b", scatter_dimension=0, tiled=True),
            (P(),), P("b"), check_vma)(x) * R))(X),
        "grad_mixed_axes": lambda: grad(lambda w, x: smap(
            lambda w, x: psum(local_loss(w * x[0], x), "a").sum()[None],
            (P("b"), P("a", "b")), P("b"), check_vma)(w, x).sum(), argnums=(0, 1))(
                np.concatenate([W, W, W, W[:1] * 3]).astype(np.float32)[:4],
                np.tile(X[:, :2], (1, 2))),
    }


KEYS = sorted(DATA["results"])


@pytest.mark.parametrize("key", KEYS)
def test_gradients_match_jax(key):
    name, mode = key.split("/")
    check_vma = mode == "check_vma=True"
    got = xs.tree_leaves(xs.jit(cases(check_vma)[name])())
    expected = DATA["results"][key]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e, np.float32), rtol=2e-5,
                                   atol=2e-6, err_msg=key)


def test_an_output_varying_over_an_axis_its_spec_leaves_out_is_refused():
    with pytest.raises(xs.errors.XlaSpmdError, match="varies over manual axis 'b'"):
        smap(lambda x: x.sum(0), (P("b"),), P(), True)(X)
    # the same program untyped runs (it is JAX's check_vma=False)
    assert smap(lambda x: x.sum(0), (P("b"),), P(), False)(X).shape == (3,)
    # reduced over the axis, it is invariant and accepted
    np.testing.assert_allclose(
        np.asarray(smap(lambda x: lax.psum(x.sum(0), "b"), (P("b"),), P(), True)(X)),
        X.sum(0), rtol=1e-5)


def test_pvary_types_a_value_as_varying_and_transposes_to_psum():
    """lax.pvary: the value is unchanged, now varying (an out_spec must name the axis), and
    its cotangent is summed over the axis. Oracle: by hand (d/dw sum_i w * x_i = sum x)."""
    mesh = xs.make_mesh({"x": 4})
    x = np.arange(8, dtype=np.float32)

    def per_device_grad(w, b):
        return xs.grad(lambda w: (lax.pvary(w, "x") * b).sum())(w)

    g = xs.jit(xs.shard_map(per_device_grad, mesh=mesh, in_specs=(P(), P("x")),
                            out_specs=P()))(np.float32(2.0), x)
    assert float(g) == x.sum()  # the psum of the four local sums, invariant again
    body = xs.shard_map(lambda w, b: lax.pvary(w, "x") * b, mesh=mesh,
                        in_specs=(P(), P("x")), out_specs=P("x"))
    np.testing.assert_array_equal(np.asarray(xs.jit(body)(np.float32(2.0), x)), 2 * x)
    with pytest.raises(xs.errors.XlaSpmdError, match="varies over manual axis 'x'"):
        xs.jit(xs.shard_map(lambda b: lax.pvary(b, "x").sum(), mesh=mesh, in_specs=P(),
                            out_specs=P()))(x)
    untyped = xs.shard_map(lambda b: lax.pvary(b, "x").sum(), mesh=mesh, in_specs=P(),
                           out_specs=P(), check_vma=False)  # the identity
    assert float(xs.jit(untyped)(x)) == x.sum()
    with pytest.raises(xs.errors.XlaSpmdError, match="only meaningful inside shard_map"):
        lax.pvary(x, "x")
