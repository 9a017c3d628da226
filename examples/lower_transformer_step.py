"""A transformer training step written as a JAX user writes one, lowered with Megatron-style
shardings, then run for a few steps.

    python examples/lower_transformer_step.py [--dialect hlo|stablehlo] [--steps 3]

Parameters come from `xla_spmd.random`; the loss is a one-layer causal-attention transformer
with an MLP; `xs.value_and_grad` gives the gradients and SGD updates the parameters. The step
is jitted over ``make_mesh({"data": 2, "model": 4})``: the batch is split over "data"; the
attention heads and the MLP hidden units over "model" (column-parallel in, row-parallel out,
as Megatron-LM). It prints ``train_step.lower(...).as_text()`` (HLO, or StableHLO with
Shardy attributes), then runs the jitted step on the reference backend (one device, global
shapes) and prints the loss of each step.
"""

from __future__ import annotations

import argparse
import math

import xla_spmd as xs
import xla_spmd.nn as nn
import xla_spmd.numpy as xnp
import xla_spmd.random as xr
from xla_spmd.sharding import NamedSharding, P

VOCAB, D_MODEL, HEADS, D_HEAD, D_FF = 32, 16, 4, 4, 32
BATCH, SEQ = 4, 8
LEARNING_RATE = 0.5


def init_params(key):
    keys = xr.split(key, 7)

    def dense(k, shape):
        return xr.normal(k, shape, xnp.float32) / math.sqrt(shape[0])
    return {
        "embed": xr.normal(keys[0], (VOCAB, D_MODEL), xnp.float32) * 0.5,
        "attn": {"wq": dense(keys[1], (D_MODEL, HEADS * D_HEAD)),
                 "wk": dense(keys[2], (D_MODEL, HEADS * D_HEAD)),
                 "wv": dense(keys[3], (D_MODEL, HEADS * D_HEAD)),
                 "wo": dense(keys[4], (HEADS * D_HEAD, D_MODEL))},
        "mlp": {"w1": dense(keys[5], (D_MODEL, D_FF)), "w2": dense(keys[6], (D_FF, D_MODEL))},
        "ln": {"scale": xnp.ones((D_MODEL,), xnp.float32),
               "bias": xnp.zeros((D_MODEL,), xnp.float32)},
    }


def param_specs():
    """Megatron: q/k/v and w1 split by output columns, wo and w2 by input rows."""
    column, row, replicated = P(None, "model"), P("model", None), P()
    return {"embed": P(None, None),
            "attn": {"wq": column, "wk": column, "wv": column, "wo": row},
            "mlp": {"w1": column, "w2": row},
            "ln": {"scale": replicated, "bias": replicated}}


def attention(p, x):
    batch, seq, _ = x.shape
    q, k, v = (xnp.reshape(x @ p[w], (batch, seq, HEADS, D_HEAD)) for w in ("wq", "wk", "wv"))
    scores = xnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(D_HEAD)
    causal = xnp.tril(xnp.ones((seq, seq), xnp.bool_))
    scores = xnp.where(causal, scores, -1e9)
    weights = nn.softmax(scores, axis=-1)
    out = xnp.einsum("bhqk,bkhd->bqhd", weights, v)
    return xnp.reshape(out, (batch, seq, HEADS * D_HEAD)) @ p["wo"]


def loss_fn(params, tokens, targets):
    x = params["embed"][tokens]
    h = nn.layer_norm(x, params["ln"]["scale"], params["ln"]["bias"])
    x = x + attention(params["attn"], h)
    x = x + nn.gelu(x @ params["mlp"]["w1"]) @ params["mlp"]["w2"]
    logits = x @ params["embed"].T  # tied input and output embeddings
    return xnp.mean(nn.softmax_cross_entropy_with_integer_labels(logits, targets))


def train_step(params, tokens, targets):
    loss, grads = xs.value_and_grad(loss_fn)(params, tokens, targets)
    new_params = xs.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)
    return new_params, loss


def make_train_step(mesh):
    param_shardings = xs.tree_map(lambda spec: NamedSharding(mesh, spec), param_specs(),
                                  is_leaf=lambda s: isinstance(s, xs.PartitionSpec))
    batch = NamedSharding(mesh, P("data", None))
    return xs.jit(train_step, in_shardings=(param_shardings, batch, batch),
                  out_shardings=(param_shardings, NamedSharding(mesh, P())),
                  donate_argnums=0)


def main(argv=None) -> list[float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialect", choices=("hlo", "stablehlo"), default="hlo")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args(argv)

    mesh = xs.make_mesh((2, 4), ("data", "model"), axis_types=(xs.AxisType.Auto,) * 2)
    params = init_params(xr.key(0))
    tokens = xr.randint(xr.key(1), (BATCH, SEQ), 0, VOCAB)
    targets = xnp.concatenate([tokens[:, 1:], tokens[:, :1]], axis=1)  # next token, wrapped
    step = make_train_step(mesh)
    print(step.lower(params, tokens, targets).as_text(dialect=args.dialect))
    losses = []
    for i in range(args.steps):
        params, loss = step(params, tokens, targets)
        losses.append(float(loss))
        print(f"step {i}: loss {losses[-1]:.6f}")
    return losses


if __name__ == "__main__":
    main()
