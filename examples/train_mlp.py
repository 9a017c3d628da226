"""Train a 3-layer MLP regressor on synthetic data.

    python examples/train_mlp.py --mesh data=2,model=4 --strategy dp|tp|fsdp|2d
    mpirun -n 8 python examples/train_mlp.py --mesh data=2,model=4

Only the parameters and the batch carry shardings (see training.py for the strategies);
`xs.jit` propagates them, partitions the step and runs it on the devices. The targets come
from a fixed random teacher network, so the loss falls.
"""

from __future__ import annotations

import numpy as np
from training import make_mesh, parse_args, sharded_step, train

import xla_spmd as xs
import xla_spmd.nn as nn
import xla_spmd.numpy as xnp

D_IN, HIDDEN, D_OUT, BATCH = 16, 64, 8, 32
LEARNING_RATE = 0.05


def init_params(seed: int) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    sizes = [(D_IN, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, D_OUT)]
    params, roles = {}, {}
    for i, (d_in, d_out) in enumerate(sizes):
        params[f"w{i}"] = (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(np.float32)
        params[f"b{i}"] = np.zeros(d_out, np.float32)
        # Megatron pairs: column-parallel, then row-parallel; the last layer is small.
        roles[f"w{i}"] = ("column", "row", "vector")[i]
        roles[f"b{i}"] = "vector"
    return params, roles


def loss_fn(params, x, y):
    h = nn.relu(x @ params["w0"] + params["b0"])
    h = nn.relu(h @ params["w1"] + params["b1"])
    return xnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


def train_step(params, x, y):
    loss, grads = xs.value_and_grad(loss_fn)(params, x, y)
    return {k: params[k] - LEARNING_RATE * grads[k] for k in params}, loss


def make_batches(seed: int):
    teacher = np.random.default_rng(seed + 1).standard_normal((D_IN, D_OUT)).astype(np.float32)

    def batch(step: int):
        x = np.random.default_rng(seed * 1000 + step).standard_normal((BATCH, D_IN))
        x = x.astype(np.float32)
        return x, np.tanh(x @ teacher)
    return batch


def main() -> list[float]:
    args = parse_args(__doc__.split("\n")[0], steps=30)
    params, roles = init_params(args.seed)
    step, params = sharded_step(train_step, make_mesh(args.mesh), args.strategy, params, roles,
                                make_batches(args.seed)(0))
    return train(step, params, make_batches(args.seed), args=args, items_per_step=BATCH,
                 unit="samples", title="mlp")


# What `xla-spmd bench` reads: the step, the parameters with their roles, the batches.
step, (params, roles), batch = train_step, init_params(0), make_batches(0)


if __name__ == "__main__":
    main()
