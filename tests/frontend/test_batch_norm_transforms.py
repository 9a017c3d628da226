"""Batch norm under grad (VJP against finite differences, every result's cotangent) and vmap
(equal to the op applied to each batch element)."""

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.numpy as xnp
from xla_spmd.frontend import lax
from xla_spmd.frontend.tracing import bind

pytestmark = pytest.mark.usefixtures("x64")  # finite differences in float64
RNG = np.random.default_rng(5)


def _training(x, scale, offset):
    out = bind("batch-norm-training", x, scale, offset, epsilon=0.01, feature_index=1)
    return [lax.get_tuple_element(out, i) for i in range(3)]


def _loss(x, scale, offset):
    output, mean, variance = _training(x, scale, offset)
    inference = bind("batch-norm-inference", x, scale, offset, mean, variance * 2.0,
                     epsilon=0.01, feature_index=1)
    grads = bind("batch-norm-grad", x, scale, mean, variance + 1.0, xnp.sin(output),
                 epsilon=0.01, feature_index=1)
    return (xnp.sum(xnp.sin(output)) + xnp.sum(mean * mean) + xnp.sum(xnp.cos(variance))
            + xnp.sum(inference * inference) + xnp.sum(lax.get_tuple_element(grads, 0) ** 2)
            + xnp.sum(lax.get_tuple_element(grads, 1)))


def test_grad_equals_finite_differences():
    args = [RNG.standard_normal((5, 3, 2)), RNG.standard_normal(3), RNG.standard_normal(3)]
    grads = xs.jit(xs.grad(_loss, argnums=(0, 1, 2)))(*args)
    f = xs.jit(_loss)
    directions = [RNG.standard_normal(np.shape(a)) for a in args]
    analytic = sum(float(np.sum(np.asarray(g) * d)) for g, d in zip(grads, directions))
    eps = 1e-6
    plus = float(f(*[a + eps * d for a, d in zip(args, directions)]))
    minus = float(f(*[a - eps * d for a, d in zip(args, directions)]))
    np.testing.assert_allclose(analytic, (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-7)


def test_vmap_equals_each_element():
    x = RNG.standard_normal((4, 6, 3))  # 4 batch elements of f64[6,3]
    scale = RNG.standard_normal((4, 3))
    offset = RNG.standard_normal(3)
    batched = xs.jit(xs.vmap(lambda a, s: _training(a, s, offset)))(x, scale)
    for k in range(4):
        single = xs.jit(lambda a, s: _training(a, s, offset))(x[k], scale[k])
        for got, want in zip(batched, single):
            np.testing.assert_allclose(np.asarray(got)[k], np.asarray(want), rtol=1e-12,
                                       atol=1e-12)
