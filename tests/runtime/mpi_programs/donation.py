"""Under mpirun -n 2, the CPU backend: donated arguments and recycled results on MPI ranks.
A training loop that donates its parameters gives the bits of one that does not; results
kept from earlier calls (all-reduced, 2 MB: recycled buffers of the communicator and of
the backend) never change; a donated buffer holding another result is left to it."""
import numpy as np

import xla_spmd as xs
from xla_spmd import NamedSharding, P

xs.config.update("backend", "cpu")
mesh = xs.make_mesh({"x": 2}, axis_types=xs.AxisType.Auto)
row, rep = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())
rng = np.random.default_rng(0)

# A training loop, with and without donation: the same losses and weights, bit for bit.
w0 = rng.standard_normal((32, 16)).astype(np.float32) * 0.1
x = rng.standard_normal((64, 32)).astype(np.float32)
y = rng.standard_normal((64, 16)).astype(np.float32)


def loss(w, x, y):
    return xs.numpy.mean((xs.numpy.tanh(x @ w) - y) ** 2)


def step(w, x, y):
    value, grad = xs.value_and_grad(loss)(w, x, y)
    return w - 0.1 * grad, value


runs = []
for donate in ((), 0):
    train = xs.jit(step, in_shardings=(rep, row, row), out_shardings=(rep, rep),
                   donate_argnums=donate)
    w, xb, yb = xs.device_put(w0, rep), xs.device_put(x, row), xs.device_put(y, row)
    values = []
    for _ in range(4):
        w, value = train(w, xb, yb)
        values.append(np.asarray(value).tobytes())
    runs.append((values, np.asarray(w).tobytes()))
assert runs[0] == runs[1], "donation changed the training loop"

# Large all-reduced results kept across calls: never written by later calls.
n = 1 << 19
total = xs.jit(lambda a: (a.sum(0) * 2.0, a.sum(0)), in_shardings=row,
               out_shardings=(rep, rep))
kept = []
for _ in range(4):
    a = rng.integers(-3, 4, (4, n)).astype(np.float32)
    doubled, summed = total(xs.device_put(a, row))
    kept.append((doubled, summed, a.sum(0)))
for doubled, summed, want in kept:
    assert np.array_equal(np.asarray(summed), want) and np.array_equal(
        np.asarray(doubled), want * 2), "a kept result changed"

# A donated buffer that holds another result (x + d computed in x's buffer) keeps it.
k = 16
xa = rng.integers(-3, 4, (64, k)).astype(np.float32)
wa = rng.integers(-3, 4, (k, k)).astype(np.float32)


def both(x, w):
    d = x @ w
    return d, x + d


d, s = xs.jit(both, in_shardings=(row, rep), out_shardings=(row, row),
              donate_argnums=0)(xs.device_put(xa, row), xs.device_put(wa, rep))
assert np.array_equal(np.asarray(d), xa @ wa) and np.array_equal(np.asarray(s), xa + xa @ wa)
print(f"rank {xs.process_index()} ok", flush=True)
