#!/usr/bin/env python3
"""Write what JAX 0.10's ``shard_map`` gives for gradients with ``check_vma=True`` (the
default, varying-manual-axes typing) and ``check_vma=False``: ``tests/data/jax_vma.json``,
for tests/frontend/test_check_vma.py (which runs the same programs written with xla_spmd).

Run with an interpreter that has JAX (the project's own environment never gets it)::

    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax
    /tmp/jaxenv/bin/python scripts/gen_jax_vma_data.py

The programs run on 8 CPU devices, a mesh ``{"a": 2, "b": 4}``; inputs are fixed arrays
(``W``, ``X``, ``R`` below, the same in the test).
"""

import json
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "jax_vma.json")

W = (np.arange(3, dtype=np.float32) - 1.0) / 2
X = (np.arange(24, dtype=np.float32).reshape(8, 3) / 10) - 1.0
R = np.cos(np.arange(24, dtype=np.float32)).reshape(8, 3)
MESH = jax.make_mesh((2, 4), ("a", "b"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
psum, pmean, all_gather, psum_scatter = (jax.lax.psum, jax.lax.pmean, jax.lax.all_gather,
                                         jax.lax.psum_scatter)


def local_loss(w, x):
    return jnp.sum(jnp.tanh(x @ w) ** 2)


def smap(f, in_specs, out_specs, check_vma):
    return jax.shard_map(f, mesh=MESH, in_specs=in_specs, out_specs=out_specs,
                         check_vma=check_vma)


def cases(check_vma):
    """name -> a function of no arguments returning an array (the same list in the test)."""
    grad = jax.grad
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
        "grad_of_sharded_result": lambda: grad(lambda w, x: jnp.sum(smap(
            lambda w, x: local_loss(w, x)[None],
            (P(), P(("a", "b"))), P(("a", "b")), check_vma)(w, x) ** 2))(W, X),
        "grad_of_psum_of_invariant": lambda: grad(lambda w: jnp.sum(smap(
            lambda w: psum(w * w, "b"), (P(),), P(), check_vma)(w)))(W),
        "grad_psum_over_a_only": lambda: grad(lambda x: jnp.sum(smap(
            lambda x: psum(jnp.sin(x), "a"), (P(("a", "b")),), P("b"), check_vma)(x) * R[:4]
        ))(X),
        "grad_all_gather_then_pmean": lambda: grad(lambda x: jnp.sum(smap(
            lambda x: pmean(all_gather(x, "b", tiled=True) * R, "b"), (P("b"),), P(),
            check_vma)(x)))(X),
        "grad_psum_scatter_of_invariant": lambda: grad(lambda x: jnp.sum(smap(
            lambda x: psum_scatter(x, "b", scatter_dimension=0, tiled=True),
            (P(),), P("b"), check_vma)(x) * R))(X),
        "grad_mixed_axes": lambda: grad(lambda w, x: smap(
            lambda w, x: psum(local_loss(w * x[0], x), "a").sum()[None],
            (P("b"), P("a", "b")), P("b"), check_vma)(w, x).sum(), argnums=(0, 1))(
                np.concatenate([W, W, W, W[:1] * 3]).astype(np.float32)[:4],
                np.tile(X[:, :2], (1, 2))),
    }


def main():
    results = {}
    for check_vma in (True, False):
        for name, run in cases(check_vma).items():
            value = run()
            leaves = jax.tree_util.tree_leaves(value)
            results[f"{name}/check_vma={check_vma}"] = [np.asarray(v).tolist() for v in leaves]
    with open(OUT, "w") as f:
        json.dump({"jax_version": jax.__version__, "results": results}, f, indent=1)
        f.write("\n")
    print(f"wrote {len(results)} results to {OUT}")


if __name__ == "__main__":
    main()
