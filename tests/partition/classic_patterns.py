"""The classic sharding patterns with their textbook minimum bytes moved per device.

Each builder returns (module, textbook bytes per device). Used by the tests and by
scripts/bench_partition_bytes.py.
"""

from __future__ import annotations

from xla_spmd.ir import F32, ArrayShape, Builder, Module
from xla_spmd.mesh import make_mesh
from xla_spmd.sharding import TensorSharding

F = 4  # bytes per f32


def _s(mesh, *dims):
    return TensorSharding(mesh, [list(d) for d in dims])


def _dot(b, x, y, sharding, lc=1, rc=0, **batch):
    return b.dot(x, y, lhs_contracting_dims=(lc,), rhs_contracting_dims=(rc,),
                 sharding=sharding, **batch)


def data_parallel_forward(n=8, batch=32, d_in=16, d_out=16):
    mesh = make_mesh({"data": n})
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (batch, d_in)), sharding=_s(mesh, ["data"], []))
    w = b.parameter(ArrayShape(F32, (d_in, d_out)), sharding=_s(mesh, [], []))
    y = b.tanh(_dot(b, x, w, _s(mesh, ["data"], [])), sharding=_s(mesh, ["data"], []))
    return Module.from_entry("dp_forward", b.build(y)), 0.0


def data_parallel_weight_grad(n=8, batch=32, d_in=16, d_out=16):
    mesh = make_mesh({"data": n})
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (batch, d_in)), sharding=_s(mesh, ["data"], []))
    dy = b.parameter(ArrayShape(F32, (batch, d_out)), sharding=_s(mesh, ["data"], []))
    dw = _dot(b, x, dy, _s(mesh, [], []), lc=0, rc=0)
    return Module.from_entry("dp_grad", b.build(dw)), 2 * (n - 1) / n * d_in * d_out * F


def megatron_mlp(n=4, batch=8, d=16, hidden=32):
    mesh = make_mesh({"model": n})
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (batch, d)), sharding=_s(mesh, [], []))
    w1 = b.parameter(ArrayShape(F32, (d, hidden)), sharding=_s(mesh, [], ["model"]))
    w2 = b.parameter(ArrayShape(F32, (hidden, d)), sharding=_s(mesh, ["model"], []))
    h = b.tanh(_dot(b, x, w1, _s(mesh, [], ["model"])), sharding=_s(mesh, [], ["model"]))
    y = _dot(b, h, w2, _s(mesh, [], []))
    return Module.from_entry("megatron", b.build(y)), 2 * (n - 1) / n * batch * d * F


def fsdp_layer(n=8, batch=32, d=16, hidden=32):
    mesh = make_mesh({"data": n})
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (batch, d)), sharding=_s(mesh, ["data"], []))
    w = b.parameter(ArrayShape(F32, (d, hidden)), sharding=_s(mesh, ["data"], []))
    y = _dot(b, x, w, _s(mesh, ["data"], []))
    return Module.from_entry("fsdp", b.build(y)), (n - 1) / n * d * hidden * F


def two_d_mlp(data=2, model=4, batch=16, d=16, hidden=32):
    mesh = make_mesh({"data": data, "model": model})
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (batch, d)), sharding=_s(mesh, ["data"], []))
    w1 = b.parameter(ArrayShape(F32, (d, hidden)), sharding=_s(mesh, [], ["model"]))
    w2 = b.parameter(ArrayShape(F32, (hidden, d)), sharding=_s(mesh, ["model"], []))
    hidden_sharding = _s(mesh, ["data"], ["model"])
    h = b.tanh(_dot(b, x, w1, hidden_sharding), sharding=hidden_sharding)
    y = _dot(b, h, w2, _s(mesh, ["data"], []))
    return Module.from_entry("mlp_2d", b.build(y)), \
        2 * (model - 1) / model * (batch // data) * d * F


def sequence_attention(n=4, batch=2, seq=16, d=8):
    """Scores and outputs with the sequence sharded: k and v are all-gathered."""
    mesh = make_mesh({"seq": n})
    b = Builder("main")
    shape = ArrayShape(F32, (batch, seq, d))
    sh = _s(mesh, [], ["seq"], [])
    q = b.parameter(shape, sharding=sh)
    k = b.parameter(shape, sharding=sh)
    v = b.parameter(shape, sharding=sh)
    scores = b.dot(q, k, lhs_batch_dims=(0,), rhs_batch_dims=(0,), lhs_contracting_dims=(2,),
                   rhs_contracting_dims=(2,), sharding=_s(mesh, [], ["seq"], []))
    p = b.exponential(scores, sharding=_s(mesh, [], ["seq"], []))
    out = b.dot(p, v, lhs_batch_dims=(0,), rhs_batch_dims=(0,), lhs_contracting_dims=(2,),
                rhs_contracting_dims=(1,), sharding=sh)
    local = batch * (seq // n) * d * F
    return Module.from_entry("seq_attention", b.build(out)), 2 * (n - 1) * local


PATTERNS = {
    "data parallel (forward)": data_parallel_forward,
    "data parallel (weight grad)": data_parallel_weight_grad,
    "Megatron column/row MLP": megatron_mlp,
    "FSDP layer": fsdp_layer,
    "2D data x model MLP": two_d_mlp,
    "sequence-sharded attention": sequence_attention,
}


# XLA's bytes for JAX programs whose optimized text uses a form our parser does not read yet
# (sub-axes in mesh replica groups, issue 15 section 3), counted by hand from the files: an
# all-to-all of two 512 B operands over 2 devices (512 B) and a collective-permute of a
# 1024 B shard (1024 B), once per resharded operand.
XLA_BY_HAND = {"sharded_transpose_2d": 512 + 1024, "sharded_mixed_ew": 2 * (512 + 1024)}
