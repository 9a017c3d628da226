"""An MLP and a transformer block, traced forward and as a full training step, printed with
their shardings, and evaluated equal to plain numpy implementations."""

import math

import numpy as np

import xla_spmd as xs
import xla_spmd.nn as nn
import xla_spmd.numpy as xnp
from xla_spmd.mesh import AxisType, make_mesh
from xla_spmd.sharding import NamedSharding, P

RNG = np.random.default_rng(7)
MESH = make_mesh({"data": 2, "model": 4}, axis_types=AxisType.Auto)  # propagation


def _rand(*shape, scale=0.5, dtype=np.float32):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


# ---------------------------------------------------------------------------------------------
# MLP


def mlp_loss(params, x, y):
    h = nn.relu(x @ params["w1"] + params["b1"])
    out = h @ params["w2"] + params["b2"]
    return xnp.mean((out - y) ** 2)


def mlp_step(params, x, y):
    loss, grads = xs.value_and_grad(mlp_loss)(params, x, y)
    return {k: params[k] - 0.1 * grads[k] for k in params}, loss


def numpy_mlp_step(params, x, y):
    pre = x @ params["w1"] + params["b1"]
    h = np.maximum(pre, 0)
    out = h @ params["w2"] + params["b2"]
    loss = np.mean((out - y) ** 2)
    d_out = 2 * (out - y) / out.size
    d_h = d_out @ params["w2"].T * (pre > 0)
    grads = {"w2": h.T @ d_out, "b2": d_out.sum(0), "w1": x.T @ d_h, "b1": d_h.sum(0)}
    return {k: params[k] - 0.1 * grads[k] for k in params}, loss


def test_mlp_training_step_matches_numpy_and_shows_shardings():
    params = {"w1": _rand(8, 16), "b1": _rand(16), "w2": _rand(16, 4), "b2": _rand(4)}
    x, y = _rand(6, 8), _rand(6, 4)
    shard = {"w1": NamedSharding(MESH, P(None, "model")), "b1": NamedSharding(MESH, P("model")),
             "w2": NamedSharding(MESH, P("model", None)), "b2": NamedSharding(MESH, P())}
    batch = NamedSharding(MESH, P("data"))
    step = xs.jit(mlp_step, in_shardings=(shard, batch, batch), out_shardings=(shard, None))
    new_params, loss = step(params, x, y)
    expected, expected_loss = numpy_mlp_step(params, x, y)
    np.testing.assert_allclose(float(loss), expected_loss, rtol=1e-5)
    for k in params:
        np.testing.assert_allclose(np.asarray(new_params[k]), expected[k], rtol=1e-5, atol=1e-6)
    text = step.lower(params, x, y).as_text(dialect="hlo")
    # HLO text carries the GSPMD form and, as XLA prints it, the Shardy form beside it.
    assert r'{}, {\"model\"}' in text and r'{\"data\"}, {}' in text
    assert "sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}" in text
    root = step.lower(params, x, y).module.entry.root
    assert root.opcode == "tuple" and len(root.sharding) == 5
    assert str(root.sharding[1]) == str(shard["b2"].to_tensor_sharding(1))


# ---------------------------------------------------------------------------------------------
# Transformer block: layer norm, causal multi-head attention, GELU MLP, residuals

HEADS = 2


def block(params, x):
    b, s, d = x.shape
    h = nn.layer_norm(x, params["ln1_g"], params["ln1_b"])
    q = xnp.reshape(h @ params["wq"], (b, s, HEADS, d // HEADS))
    k = xnp.reshape(h @ params["wk"], (b, s, HEADS, d // HEADS))
    v = xnp.reshape(h @ params["wv"], (b, s, HEADS, d // HEADS))
    scores = xnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // HEADS)
    causal = xnp.tril(xnp.ones((s, s), xnp.bool_))
    scores = xnp.where(causal, scores, -1e9)
    attention = xnp.einsum("bhqk,bkhd->bqhd", nn.softmax(scores, axis=-1), v)
    x = x + xnp.reshape(attention, (b, s, d)) @ params["wo"]
    h = nn.layer_norm(x, params["ln2_g"], params["ln2_b"])
    return x + nn.gelu(h @ params["w_up"]) @ params["w_down"]


def block_loss(params, x, y):
    return xnp.mean((block(params, x) - y) ** 2)


def numpy_block(params, x):
    def layer_norm(v, g, bias):
        mean = v.mean(-1, keepdims=True)
        return (v - mean) / np.sqrt(v.var(-1, keepdims=True) + 1e-5) * g + bias

    def gelu(v):
        return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))

    b, s, d = x.shape
    h = layer_norm(x, params["ln1_g"], params["ln1_b"])
    q, k, v = ((h @ params[w]).reshape(b, s, HEADS, d // HEADS) for w in ("wq", "wk", "wv"))
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // HEADS)
    scores = np.where(np.tril(np.ones((s, s), bool)), scores, -1e9)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    x = x + np.einsum("bhqk,bkhd->bqhd", weights, v).reshape(b, s, d) @ params["wo"]
    h = layer_norm(x, params["ln2_g"], params["ln2_b"])
    return x + gelu(h @ params["w_up"]) @ params["w_down"]


def _block_params(dtype):
    d, f = 8, 16
    params = {name: _rand(*shape, dtype=dtype) for name, shape in [
        ("wq", (d, d)), ("wk", (d, d)), ("wv", (d, d)), ("wo", (d, d)),
        ("w_up", (d, f)), ("w_down", (f, d))]}
    params.update(ln1_g=np.ones(d, dtype), ln1_b=np.zeros(d, dtype),
                  ln2_g=_rand(d, dtype=dtype) + 1, ln2_b=_rand(d, dtype=dtype))
    return params


def _block_shardings():
    column, row = NamedSharding(MESH, P(None, "model")), NamedSharding(MESH, P("model", None))
    replicated = NamedSharding(MESH, P())
    return {"wq": column, "wk": column, "wv": column, "wo": row, "w_up": column,
            "w_down": row, "ln1_g": replicated, "ln1_b": replicated, "ln2_g": replicated,
            "ln2_b": replicated}


def test_transformer_block_forward_matches_numpy():
    params = _block_params(np.float32)
    x = _rand(2, 4, 8)
    forward = xs.jit(block, in_shardings=(_block_shardings(), NamedSharding(MESH, P("data"))))
    np.testing.assert_allclose(np.asarray(forward(params, x)), numpy_block(params, x),
                               rtol=2e-4, atol=2e-5)
    text = forward.lower(params, x).as_text(dialect="hlo")
    assert "dot(" in text and "reduce(" in text and r'{\"data\"}, {}, {}' in text


def test_transformer_training_step_matches_numpy_gradients(x64):
    params = _block_params(np.float64)
    x, y = _rand(2, 4, 8, dtype=np.float64), _rand(2, 4, 8, dtype=np.float64)
    lr = 0.5

    def train_step(params, x, y):
        loss, grads = xs.value_and_grad(block_loss)(params, x, y)
        new = {k: params[k] - lr * grads[k] for k in params}
        return xs.with_sharding_constraint(new, _block_shardings()), loss

    step = xs.jit(train_step, in_shardings=(_block_shardings(), NamedSharding(MESH, P("data")),
                                            NamedSharding(MESH, P("data"))),
                  out_shardings=(_block_shardings(), NamedSharding(MESH, P())))
    new_params, loss = step(params, x, y)

    def numpy_loss(p):
        return np.mean((numpy_block(p, x) - y) ** 2)
    np.testing.assert_allclose(float(loss), numpy_loss(params), rtol=1e-10)
    # The update is -lr * gradient: check it against numpy central differences.
    for name in ("wq", "wo", "w_up", "ln2_g"):
        direction = RNG.standard_normal(params[name].shape)
        gradient = (params[name] - np.asarray(new_params[name])) / lr
        eps = 1e-6
        plus, minus = dict(params), dict(params)
        plus[name] = params[name] + eps * direction
        minus[name] = params[name] - eps * direction
        numeric = (numpy_loss(plus) - numpy_loss(minus)) / (2 * eps)
        np.testing.assert_allclose(np.sum(gradient * direction), numeric, rtol=1e-6, atol=1e-9)
    lowered = step.lower(params, x, y)
    text = lowered.as_text(dialect="hlo")
    assert 'custom_call_target="Sharding"' in text
    sharded = [p for p in lowered.module.entry.parameters if p.sharding is not None]
    assert len(sharded) == len(lowered.module.entry.parameters)
    assert len(lowered.module.entry.root.sharding) == len(params) + 1
