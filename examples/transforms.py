"""JAX's transforms on a sharded program: per-example gradients with vmap(grad), a
Hessian-vector product by forward-over-reverse, a Jacobian, remat and a custom VJP, all
inside one xs.jit whose inputs are sharded over a 2x2 mesh.

    python examples/transforms.py

Prints the largest difference between the sharded results and the same transforms run
unsharded (eagerly, on one device): they agree.
"""

from __future__ import annotations

import numpy as np

import xla_spmd as xs
import xla_spmd.numpy as xnp
from xla_spmd import NamedSharding, P


@xs.custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (xnp.clip(g, -1.0, 1.0),))


def loss(w, x, y):
    hidden = xs.remat(lambda h: xnp.tanh(h @ w))(x)
    return xnp.mean((clip_gradient(hidden).sum(axis=-1) - y) ** 2)


def analyse(w, x, y):
    per_example = xs.vmap(xs.grad(loss), in_axes=(None, 0, 0))(w, x[:, None], y[:, None])
    gradient = xs.grad(loss)(w, x, y)
    hvp = xs.jvp(lambda u: xs.grad(loss)(u, x, y), (w,), (xnp.ones_like(w),))[1]
    jacobian = xs.jacrev(lambda u: xnp.tanh(x @ u).sum(axis=0))(w)
    return {"per_example": per_example, "gradient": gradient, "hvp": hvp, "jacobian": jacobian}


def main() -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 3)).astype(np.float32)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    y = rng.standard_normal(8).astype(np.float32)
    mesh = xs.make_mesh((2, 2), ("data", "model"), axis_types=(xs.AxisType.Auto,) * 2)
    step = xs.jit(analyse, in_shardings=(NamedSharding(mesh, P(None, "model")),
                                         NamedSharding(mesh, P("data")),
                                         NamedSharding(mesh, P("data"))))
    sharded = xs.device_get(step(w, x, y))
    reference = xs.device_get(analyse(w, x, y))
    for name in sharded:
        print(f"{name:12s} shape {str(sharded[name].shape):12s} max |sharded - unsharded| = "
              f"{np.max(np.abs(sharded[name] - reference[name])):.2e}")

if __name__ == "__main__":
    main()
