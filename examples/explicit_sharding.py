"""JAX 0.10's explicit sharding mode and debug printing: an MLP training step on a mesh
whose axes are Explicit, so every value's sharding is part of its type.

    python examples/explicit_sharding.py

Prints each layer's type as it is traced (`xs.typeof`), the loss from inside the jitted
step (`xs.debug.print`), the error the types give for an ambiguous matmul and how
`out_sharding` settles it, and checks the step against numpy.
"""

from __future__ import annotations

import numpy as np

import xla_spmd as xs
import xla_spmd.numpy as xnp
from xla_spmd import NamedSharding, P

mesh = xs.make_mesh((2, 4), ("data", "model"), axis_types=(xs.AxisType.Explicit,) * 2)
rng = np.random.default_rng(0)
X = rng.standard_normal((16, 8)).astype(np.float32)
Y = rng.standard_normal((16, 4)).astype(np.float32)
W1 = (rng.standard_normal((8, 32)) / 4).astype(np.float32)
W2 = (rng.standard_normal((32, 4)) / 4).astype(np.float32)

x = xs.device_put(X, NamedSharding(mesh, P("data", None)))            # batch over "data"
y = xs.device_put(Y, NamedSharding(mesh, P("data", None)))
w1 = xs.device_put(W1, NamedSharding(mesh, P(None, "model")))         # hidden over "model"
w2 = xs.device_put(W2, NamedSharding(mesh, P("model", None)))


def loss(params, x, y):
    w1, w2 = params
    h = xnp.tanh(x @ w1)
    print("hidden:", xs.typeof(h).sharding.spec)                      # P('data', 'model')
    # h's "model" dim meets w2's "model" dim: a sum over shards. The types cannot say how
    # the result is sharded, so out_sharding does.
    out = xnp.matmul(h, w2, out_sharding=P("data", None))
    print("output:", xs.typeof(out).sharding.spec)                    # P('data', None)
    return xnp.mean((out - y) ** 2)


@xs.jit
def step(params, x, y):
    value, grads = xs.value_and_grad(loss)(params, x, y)
    xs.debug.print("loss inside the step: {l:.6f}", l=value)
    return value, [p - 0.1 * g for p, g in zip(params, grads)]


value, (new_w1, new_w2) = step([w1, w2], x, y)
print("new w1:", new_w1.sharding.spec, " new w2:", new_w2.sharding.spec)

try:
    xs.jit(lambda h, w: h @ w)(xs.device_put(X @ W1, NamedSharding(mesh, P("data", "model"))),
                               w2)
except xs.errors.ShardingError as error:
    print("without out_sharding:", str(error).split(".")[0])

# numpy: the same step
h = np.tanh(X @ W1)
err = 2 * (h @ W2 - Y) / Y.size
g2 = h.T @ err
g1 = X.T @ ((err @ W2.T) * (1 - h ** 2))
ok = np.allclose(float(value), np.mean((h @ W2 - Y) ** 2), rtol=1e-5) and \
    np.allclose(np.asarray(new_w1), W1 - 0.1 * g1, atol=1e-5) and \
    np.allclose(np.asarray(new_w2), W2 - 0.1 * g2, atol=1e-5)
print("matches numpy:", ok)
