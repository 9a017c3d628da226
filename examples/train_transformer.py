"""Train a small decoder-only transformer on a synthetic next-token task.

    python examples/train_transformer.py --mesh data=2,model=4 --strategy dp|tp|fsdp|2d
    mpirun -n 8 python examples/train_transformer.py --mesh data=2,model=4

The model is written with `xla_spmd.numpy` as one would with `jax.numpy`; only the parameters
and the batch carry shardings (see training.py for the strategies); `xs.jit` propagates them,
partitions the step and runs it on the devices. The data is a fixed-seed sequence task: each
token is the previous one plus a per-sequence stride (mod the vocabulary), learnable from
context, so the loss falls.
"""

from __future__ import annotations

import math

import numpy as np
from training import make_mesh, parse_args, sharded_step, train

import xla_spmd as xs
import xla_spmd.nn as nn
import xla_spmd.numpy as xnp

VOCAB, D_MODEL, D_FF, HEADS, LAYERS, SEQ, BATCH = 32, 32, 64, 4, 2, 16, 8
LEARNING_RATE = 0.5


def init_params(seed: int) -> tuple[dict, dict]:
    """Parameters and the role of each (how Megatron splits it)."""
    rng = np.random.default_rng(seed)

    def dense(d_in, d_out):
        return (rng.standard_normal((d_in, d_out)) / math.sqrt(d_in)).astype(np.float32)

    params = {"embed": dense(VOCAB, D_MODEL) * 4, "unembed": dense(D_MODEL, VOCAB),
              "position": (rng.standard_normal((SEQ, D_MODEL)) * 0.1).astype(np.float32)}
    roles = {"embed": "vector", "unembed": "column", "position": "vector"}
    for layer in range(LAYERS):
        for name, shape, role in (("wq", (D_MODEL, D_MODEL), "column"),
                                  ("wk", (D_MODEL, D_MODEL), "column"),
                                  ("wv", (D_MODEL, D_MODEL), "column"),
                                  ("wo", (D_MODEL, D_MODEL), "row"),
                                  ("w_up", (D_MODEL, D_FF), "column"),
                                  ("w_down", (D_FF, D_MODEL), "row")):
            params[f"{layer}.{name}"], roles[f"{layer}.{name}"] = dense(*shape), role
        for name in ("ln1", "ln2"):
            params[f"{layer}.{name}_g"] = np.ones(D_MODEL, np.float32)
            params[f"{layer}.{name}_b"] = np.zeros(D_MODEL, np.float32)
            roles[f"{layer}.{name}_g"] = roles[f"{layer}.{name}_b"] = "vector"
    return params, roles


def attention(p, layer, x):
    b, s, d = x.shape
    h = nn.layer_norm(x, p[f"{layer}.ln1_g"], p[f"{layer}.ln1_b"])
    q, k, v = (xnp.reshape(h @ p[f"{layer}.{w}"], (b, s, HEADS, d // HEADS))
               for w in ("wq", "wk", "wv"))
    scores = xnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // HEADS)
    causal = xnp.tril(xnp.ones((s, s), xnp.bool_))
    weights = nn.softmax(xnp.where(causal, scores, -1e9), axis=-1)
    mixed = xnp.einsum("bhqk,bkhd->bqhd", weights, v)
    return x + xnp.reshape(mixed, (b, s, d)) @ p[f"{layer}.wo"]


def mlp(p, layer, x):
    h = nn.layer_norm(x, p[f"{layer}.ln2_g"], p[f"{layer}.ln2_b"])
    return x + nn.gelu(h @ p[f"{layer}.w_up"]) @ p[f"{layer}.w_down"]


def loss_fn(params, tokens, targets):
    x = xnp.take(params["embed"], tokens, axis=0) + params["position"]
    for layer in range(LAYERS):
        x = mlp(params, layer, attention(params, layer, x))
    logits = x @ params["unembed"]
    return xnp.mean(nn.softmax_cross_entropy_with_integer_labels(logits, targets))


def train_step(params, tokens, targets):
    loss, grads = xs.value_and_grad(loss_fn)(params, tokens, targets)
    return {k: params[k] - LEARNING_RATE * grads[k] for k in params}, loss


def make_batches(seed: int):
    def batch(step: int):
        rng = np.random.default_rng(seed * 1000 + step)
        start = rng.integers(0, VOCAB, (BATCH, 1))
        stride = rng.integers(1, 4, (BATCH, 1))
        sequence = (start + stride * np.arange(SEQ + 1)) % VOCAB
        return sequence[:, :-1].astype(np.int32), sequence[:, 1:].astype(np.int32)
    return batch


def main() -> list[float]:
    args = parse_args(__doc__.split("\n")[0])
    params, roles = init_params(args.seed)
    step, params = sharded_step(train_step, make_mesh(args.mesh), args.strategy, params, roles,
                                make_batches(args.seed)(0))
    return train(step, params, make_batches(args.seed), args=args,
                 items_per_step=BATCH * SEQ, unit="tokens", title="transformer")


# What `xla-spmd bench` reads: the step, the parameters with their roles, the batches.
step, (params, roles), batch = train_step, init_params(0), make_batches(0)


if __name__ == "__main__":
    main()
