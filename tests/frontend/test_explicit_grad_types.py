"""The backward pass under Explicit mesh axes is typed, as JAX's (issue 16): the transpose
rules compute typed values (dot's transpose gives its dot the primal's type, JAX's
``out_sharding=``; a reduce's transpose broadcasts to the operand's type; a gather's
scatters into zeros of the operand's type), so every value the gradient program computes
from its inputs has a sharding type, and each gradient has its primal's type (JAX's
cotangent types). Values against numpy (the gradients worked by hand) and central finite
differences."""

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.numpy as xnp
from xla_spmd import NamedSharding, P
from xla_spmd.ir import ArrayShape
from xla_spmd.ir.custom_calls import SHARDING

RNG = np.random.default_rng(11)
X = RNG.standard_normal((8, 4)).astype(np.float32)
W = RNG.standard_normal((4, 8)).astype(np.float32)
V = RNG.standard_normal((4,)).astype(np.float32)
IDX = np.array([3, 0, 3, 7, 1], np.int32)
_LEAVES = {"constant", "iota", "partition-id", "replica-id", "after-all"}


@pytest.fixture
def mesh():
    return xs.make_mesh((2, 4), ("a", "b"), axis_types=(xs.AxisType.Explicit,) * 2)


def _untyped(module) -> list[str]:
    """The array values of the entry computation computed from its parameters that have no
    sharding (type): what a typed backward pass leaves out. An op given ``out_sharding=``
    is recorded as the op and its type as a sharding constraint on it, its only user."""
    instructions = module.entry.instructions
    users: dict[int, list] = {}
    for inst in instructions:
        for o in inst.operands:
            users.setdefault(id(o), []).append(inst)
    constant_only: set[int] = set()
    missing = []
    for inst in instructions:
        if inst.opcode in _LEAVES or (inst.opcode != "parameter" and
                                      all(id(o) in constant_only for o in inst.operands)):
            constant_only.add(id(inst))
            continue
        constrained = users.get(id(inst)) and all(
            u.opcode == "custom-call" and u.attrs.custom_call_target == SHARDING
            and u.sharding is not None for u in users[id(inst)])
        if isinstance(inst.shape, ArrayShape) and inst.sharding is None and not constrained:
            missing.append(f"{inst.opcode} {inst.name}")
    return missing


def _grad_case(mesh, loss, args, specs, argnums=None):
    placed = [xs.device_put(a, NamedSharding(mesh, P(*s))) for a, s in zip(args, specs)]
    argnums = tuple(range(len(args))) if argnums is None else argnums
    grad = xs.jit(xs.grad(loss, argnums=argnums))
    lowered = grad.lower(*placed)
    return _untyped(lowered.module), grad(*placed)


def _finite_difference(loss, args, k, eps=1e-2):
    """Central differences of `loss` (numpy, float64) in argument `k`."""
    args = [np.asarray(a, np.float64) for a in args]
    out = np.zeros_like(args[k])
    for index in np.ndindex(args[k].shape):
        up = [a.copy() for a in args]
        down = [a.copy() for a in args]
        up[k][index] += eps
        down[k][index] -= eps
        out[index] = (loss(*up) - loss(*down)) / (2 * eps)
    return out


def test_matmul_grads_are_typed_throughout(mesh):
    """x P('a', None) @ w P(None, 'b'): dx = g @ wᵀ contracts the dim sharded over 'b' on
    both sides (the types alone would refuse it; JAX's transpose rule types that dot with
    x's spec), dw = xᵀ @ g contracts 'a'; the gradients are P('a', None) and P(None, 'b')."""
    def loss(x, w):
        return xnp.sum(xnp.tanh(x @ w))

    untyped, (gx, gw) = _grad_case(mesh, loss, (X, W), (("a", None), (None, "b")))
    assert untyped == []
    assert gx.sharding.spec == P("a", None) and gw.sharding.spec == P(None, "b")
    d = 1 - np.tanh(X @ W) ** 2
    np.testing.assert_allclose(np.asarray(gx), d @ W.T, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gw), X.T @ d, rtol=1e-4, atol=1e-5)

    def np_loss(x, w):
        return np.sum(np.tanh(x @ w))
    np.testing.assert_allclose(np.asarray(gx), _finite_difference(np_loss, (X, W), 0),
                               rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(gw), _finite_difference(np_loss, (X, W), 1),
                               rtol=1e-3, atol=1e-3)


def test_reduce_grads_are_typed_throughout(mesh):
    """sum over the dim sharded 'b' and a max over rows: the transposes broadcast back to
    x's type P('a', 'b')."""
    def loss(x):
        return xnp.sum(x.sum(1) ** 2) + xnp.sum(x.max(0))

    untyped, (gx,) = _grad_case(mesh, loss, (X,), (("a", "b"),))
    assert untyped == []
    assert gx.sharding.spec == P("a", "b")
    want = 2 * X.sum(1, keepdims=True) + (X == X.max(0, keepdims=True))
    np.testing.assert_allclose(np.asarray(gx), np.broadcast_to(want, X.shape), rtol=1e-5)


def test_broadcast_grads_are_typed_throughout(mesh):
    """v P('b') broadcast over rows of x P('a', 'b'): v's gradient sums over the rows
    (sharded 'a') and has v's type P('b')."""
    def loss(v, x):
        return xnp.sum((x + v[None, :]) ** 2) + xnp.sum(v * 3.0)

    untyped, (gv, gx) = _grad_case(mesh, loss, (V, X), (("b",), ("a", "b")))
    assert untyped == []
    assert gv.sharding.spec == P("b") and gx.sharding.spec == P("a", "b")
    np.testing.assert_allclose(np.asarray(gv), 2 * (X + V).sum(0) + 3.0, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(gx), 2 * (X + V), rtol=1e-5)


def test_gather_grads_are_typed_throughout(mesh):
    """x[idx] with x P(None, 'b') (rows gathered whole, columns sharded): the transpose
    scatters into zeros of x's type, and the gradient (repeated rows add up) is
    P(None, 'b')."""
    def loss(x, idx):
        return xnp.sum(x[idx] ** 3)

    untyped, (gx,) = _grad_case(mesh, loss, (X, IDX), ((None, "b"), ()), argnums=(0,))
    assert untyped == []
    assert gx.sharding.spec == P(None, "b")
    want = np.zeros_like(X)
    np.add.at(want, IDX, 3 * X[IDX] ** 2)
    np.testing.assert_allclose(np.asarray(gx), want, rtol=1e-5)


def test_intermediate_cotangents_have_jax_types(mesh):
    """The dot inside dw's transpose has w's type in its own dim order (JAX's out_sharding=
    of ``_dot_general_transpose_lhs``: gᵀ x, f32[8, 4], typed P('b', None), then transposed
    to w's P(None, 'b')), not what the operands' types would give (they refuse it: both
    contract the dim sharded over 'a')."""
    x = xs.device_put(X, NamedSharding(mesh, P("a", None)))
    w = xs.device_put(W, NamedSharding(mesh, P(None, "b")))
    module = xs.jit(xs.grad(lambda x, w: xnp.sum(x @ w), argnums=1)).lower(x, w).module
    dots = [i for i in module.entry.instructions if i.opcode == "dot"]
    assert [d.shape.dims for d in dots] == [(8, 4)]  # dw's, before its transpose
    users = [i for i in module.entry.instructions if dots[0] in i.operands]
    assert [u.opcode for u in users] == ["custom-call"]
    typed = users[0].sharding
    assert [[a.name for a in typed.dim_axes(d)] for d in range(2)] == [["b"], []]
