"""Propagation time on transformer training steps of 2 to 48 layers.

Each step is built with the Builder: per layer a forward pass (layer norm, attention with
head reshapes and transposes, softmax, MLP, residuals), its backward pass (the dots of the
input and weight gradients, the elementwise derivatives) and the SGD update of every weight.
Only parameters and the batch carry shardings (Megatron over "model", data parallel over
"data"). The time per op should stay flat as the layers grow: propagation is linear.

    python scripts/bench_propagation.py [--layers 2 4 8 16 32 48] [--strategy ...]
"""

from __future__ import annotations

import argparse
import time

from xla_spmd.ir import F32, ArrayShape, Builder, Module
from xla_spmd.mesh import make_mesh
from xla_spmd.propagation.propagate import run
from xla_spmd.sharding import TensorSharding

MESH = make_mesh({"data": 2, "model": 4})


def _adder():
    b = Builder("add")
    x, y = b.parameter(ArrayShape(F32, ())), b.parameter(ArrayShape(F32, ()))
    return b.build(b.add(x, y))


def _maxer():
    b = Builder("max")
    x, y = b.parameter(ArrayShape(F32, ())), b.parameter(ArrayShape(F32, ()))
    return b.build(b.maximum(x, y))


class StepBuilder:
    """Builds one training step; `B, S, H, NH, F` = batch, sequence, hidden, heads, MLP."""

    def __init__(self, batch=8, seq=128, hidden=256, heads=8, ffn=1024):
        self.b = Builder("train_step")
        self.B, self.S, self.H, self.NH, self.F = batch, seq, hidden, heads, ffn
        self.D = hidden // heads
        self.add_fn, self.max_fn = _adder(), _maxer()
        self.updates = []

    def shape(self, *dims):
        return ArrayShape(F32, dims)

    def param(self, name, dims, spec):
        sharding = TensorSharding(MESH, [list(s) for s in spec])
        return self.b.parameter(self.shape(*dims), name, sharding=sharding)

    def bcast(self, x, dims, keep):
        return self.b.broadcast(x, dimensions=keep, shape=self.shape(*dims))

    def reduce(self, x, dims, kept_dims, fn=None):
        zero = self.b.constant(0.0, F32)
        return self.b.reduce(x, zero, dimensions=dims, to_apply=fn or self.add_fn,
                             shape=self.shape(*kept_dims))

    def dot(self, x, w, lc, rc, lb=(), rb=()):
        return self.b.dot(x, w, lhs_contracting_dims=lc, rhs_contracting_dims=rc,
                          lhs_batch_dims=lb, rhs_batch_dims=rb)

    def layer_norm(self, x, g):
        b, (B, S, H) = self.b, (self.B, self.S, self.H)
        mean = self.reduce(x, (2,), (B, S))
        centered = b.subtract(x, self.bcast(mean, (B, S, H), (0, 1)))
        var = self.reduce(b.multiply(centered, centered), (2,), (B, S))
        inv = b.rsqrt(var)
        normed = b.multiply(centered, self.bcast(inv, (B, S, H), (0, 1)))
        return b.multiply(normed, self.bcast(g, (B, S, H), (2,))), normed

    def heads(self, x):
        B, S, NH, D = self.B, self.S, self.NH, self.D
        r = self.b.reshape(x, shape=self.shape(B, S, NH, D))
        return self.b.transpose(r, dimensions=(0, 2, 1, 3))

    def merge(self, x):
        t = self.b.transpose(x, dimensions=(0, 2, 1, 3))
        return self.b.reshape(t, shape=self.shape(self.B, self.S, self.H))

    def forward_layer(self, x, i):
        b, (B, S, H, NH, F) = self.b, (self.B, self.S, self.H, self.NH, self.F)
        w = {
            "g1": self.param(f"l{i}_ln1", (H,), [[]]),
            "wq": self.param(f"l{i}_wq", (H, H), [[], ["model"]]),
            "wk": self.param(f"l{i}_wk", (H, H), [[], ["model"]]),
            "wv": self.param(f"l{i}_wv", (H, H), [[], ["model"]]),
            "wo": self.param(f"l{i}_wo", (H, H), [["model"], []]),
            "g2": self.param(f"l{i}_ln2", (H,), [[]]),
            "w1": self.param(f"l{i}_w1", (H, F), [[], ["model"]]),
            "w2": self.param(f"l{i}_w2", (F, H), [["model"], []]),
        }
        y, normed = self.layer_norm(x, w["g1"])
        q, k, v = (self.heads(self.dot(y, w[n], (2,), (0,))) for n in ("wq", "wk", "wv"))
        scores = self.dot(q, k, (3,), (3,), (0, 1), (0, 1))
        peak = self.reduce(scores, (3,), (B, NH, S), self.max_fn)
        e = b.exponential(b.subtract(scores, self.bcast(peak, (B, NH, S, S), (0, 1, 2))))
        total = self.reduce(e, (3,), (B, NH, S))
        p = b.divide(e, self.bcast(total, (B, NH, S, S), (0, 1, 2)))
        ctx = self.merge(self.dot(p, v, (3,), (2,), (0, 1), (0, 1)))
        x = b.add(x, self.dot(ctx, w["wo"], (2,), (0,)))
        y2, normed2 = self.layer_norm(x, w["g2"])
        a = b.tanh(self.dot(y2, w["w1"], (2,), (0,)))
        x = b.add(x, self.dot(a, w["w2"], (2,), (0,)))
        saved = dict(y=y, normed=normed, q=q, k=k, v=v, p=p, ctx=ctx, y2=y2, normed2=normed2,
                     a=a)
        return x, (w, saved)

    def backward_layer(self, dx, w, s):
        b = self.b
        # MLP
        self.update(w["w2"], self.dot(s["a"], dx, (0, 1), (0, 1)))
        da = self.dot(dx, w["w2"], (2,), (1,))
        dh = b.multiply(da, b.subtract(b.multiply(s["a"], s["a"]), s["a"]))
        self.update(w["w1"], self.dot(s["y2"], dh, (0, 1), (0, 1)))
        dy2 = self.dot(dh, w["w1"], (2,), (1,))
        self.update(w["g2"], self.reduce(b.multiply(dy2, s["normed2"]), (0, 1), (self.H,)))
        dx = b.add(dx, b.multiply(dy2, s["normed2"]))
        # attention
        self.update(w["wo"], self.dot(s["ctx"], dx, (0, 1), (0, 1)))
        dctx = self.heads(self.dot(dx, w["wo"], (2,), (1,)))
        dp = self.dot(dctx, s["v"], (3,), (3,), (0, 1), (0, 1))
        dv = self.dot(s["p"], dctx, (2,), (2,), (0, 1), (0, 1))
        ds = b.multiply(s["p"], dp)
        dq = self.dot(ds, s["k"], (3,), (2,), (0, 1), (0, 1))
        dk = self.dot(ds, s["q"], (2,), (2,), (0, 1), (0, 1))
        dy = None
        for name, grad in (("wq", dq), ("wk", dk), ("wv", dv)):
            merged = self.merge(grad)
            self.update(w[name], self.dot(s["y"], merged, (0, 1), (0, 1)))
            back = self.dot(merged, w[name], (2,), (1,))
            dy = back if dy is None else b.add(dy, back)
        self.update(w["g1"], self.reduce(b.multiply(dy, s["normed"]), (0, 1), (self.H,)))
        return b.add(dx, b.multiply(dy, s["normed"]))

    def update(self, weight, grad):
        lr = self.bcast(self.b.constant(0.01, F32), weight.shape.dims, ())
        self.updates.append(self.b.subtract(weight, self.b.multiply(grad, lr)))

    def build(self, layers: int) -> Module:
        B, S, H = self.B, self.S, self.H
        x = self.param("x", (B, S, H), [["data"], [], []])
        target = self.param("target", (B, S, H), [["data"], [], []])
        saved = []
        for i in range(layers):
            x, layer = self.forward_layer(x, i)
            saved.append(layer)
        diff = self.b.subtract(x, target)
        loss = self.reduce(self.b.multiply(diff, diff), (0, 1, 2), ())
        dx = diff
        for w, s in reversed(saved):
            dx = self.backward_layer(dx, w, s)
        root = self.b.tuple(loss, *self.updates)
        return Module.from_entry(f"transformer_{layers}", self.b.build(root))


def build_step(layers: int, **sizes) -> Module:
    return StepBuilder(**sizes).build(layers)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, nargs="*", default=[2, 4, 8, 16, 32, 48])
    parser.add_argument("--strategy", default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"{'layers':>6} {'ops':>7} {'seconds':>9} {'us/op':>8} {'visits/op':>10}")
    for layers in args.layers:
        module = build_step(layers)
        ops = sum(len(c.instructions) for c in module.computations)
        best = None
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = run(module, args.strategy)
            elapsed = time.perf_counter() - start
            best = elapsed if best is None else min(best, elapsed)
        visits = result.propagator.visits / ops
        print(f"{layers:>6} {ops:>7} {best:>9.3f} {best / ops * 1e6:>8.1f} {visits:>10.2f}")


if __name__ == "__main__":
    main()
