#!/usr/bin/env python3
"""Regenerate the JAX/XLA reference test data under ``tests/data/jax``.

Run this with a Python interpreter that has ``jax``, ``jaxlib``, ``numpy``
and ``ml_dtypes`` installed, e.g.::

    python3 -m venv /tmp/jaxvenv
    /tmp/jaxvenv/bin/pip install jax jaxlib numpy ml_dtypes
    /tmp/jaxvenv/bin/python scripts/gen_jax_testdata.py            # all cases
    /tmp/jaxvenv/bin/python scripts/gen_jax_testdata.py CASE ...   # a subset

The xla-spmd project itself never imports jax: this script only produces
committed text/npz fixtures (HLO text, StableHLO MLIR, inputs/outputs) so the
project's HLO parser, evaluator and partitioner can be checked against what
XLA really prints and computes.

For every case ``<case>`` it writes ``tests/data/jax/<case>/``:

* ``<case>.hlo``           -- ``jax.jit(f).lower(*args).as_text(dialect="hlo")``
                               (pre-optimization HLO)
* ``<case>.optimized.hlo`` -- ``lowered.compile().as_text()`` (post-optimization;
                               for sharded cases the SPMD-partitioned per-device
                               program).  Parse/round-trip only.
* ``<case>.mlir``          -- ``lowered.as_text()`` (StableHLO + sdy shardings)
* ``<case>.npz``           -- ``arg0..argN`` (flattened parameter order of the
                               entry computation) and ``out0..outM`` (flattened
                               outputs).  bfloat16 arrays are stored as float32.

and ``tests/data/jax/MANIFEST.json`` plus ``tests/data/jax/README.md``.

The script sets ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` before
importing jax so that 8 CPU devices exist for the sharded cases.  Cases that
need 64-bit types run last, after ``jax_enable_x64`` is switched on.
A case that fails to lower/compile/run is skipped with a printed note.
"""

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import json
import shutil
import sys
import traceback

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "tests", "data", "jax")

CASES = []  # list of dicts


def case(name, description, *, sharded=False, x64=False, ok_to_eval=None,
         notes=None, bit_reproducible=True):
    """Register a case builder.  The builder returns a dict with keys
    fn, args, and optionally in_shardings / out_shardings / mesh."""
    def deco(builder):
        CASES.append(dict(name=name, description=description, sharded=sharded,
                          x64=x64, builder=builder,
                          ok_to_eval=(not sharded) if ok_to_eval is None else ok_to_eval,
                          notes=notes, bit_reproducible=bit_reproducible))
        return builder
    return deco


def rng(seed):
    return np.random.default_rng(seed)


def f32(a):
    return np.asarray(a, dtype=np.float32)


def randn(seed, *shape, scale=1.0):
    return f32(rng(seed).standard_normal(shape) * scale)


# ---------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------

@case("ew_unary_f32", "unary float math: exp, expm1, log, log1p, tanh, logistic, sqrt, "
      "rsqrt, cbrt, erf, sin, cos, tan, floor, ceil, round-nearest-even, round-half-away, "
      "sign, abs, negate")
def _():
    x = f32(rng(0).uniform(-3, 3, (4, 8)))
    x[0, :6] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5]  # rounding ties
    x[1, 0] = 0.0
    pos = f32(rng(1).uniform(0.01, 4, (4, 8)))

    def f(x, pos):
        return (jnp.exp(x), jnp.expm1(x), jnp.log(pos), jnp.log1p(pos), jnp.tanh(x),
                jax.nn.sigmoid(x), jnp.sqrt(pos), lax.rsqrt(pos), jnp.cbrt(x),
                lax.erf(x), jnp.sin(x), jnp.cos(x), jnp.tan(x), jnp.floor(x), jnp.ceil(x),
                jnp.round(x), lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
                jnp.sign(x), jnp.abs(x), -x)
    return dict(fn=f, args=(x, pos))


@case("ew_binary_f32", "binary float math: add/sub/mul/div, atan2, pow, remainder (fmod), "
      "clamp, select/where, max/min with NaN, comparisons, nextafter-free")
def _():
    a = f32(rng(2).uniform(-3, 3, (4, 8)))
    b = f32(rng(3).uniform(-3, 3, (4, 8)))
    a[0, 0] = np.nan
    b[1, 1] = np.nan
    a[2, 2] = 0.0
    b[2, 2] = 0.0
    base = f32(rng(4).uniform(0.1, 3, (4, 8)))
    lo = np.float32(-1.0)
    hi = np.float32(1.5)

    def f(a, b, base, lo, hi):
        return (a + b, a - b, a * b, a / b, jnp.arctan2(a, b), lax.pow(base, b),
                lax.rem(a, b), lax.clamp(lo, a, hi), jnp.where(a > b, a, b),
                jnp.maximum(a, b), jnp.minimum(a, b), lax.max(a, b), lax.min(a, b),
                a == b, a != b, a < b, a <= b, a > b, a >= b)
    return dict(fn=f, args=(a, b, base, lo, hi))


@case("ew_int32", "int32: div/rem with negatives (truncating), floor_divide, mod, shifts "
      "(incl. amounts >= 32), and/or/xor/not, popcount, clz, abs, neg, max/min, compare, "
      "unsigned compare via uint32")
def _():
    a = np.array([[7, -7, 7, -7, 0, 1, -1, 2147483647],
                  [-2147483648, 100, -100, 13, -13, 5, 6, -6]], dtype=np.int32)
    b = np.array([[2, 2, -2, -2, 3, -3, 5, 7],
                  [3, 7, 7, -4, 4, -5, 6, 6]], dtype=np.int32)
    sh = np.array([[0, 1, 4, 31, 32, 33, 5, 8],
                   [1, 2, 3, 40, 0, 16, 31, 7]], dtype=np.int32)
    u = a.view(np.uint32)

    def f(a, b, sh, u):
        return (lax.div(a, b), lax.rem(a, b), a // b, a % b,
                lax.shift_left(a, sh), lax.shift_right_arithmetic(a, sh),
                lax.shift_right_logical(a, sh), a & b, a | b, a ^ b, ~a,
                lax.population_count(a), lax.clz(a), jnp.abs(a), -a,
                jnp.maximum(a, b), jnp.minimum(a, b), a < b, u < u[::-1],
                lax.shift_right_logical(u, sh.astype(np.uint32)),
                lax.div(u, jnp.uint32(3)), lax.population_count(u), lax.clz(u))
    return dict(fn=f, args=(a, b, sh, u))


@case("ew_pred_u8", "pred and uint8 ops: and/or/xor/not on bool, u8 add wrap-around, "
      "u8 mul, s8 ops, select on pred")
def _():
    p = rng(5).integers(0, 2, (3, 5)).astype(bool)
    q = rng(6).integers(0, 2, (3, 5)).astype(bool)
    u = rng(7).integers(0, 256, (3, 5)).astype(np.uint8)
    v = rng(8).integers(0, 256, (3, 5)).astype(np.uint8)
    s = rng(9).integers(-128, 128, (3, 5)).astype(np.int8)

    def f(p, q, u, v, s):
        return (p & q, p | q, p ^ q, ~p, u + v, u * v, u - v, s + s, s // jnp.int8(3),
                jnp.where(p, u, v), lax.shift_right_arithmetic(s, jnp.int8(2)))
    return dict(fn=f, args=(p, q, u, v, s))


@case("ew_nonfinite", "is_finite / isnan / isinf with inf and nan inputs, nan_to_num, "
      "max/min NaN propagation, exp overflow, log of 0 and negatives, sqrt of negative")
def _():
    x = f32([[0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 3e38],
             [1e-45, -2.0, 100.0, -100.0, 88.0, 89.0, np.nan, -np.inf]])
    y = f32([[np.nan, 1.0, np.nan, -np.inf, 2.0, np.inf, 0.0, 3e38],
             [0.0, np.nan, -1.0, 1.0, np.inf, 0.0, np.nan, np.nan]])

    def f(x, y):
        return (lax.is_finite(x), jnp.isnan(x), jnp.isinf(x), jnp.nan_to_num(x),
                jnp.maximum(x, y), jnp.minimum(x, y), jnp.fmax(x, y), jnp.exp(x),
                jnp.log(x), jnp.sqrt(x), x * y, x / y, jnp.sign(x))
    return dict(fn=f, args=(x, y))


@case("convert", "convert between f32/s32/u8/bf16/f16/pred (round-to-nearest-even for "
      "bf16/f16, truncation toward zero for float->int, f32->u8 of in-range values)")
def _():
    x = f32(rng(10).uniform(-300, 300, (4, 8)))
    x[0, :8] = [0.5, 1.5, -0.5, -1.7, 2.9, 255.4, 0.0, -0.0]
    xb = f32(rng(11).standard_normal((4, 8)))
    xb[1, :4] = [1.00390625, 1.01171875, 65520.0, 3.0e-8]  # bf16/f16 rounding/overflow
    i = rng(12).integers(-1000, 1000, (4, 8)).astype(np.int32)
    u = rng(13).integers(0, 256, (4, 8)).astype(np.uint8)
    bf = xb.astype(jnp.bfloat16)

    def f(x, xb, i, u, bf):
        return (x.astype(jnp.int32), jnp.abs(x).astype(jnp.uint8) if False else
                jnp.clip(jnp.abs(x), 0, 255).astype(jnp.uint8),
                xb.astype(jnp.bfloat16), xb.astype(jnp.float16),
                xb.astype(jnp.float16).astype(jnp.float32),
                xb.astype(jnp.bfloat16).astype(jnp.float32), x.astype(bool),
                i.astype(jnp.float32), u.astype(jnp.float32), u.astype(jnp.int32),
                i.astype(jnp.uint8), i.astype(jnp.int8), (i > 0).astype(jnp.int32),
                (i > 0).astype(jnp.float32), bf.astype(jnp.float32), bf * bf,
                bf.astype(jnp.float16), i.astype(jnp.bfloat16))
    return dict(fn=f, args=(x, xb, i, u, bf))


@case("convert_saturate", "float->int conversion of out-of-range values, inf and NaN "
      "(XLA CPU semantics: saturating, NaN->0)",
      notes="float->int of out-of-range/NaN is implementation-defined in the StableHLO spec; "
            "this records what XLA CPU does")
def _():
    x = f32([[3e9, -3e9, np.inf, -np.inf, np.nan, 2147483520.0, -2147483648.0, 300.0],
             [-1.0, 256.0, 1e20, -1e20, 127.9, -128.9, 65535.5, 70000.0]])

    def f(x):
        return (x.astype(jnp.int32), x.astype(jnp.uint8), x.astype(jnp.int8),
                x.astype(jnp.uint32), x.astype(jnp.int16), x.astype(jnp.uint16))
    return dict(fn=f, args=(x,))


@case("bitcast_convert", "bitcast_convert f32->s32, f32->u16 (adds a trailing dim of 2), "
      "u16[...,2]->f32, s32->f32, bf16->s16")
def _():
    x = f32(rng(14).standard_normal((3, 4)))
    x[0, 0] = -0.0
    x[0, 1] = np.inf
    h = rng(15).integers(0, 65536, (3, 4, 2)).astype(np.uint16)
    h[..., 1] &= 0x3FFF  # keep finite, moderate floats
    i = rng(16).integers(0, 2**31 - 1, (3, 4)).astype(np.int32) & 0x3FFFFFFF
    bf = randn(17, 3, 4).astype(jnp.bfloat16)

    def f(x, h, i, bf):
        return (lax.bitcast_convert_type(x, jnp.int32), lax.bitcast_convert_type(x, jnp.uint16),
                lax.bitcast_convert_type(h, jnp.float32), lax.bitcast_convert_type(i, jnp.float32),
                lax.bitcast_convert_type(bf, jnp.int16))
    return dict(fn=f, args=(x, h, i, bf))


# ---------------------------------------------------------------------------
# Shape ops
# ---------------------------------------------------------------------------

@case("shape_ops", "broadcast (broadcast_to, broadcast_in_dim), reshape, transpose, reverse "
      "(flip), squeeze/expand_dims, concatenate, strided slice, lax.slice")
def _():
    x = randn(20, 4, 6)
    v = randn(21, 6)

    def f(x, v):
        b = jnp.broadcast_to(v, (3, 4, 6))
        c = lax.broadcast_in_dim(v, (6, 5), (0,))
        r = x.reshape(2, 12).reshape(3, 8)
        t = jnp.transpose(b, (2, 0, 1))
        fl = jnp.flip(x, axis=(0, 1))
        fl1 = jnp.flip(x, axis=1)
        cat = jnp.concatenate([x, x * 2, x[:1]], axis=0)
        s1 = x[1:4:2, ::3]
        s2 = lax.slice(x, (0, 1), (4, 6), (3, 2))
        ex = jnp.expand_dims(v, 0)[:, None, :].squeeze(1)
        return b + 1, c, r, t, fl, fl1, cat, s1, s2, ex
    return dict(fn=f, args=(x, v))


@case("dynamic_slice", "lax.dynamic_slice with in-range, negative and out-of-range start "
      "indices (clamped), dynamic_update_slice with out-of-range start (clamped), "
      "dynamic_index_in_dim")
def _():
    x = randn(22, 6, 8)
    upd = randn(23, 2, 3)
    i = np.int32(5)
    j = np.int32(-2)
    k = np.int32(100)

    def f(x, upd, i, j, k):
        return (lax.dynamic_slice(x, (i, j), (3, 4)), lax.dynamic_slice(x, (k, k), (2, 2)),
                lax.dynamic_slice(x, (jnp.int32(1), i), (2, 3)),
                lax.dynamic_update_slice(x, upd, (i, k)), lax.dynamic_update_slice(x, upd, (j, i)),
                lax.dynamic_index_in_dim(x, i, axis=1, keepdims=False))
    return dict(fn=f, args=(x, upd, i, j, k))


@case("pad_iota", "lax.pad with negative low/high and interior padding, jnp.pad constant/edge/"
      "reflect, iota via jnp.arange and lax.broadcasted_iota")
def _():
    x = randn(24, 4, 5)

    def f(x):
        p1 = lax.pad(x, jnp.float32(-9.0), ((1, 2, 1), (-1, 3, 2)))
        p2 = lax.pad(x, jnp.float32(0.0), ((-1, -1, 0), (2, -2, 1)))
        p3 = jnp.pad(x, ((1, 1), (2, 0)), mode="edge")
        p4 = jnp.pad(x, ((2, 1), (1, 2)), mode="reflect")
        a = jnp.arange(10, dtype=jnp.int32)
        af = jnp.arange(3.0, 9.0, 0.5, dtype=jnp.float32)
        bi = lax.broadcasted_iota(jnp.int32, (3, 4), 1)
        bi0 = lax.broadcasted_iota(jnp.float32, (3, 4), 0)
        return p1, p2, p3, p4, a, af, bi, bi0
    return dict(fn=f, args=(x,))


@case("gather", "gather: x[int_array], x[idx1, idx2] (multi-index), take_along_axis, jnp.take "
      "mode=clip and mode=fill with out-of-range indices, x[:, idx], vmapped gather "
      "(batching dims), negative-index wrap")
def _():
    x = randn(25, 8, 6)
    idx = np.array([[0, 7, 3], [3, 3, -1]], dtype=np.int32)
    idx2 = np.array([1, 5, 0, 2], dtype=np.int32)
    tidx = rng(26).integers(0, 6, (8, 2)).astype(np.int32)
    oob = np.array([-3, 0, 5, 9, 20], dtype=np.int32)
    bidx = rng(27).integers(0, 6, (8, 3)).astype(np.int32)

    def f(x, idx, idx2, tidx, oob, bidx):
        g1 = x[idx]
        g2 = x[idx2, idx2]
        g3 = jnp.take_along_axis(x, tidx, axis=1)
        g4 = jnp.take(x, oob, axis=0, mode="clip")
        g5 = jnp.take(x, oob, axis=1, mode="fill", fill_value=-1.0)
        g6 = x[:, idx2]
        g7 = jax.vmap(lambda row, ii: row[ii])(x, bidx)
        return g1, g2, g3, g4, g5, g6, g7
    return dict(fn=f, args=(x, idx, idx2, tidx, oob, bidx))


@case("scatter", "scatter: .at[].add with duplicate indices, .set, .max, .min, .mul, "
      "mode='drop' with out-of-bounds indices, 2-D index scatter-add, vmapped scatter "
      "(batching dims)")
def _():
    x = randn(28, 6, 4)
    idx = np.array([0, 2, 2, 5, 0], dtype=np.int32)
    upd = randn(29, 5, 4)
    oob = np.array([1, 6, -1, 100, 3], dtype=np.int32)
    r = np.array([0, 1, 1, 5], dtype=np.int32)
    c = np.array([3, 0, 0, 2], dtype=np.int32)
    pv = f32([1.0, 2.0, 3.0, 4.0])
    bidx = rng(30).integers(0, 4, (6, 3)).astype(np.int32)
    bupd = randn(31, 6, 3)

    def f(x, idx, upd, oob, r, c, pv, bidx, bupd):
        return (x.at[idx].add(upd), x.at[idx].set(upd), x.at[idx].max(upd),
                x.at[idx].min(upd), x.at[idx].mul(upd),
                x.at[oob].add(upd, mode="drop"), x.at[oob].set(upd, mode="drop"),
                x.at[r, c].add(pv),
                jax.vmap(lambda row, ii, uu: row.at[ii].add(uu))(x, bidx, bupd),
                jnp.zeros((7,), jnp.int32).at[idx].add(1))
    return dict(fn=f, args=(x, idx, upd, oob, r, c, pv, bidx, bupd))


# ---------------------------------------------------------------------------
# Reductions, sort
# ---------------------------------------------------------------------------

@case("reduce", "reduce: sum/max/min/prod over one and several axes, all-reduce, int sum, "
      "logical any/all, mean, argmax/argmin (variadic reduce with index tie-breaking), "
      "logsumexp")
def _():
    x = randn(32, 4, 6, 5)
    x[0, 0, :2] = 7.0  # ties for argmax
    xi = rng(33).integers(-50, 50, (4, 6)).astype(np.int32)
    b = rng(34).integers(0, 2, (4, 6)).astype(bool)

    def f(x, xi, b):
        return (x.sum(axis=1), x.max(axis=(0, 2)), x.min(axis=2), jnp.prod(x[:, :, :2], axis=2),
                x.sum(), xi.sum(axis=0), xi.max(axis=1), b.any(axis=1), b.all(axis=0),
                x.mean(axis=(1, 2)), jnp.argmax(x, axis=1), jnp.argmin(x, axis=2),
                jnp.argmax(xi), jax.nn.logsumexp(x, axis=-1))
    return dict(fn=f, args=(x, xi, b))


@case("cumulative", "cumsum/cumprod/cummax (jnp; lowering chosen by JAX on CPU), and an "
      "explicit reduce-window prefix sum via lax.reduce_window with low padding")
def _():
    x = randn(35, 5, 7)
    xi = rng(36).integers(-5, 5, (5, 7)).astype(np.int32)

    def f(x, xi):
        rw = lax.reduce_window(x, 0.0, lax.add, (1, 7), (1, 1), ((0, 0), (6, 0)))
        return (jnp.cumsum(x, axis=1), jnp.cumprod(x, axis=0), lax.cummax(x, axis=1),
                jnp.cumsum(xi, axis=0), rw, lax.cumsum(x, axis=1, reverse=True))
    return dict(fn=f, args=(x, xi))


@case("sort", "sort: jnp.sort (with NaN and -0.0), descending, argsort (multi-operand sort "
      "with iota, stable), lax.sort with num_keys=2 over 3 operands, int sort")
def _():
    x = randn(37, 4, 9)
    x[0, :4] = [np.nan, 0.0, -0.0, 1.0]
    x[1, :3] = 0.5  # ties
    k1 = rng(38).integers(0, 3, (12,)).astype(np.int32)
    k2 = rng(39).integers(0, 3, (12,)).astype(np.int32)
    v = randn(40, 12)
    xi = rng(41).integers(-20, 20, (3, 8)).astype(np.int32)

    def f(x, k1, k2, v, xi):
        s = lax.sort((k1, k2, v), num_keys=2)
        return (jnp.sort(x, axis=1), jnp.sort(x, axis=0), -jnp.sort(-x, axis=1),
                jnp.argsort(x, axis=1), jnp.argsort(xi, axis=1, stable=True),
                s[0], s[1], s[2], jnp.sort(xi, axis=1))
    return dict(fn=f, args=(x, k1, k2, v, xi))


@case("top_k", "lax.top_k (lowers to whatever JAX emits on CPU: topk/custom-call/sort)")
def _():
    x = randn(42, 4, 10)

    def f(x):
        return lax.top_k(x, 3)
    return dict(fn=f, args=(x,))


# ---------------------------------------------------------------------------
# Windowed ops, conv
# ---------------------------------------------------------------------------

@case("pooling", "reduce_window: max-pool 3x3 stride 2 with SAME padding, avg-pool 2x2, "
      "window dilation, base dilation, int min-pool")
def _():
    x = randn(43, 2, 9, 9, 3)
    xi = rng(44).integers(-9, 9, (6, 6)).astype(np.int32)

    def f(x, xi):
        mp = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        ap = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
        wd = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "VALID",
                               window_dilation=(1, 2, 2, 1))
        bd = lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1),
                               ((0, 0), (1, 1), (1, 1), (0, 0)), base_dilation=(1, 2, 2, 1))
        mn = lax.reduce_window(xi, jnp.iinfo(jnp.int32).max, lax.min, (2, 3), (2, 1),
                               ((1, 0), (0, 2)))
        return mp, ap, wd, bd, mn
    return dict(fn=f, args=(x, xi))


@case("conv", "convolution NHWC/HWIO: strides+SAME padding, explicit asymmetric padding, "
      "rhs_dilation, lhs_dilation (transposed conv), feature_group_count=2, NCHW/OIHW, 1-D conv")
def _():
    x = randn(45, 2, 8, 8, 4)
    w = randn(46, 3, 3, 4, 6, scale=0.3)
    wg = randn(47, 3, 3, 2, 6, scale=0.3)
    x1 = randn(48, 2, 3, 10)
    w1 = randn(49, 5, 3, 3, scale=0.3)
    dn = ("NHWC", "HWIO", "NHWC")

    def f(x, w, wg, x1, w1):
        c1 = lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=dn)
        c2 = lax.conv_general_dilated(x, w, (1, 2), ((1, 0), (2, 1)), dimension_numbers=dn)
        c3 = lax.conv_general_dilated(x, w, (1, 1), "VALID", rhs_dilation=(2, 2),
                                      dimension_numbers=dn)
        c4 = lax.conv_general_dilated(x, w, (1, 1), ((2, 2), (2, 2)), lhs_dilation=(2, 2),
                                      dimension_numbers=dn)
        c5 = lax.conv_general_dilated(x, wg, (1, 1), "SAME", feature_group_count=2,
                                      dimension_numbers=dn)
        c6 = lax.conv_general_dilated(jnp.transpose(x, (0, 3, 1, 2)),
                                      jnp.transpose(w, (3, 2, 0, 1)), (1, 1), "VALID",
                                      dimension_numbers=("NCHW", "OIHW", "NCHW"))
        c7 = lax.conv_general_dilated(x1, w1, (2,), ((1, 1),),
                                      dimension_numbers=("NCH", "OIH", "NCH"))
        return c1, c2, c3, c4, c5, c6, c7
    return dict(fn=f, args=(x, w, wg, x1, w1))


@case("conv_grad", "gradient of strided/padded/grouped convs: produces convs with lhs_dilation "
      "(input grad) and batch_group_count / window reversal (filter grad)")
def _():
    x = randn(50, 2, 7, 7, 4)
    w = randn(51, 3, 3, 4, 6, scale=0.3)
    wg = randn(52, 3, 3, 2, 4, scale=0.3)
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(x, w, wg):
        y = lax.conv_general_dilated(x, w, (2, 2), ((1, 1), (1, 1)), dimension_numbers=dn)
        z = lax.conv_general_dilated(x, wg, (1, 1), "SAME", feature_group_count=2,
                                     dimension_numbers=dn)
        return jnp.sum(jnp.tanh(y)) + jnp.sum(z * z)

    def f(x, w, wg):
        return jax.grad(loss, argnums=(0, 1, 2))(x, w, wg)
    return dict(fn=f, args=(x, w, wg))


@case("maxpool_grad",
      "gradient of max-pool (select-and-scatter) and of avg-pool (pad+reduce_window)")
def _():
    x = randn(53, 2, 8, 8, 3)

    def loss(x):
        mp = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        ap = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return jnp.sum(mp * mp) + jnp.sum(jnp.sin(ap))

    def f(x):
        return jax.grad(loss)(x)
    return dict(fn=f, args=(x,))


# ---------------------------------------------------------------------------
# dot_general
# ---------------------------------------------------------------------------

@case("dot", "dot_general: matmul, matvec, vector dot, batched matmul einsum bij,bjk->bik, "
      "einsum with two contracting dims ijk,jkl->il, batch+multi-contract, int32 matmul, "
      "bf16 inputs with preferred_element_type=f32, outer product")
def _():
    a = randn(54, 8, 16)
    b = randn(55, 16, 4)
    v = randn(56, 16)
    ba = randn(57, 3, 5, 6)
    bb = randn(58, 3, 6, 4)
    t = randn(59, 4, 3, 5)
    u = randn(60, 3, 5, 6)
    ia = rng(61).integers(-5, 5, (4, 6)).astype(np.int32)
    ib = rng(62).integers(-5, 5, (6, 3)).astype(np.int32)
    ha = randn(63, 8, 16).astype(jnp.bfloat16)
    hb = randn(64, 16, 4).astype(jnp.bfloat16)

    def f(a, b, v, ba, bb, t, u, ia, ib, ha, hb):
        return (a @ b, a @ v, v @ v, jnp.einsum("bij,bjk->bik", ba, bb),
                jnp.einsum("ijk,jkl->il", t, u), jnp.einsum("bij,bjk,->bik", ba, bb, 2.0),
                jnp.einsum("xjk,jky->jxy", t, u), ia @ ib,
                lax.dot_general(ha, hb, (((1,), (0,)), ((), ())),
                                preferred_element_type=jnp.float32),
                ha @ hb, jnp.outer(v[:4], v[:5]))
    return dict(fn=f, args=(a, b, v, ba, bb, t, u, ia, ib, ha, hb))


# ---------------------------------------------------------------------------
# Control flow
# ---------------------------------------------------------------------------

@case("while_loop", "lax.fori_loop (while with tuple carry, counter), lax.while_loop with a "
      "data-dependent trip count")
def _():
    x = randn(65, 4, 4, scale=0.5)
    n = np.int32(5)

    def f(x, n):
        y = lax.fori_loop(0, 7, lambda i, c: c @ x * 0.5 + i.astype(jnp.float32), jnp.eye(4))
        z = lax.fori_loop(0, n, lambda i, c: c + jnp.sin(c) * i, x)

        def cond(s):
            return s[1] < 100.0

        def body(s):
            return s[0] + 1, s[1] * 1.7 + 1.0
        cnt, val = lax.while_loop(cond, body, (jnp.int32(0), jnp.float32(1.0)))
        return y, z, cnt, val
    return dict(fn=f, args=(x, n))


@case("cond_switch", "lax.cond on a predicate (true and false branches), lax.switch with 3 "
      "branches and out-of-range indices (JAX clamps before the conditional)")
def _():
    x = randn(66, 3, 4)
    p = np.bool_(False)
    i0 = np.int32(1)
    i1 = np.int32(7)
    i2 = np.int32(-4)

    def f(x, p, i0, i1, i2):
        br = [lambda v: v * 2.0, lambda v: jnp.sin(v), lambda v: v - 10.0]
        c1 = lax.cond(p, lambda v: v + 1.0, lambda v: jnp.exp(v), x)
        c2 = lax.cond(~p, lambda a, b: a * b, lambda a, b: a - b, x, x[0])
        return c1, c2, lax.switch(i0, br, x), lax.switch(i1, br, x), lax.switch(i2, br, x)
    return dict(fn=f, args=(x, p, i0, i1, i2))


@case("scan", "lax.scan with carry and stacked outputs (RNN-style), reverse scan, "
      "scan over pytree xs")
def _():
    xs = randn(67, 6, 3)
    w = randn(68, 3, 3, scale=0.5)
    h0 = f32(np.zeros(3))

    def f(xs, w, h0):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, h.sum()
        hT, ys = lax.scan(step, h0, xs)
        c, zs = lax.scan(lambda c, xy: (c + xy[0] * xy[1], c), jnp.zeros(3),
                         (xs, xs[::-1]), reverse=True)
        return hT, ys, c, zs
    return dict(fn=f, args=(xs, w, h0))


@case("nested_call", "jax.jit inside jax.jit (called twice: HLO call instruction / "
      "to_apply computations), jax.checkpoint (remat) inside grad")
def _():
    x = randn(69, 4, 5)
    y = randn(70, 5, 3)

    @jax.jit
    def inner(a, b):
        return jnp.tanh(a @ b) + 1.0

    def f(x, y):
        r = inner(x, y) + inner(x * 2, y)
        g = jax.grad(lambda q: jnp.sum(jax.checkpoint(lambda z: jnp.sin(z) * z)(q)))(x)
        return r, g
    return dict(fn=f, args=(x, y))


@case("random_threefry", "jax.random with the default threefry2x32 impl (plain u32 integer "
      "ops: shifts, xor, adds): split, uniform, normal, randint, bernoulli, permutation",
      notes="bit-exact: threefry is lowered to integer ops in the HLO")
def _():
    kd = np.array([0, 42], dtype=np.uint32)

    def f(kd):
        key = jax.random.wrap_key_data(kd, impl="threefry2x32")
        k1, k2, k3, k4 = jax.random.split(key, 4)
        return (jax.random.uniform(k1, (3, 4)), jax.random.normal(k2, (5,)),
                jax.random.randint(k3, (6,), -10, 10), jax.random.bernoulli(k4, 0.3, (8,)),
                jax.random.bits(k1, (4,), jnp.uint32),
                jax.random.key_data(jax.random.fold_in(key, 7)))
    return dict(fn=f, args=(kd,))


@case("random_rbg", "jax.random with impl='rbg' (rng-bit-generator with algorithm "
      "rng_default): uniform and bits; key data is u32[4]",
      bit_reproducible=False,
      notes="rng-bit-generator algorithm=rng_default: the bit stream is implementation-defined "
            "by the spec. Verified when generating: on XLA CPU, rng_default gives exactly the "
            "same bits as rng_philox for the same state, so an evaluator that maps DEFAULT to "
            "XLA's Philox-4x32-10 expansion can match bit-exactly. Shapes/dtypes are reliable.")
def _():
    kd = np.array([0, 0, 0, 1], dtype=np.uint32)

    def f(kd):
        key = jax.random.wrap_key_data(kd, impl="rbg")
        return (jax.random.bits(key, (4, 8), jnp.uint32), jax.random.uniform(key, (3, 5)))
    return dict(fn=f, args=(kd,))


@case("rng_bit_generator", "lax.rng_bit_generator with explicit THREE_FRY and PHILOX "
      "algorithms, u32 and u64 outputs (incl. odd-size split dims), u8 output",
      bit_reproducible=True,
      notes="THREE_FRY outputs follow XLA's expansion (op_semantics.md section 13); PHILOX "
            "uses Philox-4x32-10. Both are deterministic in XLA, so bit-exact comparison is "
            "possible if the evaluator implements XLA's expansion.")
def _():
    key = np.array([1, 2, 3, 4], dtype=np.uint32)  # u32[4] -> bitcast to u64[2] by JAX

    def f(key):
        out = []
        for alg in (lax.RandomAlgorithm.RNG_THREE_FRY, lax.RandomAlgorithm.RNG_PHILOX):
            s1, b1 = lax.rng_bit_generator(key, (4, 6), dtype=jnp.uint32, algorithm=alg)
            s2, b2 = lax.rng_bit_generator(s1, (3, 5), dtype=jnp.uint32, algorithm=alg)
            _, b3 = lax.rng_bit_generator(key, (5,), dtype=jnp.uint8, algorithm=alg)
            out += [s1, b1, s2, b2, b3]
        return tuple(out)
    return dict(fn=f, args=(key,))


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

def mlp_params(seed, din=16, dh=32, dout=8):
    r = rng(seed)
    return {
        "w1": f32(r.standard_normal((din, dh)) / np.sqrt(din)),
        "b1": f32(np.zeros(dh) + 0.01),
        "w2": f32(r.standard_normal((dh, dout)) / np.sqrt(dh)),
        "b2": f32(np.zeros(dout)),
    }


def mlp_loss(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    out = h @ params["w2"] + params["b2"]
    return jnp.mean((out - y) ** 2)


def mlp_step(params, x, y):
    loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
    new = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    return loss, new


def mlp_data(seed, batch=32):
    r = rng(seed)
    return f32(r.standard_normal((batch, 16))), f32(r.standard_normal((batch, 8)))


@case("mlp_train_step", "2-layer MLP (relu) forward + backward via value_and_grad, SGD update; "
      "params dict flattened in sorted key order b1, b2, w1, w2, then x, y")
def _():
    params = mlp_params(80)
    x, y = mlp_data(81)
    return dict(fn=mlp_step, args=(params, x, y))


TCFG = dict(d=16, heads=2, ff=32, seq=8, batch=2, vocab=11)


def transformer_params(seed):
    r = rng(seed)
    d, ff, v = TCFG["d"], TCFG["ff"], TCFG["vocab"]

    def n(*s, scale):
        return f32(r.standard_normal(s) * scale)
    return {
        "emb": n(v, d, scale=0.5),
        "ln1_g": f32(np.ones(d)), "ln1_b": f32(np.zeros(d)),
        "wq": n(d, d, scale=d ** -0.5), "wk": n(d, d, scale=d ** -0.5),
        "wv": n(d, d, scale=d ** -0.5), "wo": n(d, d, scale=d ** -0.5),
        "ln2_g": f32(np.ones(d)), "ln2_b": f32(np.zeros(d)),
        "w_ff1": n(d, ff, scale=d ** -0.5), "b_ff1": f32(np.zeros(ff)),
        "w_ff2": n(ff, d, scale=ff ** -0.5), "b_ff2": f32(np.zeros(d)),
    }


def layer_norm(x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + eps) * g + b


def transformer_loss(p, tokens, targets, constrain=None):
    H = TCFG["heads"]
    x = p["emb"][tokens]  # gather
    if constrain is not None:
        x = constrain(x)
    B, T, D = x.shape
    h = layer_norm(x, p["ln1_g"], p["ln1_b"])
    q = (h @ p["wq"]).reshape(B, T, H, D // H)
    k = (h @ p["wk"]).reshape(B, T, H, D // H)
    v = (h @ p["wv"]).reshape(B, T, H, D // H)
    s = jnp.einsum("bthd,bshd->bhts", q, k) / np.sqrt(D // H).astype(np.float32)
    mask = jnp.tril(jnp.ones((T, T), bool))
    s = jnp.where(mask, s, -1e9)
    a = jax.nn.softmax(s, axis=-1)
    o = jnp.einsum("bhts,bshd->bthd", a, v).reshape(B, T, D)
    x = x + o @ p["wo"]
    h = layer_norm(x, p["ln2_g"], p["ln2_b"])
    h = jax.nn.gelu(h @ p["w_ff1"] + p["b_ff1"], approximate=True)
    x = x + h @ p["w_ff2"] + p["b_ff2"]
    logits = x @ p["emb"].T
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))


def transformer_step(p, tokens, targets):
    loss, g = jax.value_and_grad(transformer_loss)(p, tokens, targets)
    return loss, jax.tree_util.tree_map(lambda a, b: a - 0.05 * b, p, g)


def transformer_data(seed, batch=None):
    r = rng(seed)
    B = batch or TCFG["batch"]
    tok = r.integers(0, TCFG["vocab"], (B, TCFG["seq"])).astype(np.int32)
    tgt = r.integers(0, TCFG["vocab"], (B, TCFG["seq"])).astype(np.int32)
    return tok, tgt


@case("transformer_step", "transformer block: embedding gather, layer norm, causal 2-head "
      "attention with softmax, tanh-GELU MLP, residuals, tied-embedding logits, "
      "cross-entropy; loss + grad + SGD update (params flattened in sorted key order)")
def _():
    p = transformer_params(90)
    tok, tgt = transformer_data(91)
    return dict(fn=transformer_step, args=(p, tok, tgt))


# ---------------------------------------------------------------------------
# Sharded (8 devices)
# ---------------------------------------------------------------------------

def mesh_of(shape, names):
    devs = np.array(jax.devices()[: int(np.prod(shape))]).reshape(shape)
    return Mesh(devs, names)


def ns(mesh, *spec):
    return NamedSharding(mesh, P(*spec))


@case("sharded_mlp_dp8", "MLP train step, data parallel on mesh (8,) 'data': batch sharded, "
      "params replicated (gradient all-reduce)", sharded=True)
def _():
    mesh = mesh_of((8,), ("data",))
    params = mlp_params(80)
    x, y = mlp_data(81)
    rep = {k: ns(mesh) for k in params}
    return dict(fn=mlp_step, args=(params, x, y), mesh=mesh,
                in_shardings=(rep, ns(mesh, "data"), ns(mesh, "data")),
                out_shardings=(ns(mesh), rep))


@case("sharded_mlp_megatron_2x4", "MLP train step on mesh (2,4) ('data','model'), Megatron "
      "style: w1 column-sharded, w2 row-sharded on 'model', batch on 'data'", sharded=True)
def _():
    mesh = mesh_of((2, 4), ("data", "model"))
    params = mlp_params(80)
    x, y = mlp_data(81)
    ps = {"w1": ns(mesh, None, "model"), "b1": ns(mesh, "model"),
          "w2": ns(mesh, "model", None), "b2": ns(mesh)}
    return dict(fn=mlp_step, args=(params, x, y), mesh=mesh,
                in_shardings=(ps, ns(mesh, "data"), ns(mesh, "data")),
                out_shardings=(ns(mesh), ps))


@case("sharded_mlp_fsdp8", "MLP train step FSDP style on mesh (8,) 'fsdp': params sharded on "
      "their first dim, batch sharded; params all-gathered, grads reduce-scattered",
      sharded=True)
def _():
    mesh = mesh_of((8,), ("fsdp",))
    params = mlp_params(80)
    x, y = mlp_data(81)
    ps = {"w1": ns(mesh, "fsdp", None), "b1": ns(mesh, "fsdp"),
          "w2": ns(mesh, "fsdp", None), "b2": ns(mesh, "fsdp")}
    return dict(fn=mlp_step, args=(params, x, y), mesh=mesh,
                in_shardings=(ps, ns(mesh, "fsdp"), ns(mesh, "fsdp")),
                out_shardings=(ns(mesh), ps))


def transformer_shardings(mesh, model_axis):
    m = model_axis
    return {
        "emb": ns(mesh), "ln1_g": ns(mesh), "ln1_b": ns(mesh), "ln2_g": ns(mesh),
        "ln2_b": ns(mesh), "wq": ns(mesh, None, m), "wk": ns(mesh, None, m),
        "wv": ns(mesh, None, m), "wo": ns(mesh, m, None), "w_ff1": ns(mesh, None, m),
        "b_ff1": ns(mesh, m), "w_ff2": ns(mesh, m, None), "b_ff2": ns(mesh),
    }


@case("sharded_transformer_dp8", "transformer train step, data parallel on mesh (8,) 'data' "
      "(batch 8 sharded, params replicated)", sharded=True)
def _():
    mesh = mesh_of((8,), ("data",))
    p = transformer_params(90)
    tok, tgt = transformer_data(91, batch=8)
    rep = {k: ns(mesh) for k in p}
    return dict(fn=transformer_step, args=(p, tok, tgt), mesh=mesh,
                in_shardings=(rep, ns(mesh, "data"), ns(mesh, "data")),
                out_shardings=(ns(mesh), rep))


@case("sharded_transformer_2x4", "transformer train step on mesh (2,4) ('data','model'): "
      "batch on 'data', Megatron sharding of attention (heads) and MLP on 'model'",
      sharded=True)
def _():
    mesh = mesh_of((2, 4), ("data", "model"))
    p = transformer_params(90)
    tok, tgt = transformer_data(91, batch=4)
    ps = transformer_shardings(mesh, "model")
    return dict(fn=transformer_step, args=(p, tok, tgt), mesh=mesh,
                in_shardings=(ps, ns(mesh, "data"), ns(mesh, "data")),
                out_shardings=(ns(mesh), ps))


@case("sharded_wsc", "jax.lax.with_sharding_constraint inside the function on mesh (2,4): "
      "resharding between row/column/replicated layouts, matmul with a constrained "
      "intermediate, reduction", sharded=True)
def _():
    mesh = mesh_of((2, 4), ("x", "y"))
    a = randn(100, 16, 8)
    b = randn(101, 8, 12)

    def f(a, b):
        h = jnp.tanh(a @ b)
        h = lax.with_sharding_constraint(h, ns(mesh, "x", "y"))
        h2 = lax.with_sharding_constraint(h * 2.0, ns(mesh, "y", None))
        h3 = lax.with_sharding_constraint(h2.T, ns(mesh, None, ("x", "y")))
        return h3.sum(axis=1), h2 @ b.T
    return dict(fn=f, args=(a, b), mesh=mesh,
                in_shardings=(ns(mesh, "x", None), ns(mesh, None, "y")),
                out_shardings=(ns(mesh, "y"), ns(mesh)))


@case("sharded_shard_map", "jax.shard_map on mesh (2,4) ('x','y') with psum, pmax, all_gather "
      "(tiled and stacked), ppermute (ring), all_to_all, psum_scatter, axis_index",
      sharded=True)
def _():
    mesh = mesh_of((2, 4), ("x", "y"))
    a = randn(102, 8, 16)
    b = randn(103, 16, 8)

    def body(a, b):
        # a block: (4, 4), b block: (4, 8) [b sharded on rows over 'y', replicated over 'x']
        s = lax.psum(a, "y")
        m = lax.pmax(a, ("x", "y"))
        g = lax.all_gather(a, "y", axis=1, tiled=True)          # (4, 16)
        gs = lax.all_gather(a, "x")                               # (2, 4, 4)
        perm = [(i, (i + 1) % 4) for i in range(4)]
        pp = lax.ppermute(a, "y", perm)
        a2a = lax.all_to_all(a, "y", split_axis=0, concat_axis=1, tiled=True)  # (1, 16)
        rs = lax.psum_scatter(b, "y", scatter_dimension=1, tiled=True)          # (4, 2)
        idx = lax.axis_index("y") + 10 * lax.axis_index("x")
        part = a @ b                                               # (4, 8) partial sum
        mm = lax.psum(part, "y")
        return s, m, g, gs.sum(0), pp, a2a, rs, idx.reshape(1, 1).astype(jnp.int32), mm

    spec_a = P("x", "y")
    sm = jax.shard_map(body, mesh=mesh, in_specs=(spec_a, P("y", None)),
                       out_specs=(spec_a, spec_a, P("x", None), P(None, "y"), spec_a,
                                  spec_a, P("x", "y"), P("x", "y"), P("x", None)),
                       check_vma=False)
    return dict(fn=sm, args=(a, b), mesh=mesh,
                in_shardings=(ns(mesh, "x", "y"), ns(mesh, "y", None)))


# One program per partitioning pattern whose collectives are compared with XLA's
# (scripts/bench_partition_bytes.py, tests/partition/test_partition_bytes.py).

@case("sharded_argmax", "argmax and max (variadic reduce) over a dim sharded 8 ways on mesh "
      "(8,) 'x': local reduce, then (value, index) pairs combined across shards", sharded=True)
def _():
    mesh = mesh_of((8,), ("x",))
    x = randn(120, 16, 64)

    def f(x):
        return jnp.argmax(x, axis=1).astype(jnp.int32), jnp.max(x, axis=1)
    return dict(fn=f, args=(x,), mesh=mesh, in_shardings=(ns(mesh, None, "x"),),
                out_shardings=(ns(mesh), ns(mesh)))


@case("sharded_pad", "jnp.pad of a dim sharded 8 ways on mesh (8,) 'x' (low 2, high 3), the "
      "result sharded the same way: a halo exchange", sharded=True)
def _():
    mesh = mesh_of((8,), ("x",))
    x = randn(121, 64, 16)

    def f(x):
        return jnp.pad(x, ((3, 5), (0, 0))) * 2.0
    return dict(fn=f, args=(x,), mesh=mesh, in_shardings=(ns(mesh, "x", None),),
                out_shardings=ns(mesh, "x", None))


@case("sharded_conv_grad", "gradient of a 3x3 SAME conv (NHWC) with the input spatially "
      "sharded on H over mesh (8,) 'x', filter replicated", sharded=True)
def _():
    mesh = mesh_of((8,), ("x",))
    x = randn(122, 2, 32, 8, 4)
    w = randn(123, 3, 3, 4, 4, scale=0.3)

    def loss(x, w):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.sum(jnp.tanh(y))

    def f(x, w):
        return jax.grad(loss, argnums=(0, 1))(x, w)
    return dict(fn=f, args=(x, w), mesh=mesh,
                in_shardings=(ns(mesh, None, "x"), ns(mesh)),
                out_shardings=(ns(mesh, None, "x"), ns(mesh)))


@case("sharded_scan_grad", "gradient of an RNN lax.scan whose carry (batch 16) is sharded on "
      "mesh (8,) 'x', weights replicated", sharded=True)
def _():
    mesh = mesh_of((8,), ("x",))
    xs = randn(124, 4, 16, 8)
    w = randn(125, 8, 8, scale=0.4)
    h0 = randn(126, 16, 8)

    def loss(w, h0, xs):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, jnp.sum(h * h)
        h, ys = lax.scan(step, h0, xs)
        return jnp.sum(ys) + jnp.sum(h)

    def f(w, h0, xs):
        return jax.grad(loss, argnums=(0, 1))(w, h0, xs)
    return dict(fn=f, args=(w, h0, xs), mesh=mesh,
                in_shardings=(ns(mesh), ns(mesh, "x"), ns(mesh, None, "x")),
                out_shardings=(ns(mesh), ns(mesh, "x")))


@case("sharded_concat", "concatenate of two arrays along a dim sharded 8 ways on mesh (8,) "
      "'x', the result sharded the same way", sharded=True)
def _():
    mesh = mesh_of((8,), ("x",))
    a = randn(127, 64, 16)
    b = randn(128, 32, 16)

    def f(a, b):
        return jnp.concatenate([a, b], axis=0) + 1.0
    return dict(fn=f, args=(a, b), mesh=mesh,
                in_shardings=(ns(mesh, "x", None), ns(mesh, "x", None)),
                out_shardings=ns(mesh, "x", None))


@case("sharded_mixed_ew", "elementwise chain over operands with different shardings on mesh "
      "(2,4) ('x','y'), a transpose between them", sharded=True)
def _():
    mesh = mesh_of((2, 4), ("x", "y"))
    a = randn(129, 32, 64)
    b = randn(130, 64, 32)

    def f(a, b):
        return jnp.tanh(a) * b.T + a
    return dict(fn=f, args=(a, b), mesh=mesh,
                in_shardings=(ns(mesh, "x", "y"), ns(mesh, "x", "y")),
                out_shardings=ns(mesh, "x", "y"))


@case("sharded_sort", "jnp.sort along a dim sharded 8 ways on mesh (8,) 'x', the result "
      "sharded the same way", sharded=True)
def _():
    mesh = mesh_of((8,), ("x",))
    x = randn(131, 16, 64)

    def f(x):
        return jnp.sort(x, axis=1)
    return dict(fn=f, args=(x,), mesh=mesh, in_shardings=(ns(mesh, None, "x"),),
                out_shardings=ns(mesh, None, "x"))


@case("sharded_reshape_merge", "reshape f32[16,32] -> f32[512] merging a dim sharded 8 ways "
      "(the minor one) on mesh (8,) 'x', the result sharded on 'x'", sharded=True)
def _():
    mesh = mesh_of((8,), ("x",))
    x = randn(132, 16, 32)

    def f(x):
        return x.reshape(512) * 3.0
    return dict(fn=f, args=(x,), mesh=mesh, in_shardings=(ns(mesh, None, "x"),),
                out_shardings=ns(mesh, "x"))


@case("sharded_transpose_2d", "transpose of an array sharded on both dims over mesh (2,4) "
      "('x','y'), the result sharded ('x','y') again", sharded=True)
def _():
    mesh = mesh_of((2, 4), ("x", "y"))
    x = randn(133, 32, 64)

    def f(x):
        return x.T + 1.0
    return dict(fn=f, args=(x,), mesh=mesh, in_shardings=(ns(mesh, "x", "y"),),
                out_shardings=ns(mesh, "x", "y"))


@case("sharded_wsc_chain", "with_sharding_constraint in the middle of an elementwise chain "
      "on mesh (2,4) ('x','y'): rows -> columns -> rows", sharded=True)
def _():
    mesh = mesh_of((2, 4), ("x", "y"))
    x = randn(134, 32, 64)

    def f(x):
        h = jnp.tanh(x)
        h = lax.with_sharding_constraint(h, ns(mesh, None, ("x", "y")))
        return jnp.exp(h) + x
    return dict(fn=f, args=(x,), mesh=mesh, in_shardings=(ns(mesh, ("x", "y"), None),),
                out_shardings=ns(mesh, ("x", "y"), None))


# The same sharded programs lowered with Shardy switched off (GSPMD path): the
# pre-optimization HLO then uses the classic `Sharding` / `SPMDFullToShardShape` /
# `SPMDShardToFullShape` custom-calls and `sharding={...}` without xla.sdy.* attributes.
for _base in ("sharded_mlp_megatron_2x4", "sharded_wsc", "sharded_shard_map"):
    _c = dict(next(c for c in CASES if c["name"] == _base))
    _c["name"] = _base + "_gspmd"
    _c["description"] = _c["description"] + " [lowered with jax_use_shardy_partitioner=False]"
    _c["config"] = {"jax_use_shardy_partitioner": False}
    CASES.append(_c)


# ---------------------------------------------------------------------------
# 64-bit (run last, after jax_enable_x64)
# ---------------------------------------------------------------------------

@case("x64_convert", "64-bit types (jax_enable_x64): f64 math, f64<->f32/s64/u64 converts, "
      "s64/u64 integer ops and shifts, f64 reduce, f64 matmul", x64=True)
def _():
    d = np.asarray(rng(110).standard_normal((3, 4)), dtype=np.float64)
    d[0, 0] = 1.0 + 2.0 ** -40
    l = rng(111).integers(-2**40, 2**40, (3, 4)).astype(np.int64)
    ul = rng(112).integers(0, 2**63, (3, 4), dtype=np.uint64)
    x32 = f32(rng(113).standard_normal((3, 4)))

    def f(d, l, ul, x32):
        return (jnp.exp(d), d.astype(jnp.float32), x32.astype(jnp.float64), d.astype(jnp.int64),
                l.astype(jnp.float64), l * 3 + l // 7, lax.rem(l, jnp.int64(-5)),
                lax.shift_right_logical(ul, jnp.uint64(3)), ul >> jnp.uint64(60),
                lax.population_count(l), lax.clz(ul), d.sum(axis=0), d @ d.T,
                lax.bitcast_convert_type(d, jnp.int64), l.astype(jnp.int32),
                ul.astype(jnp.float64), d.astype(jnp.float16), jnp.arange(5, dtype=jnp.int64))
    return dict(fn=f, args=(d, l, ul, x32))


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------

def to_np(a):
    a = np.asarray(a)
    if a.dtype == jnp.bfloat16:
        return a.astype(np.float32), "bfloat16"
    if a.dtype == object:
        raise TypeError("object array")
    return a, str(a.dtype)


def dtype_name(a):
    d = np.asarray(a).dtype
    return "bfloat16" if d == jnp.bfloat16 else str(d)


def run_case(c):
    spec = c["builder"]()
    fn, args = spec["fn"], spec["args"]
    kw = dict(keep_unused=True)
    if "in_shardings" in spec:
        kw["in_shardings"] = spec["in_shardings"]
    if "out_shardings" in spec:
        kw["out_shardings"] = spec["out_shardings"]
    jitted = jax.jit(fn, **kw)
    lowered = jitted.lower(*args)
    hlo = lowered.as_text(dialect="hlo")
    mlir = lowered.as_text()
    compiled = lowered.compile()
    opt = compiled.as_text()
    outs = jitted(*args)
    flat_in = jax.tree_util.tree_leaves(args)
    flat_out = jax.tree_util.tree_leaves(outs)
    d = os.path.join(OUT_DIR, c["name"])
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    arrays = {}
    ins, outs_meta = [], []
    for i, a in enumerate(flat_in):
        arr, dt = to_np(a)
        arrays[f"arg{i}"] = arr
        ins.append({"name": f"arg{i}", "dtype": dt, "shape": list(arr.shape)})
    for i, a in enumerate(flat_out):
        arr, dt = to_np(a)
        arrays[f"out{i}"] = arr
        outs_meta.append({"name": f"out{i}", "dtype": dt, "shape": list(arr.shape)})
    n = c["name"]
    with open(os.path.join(d, f"{n}.hlo"), "w") as fh:
        fh.write(hlo)
    with open(os.path.join(d, f"{n}.optimized.hlo"), "w") as fh:
        fh.write(opt)
    with open(os.path.join(d, f"{n}.mlir"), "w") as fh:
        fh.write(mlir)
    np.savez(os.path.join(d, f"{n}.npz"), **arrays)
    # sanity: reload without pickle
    with np.load(os.path.join(d, f"{n}.npz"), allow_pickle=False) as z:
        assert set(z.files) == set(arrays)
    mesh = spec.get("mesh")
    entry = {
        "name": n,
        "description": c["description"],
        "jax_version": jax.__version__,
        "jaxlib_version": jax.lib.__version__ if hasattr(jax.lib, "__version__") else None,
        "x64": c["x64"],
        "sharded": c["sharded"],
        "num_devices": int(mesh.devices.size) if mesh is not None else 1,
        "mesh": ({"axis_names": list(mesh.axis_names),
                  "shape": [int(s) for s in mesh.devices.shape],
                  "device_ids": [int(dv.id) for dv in mesh.devices.flat]}
                 if mesh is not None else None),
        "hlo_ok_to_evaluate": bool(c["ok_to_eval"]),
        "optimized_hlo_ok_to_evaluate": False,
        "bit_reproducible": c["bit_reproducible"],
        "inputs": ins,
        "outputs": outs_meta,
        "files": {"hlo": f"{n}/{n}.hlo", "optimized_hlo": f"{n}/{n}.optimized.hlo",
                  "mlir": f"{n}/{n}.mlir", "npz": f"{n}/{n}.npz"},
    }
    if c.get("config"):
        entry["jax_config"] = c["config"]
    if c["notes"]:
        entry["notes"] = c["notes"]
    return entry


README = """# JAX/XLA reference test data

Generated by `scripts/gen_jax_testdata.py` with jax {jax} / jaxlib {jaxlib} on the
CPU backend with 8 forced host devices:

    python3 -m venv /tmp/jaxvenv
    /tmp/jaxvenv/bin/pip install jax jaxlib numpy ml_dtypes
    /tmp/jaxvenv/bin/python scripts/gen_jax_testdata.py

(the script sets `XLA_FLAGS=--xla_force_host_platform_device_count=8` itself).
The xla-spmd project never imports jax; these files are fixtures only.

## Layout

    tests/data/jax/MANIFEST.json        list of cases (see below)
    tests/data/jax/<case>/<case>.hlo            pre-optimization HLO text
                                                (lowered.as_text(dialect="hlo"))
    tests/data/jax/<case>/<case>.optimized.hlo  post-optimization HLO
                                                (lowered.compile().as_text())
    tests/data/jax/<case>/<case>.mlir           StableHLO MLIR (lowered.as_text()),
                                                with sdy/mhlo sharding attributes
    tests/data/jax/<case>/<case>.npz            inputs arg0.. and outputs out0..

## Conventions

* `argN` are the inputs in the **flattened parameter order of the entry
  computation** (`jax.tree_util.tree_leaves(args)`; dict pytrees flatten in sorted
  key order).  All cases are jitted with `keep_unused=True`, so every leaf is an
  entry parameter.
* `outN` are the flattened outputs (`tree_leaves` of the result), i.e. the
  elements of the entry computation's result tuple in order.
* **bfloat16 arrays are stored as float32** in the npz (exact: every bf16 value is
  representable in f32).  MANIFEST.json records the true dtype (`"bfloat16"`).
  All other dtypes are stored natively.  npz files contain no pickled objects
  (load with `allow_pickle=False`).
* For sharded cases the npz holds the **global** (unsharded) arrays; the `.hlo`
  contains `sharding={{...}}` annotations and JAX's sharding custom-calls
  (`Sharding`, `SPMDFullToShardShape`, `SPMDShardToFullShape`, ...), and the
  `.optimized.hlo` is XLA's SPMD-partitioned **per-device** program with
  collectives.  `mesh.device_ids` in MANIFEST gives the device order of the mesh.
* `hlo_ok_to_evaluate` is true for the pre-optimization `.hlo` of unsharded cases:
  these contain only plain HLO ops and can be run by a reference evaluator and
  compared with the npz outputs.  The `.optimized.hlo` files contain fusions,
  backend-specific custom-calls and layouts: parse/round-trip only.
* `bit_reproducible` is false where the outputs depend on an implementation-defined
  bit stream (`random_rbg`: `rng-bit-generator` with `algorithm=rng_default`).
  Float results generally should be compared with a tolerance (XLA CPU uses
  approximations for transcendental functions); integer/bitwise results exactly.

## Shardy vs GSPMD lowering

JAX {jax} lowers with the Shardy partitioner by default.  The pre-optimization
`.hlo` of the `sharded_*` cases therefore carries, next to `sharding={{...}}`,
`frontend_attributes={{xla.sdy.sharding="#sdy.sharding<@mesh, [...]>"}}` on
parameters, a module-level `frontend_attributes={{xla.sdy.meshes={{mesh = #sdy.mesh<[...]>}}}}`,
`custom-call`s with targets `xla.sdy.FuncResultSharding` (results) and, for
`shard_map`, `xla.sdy.GlobalToLocalShape` / `xla.sdy.LocalToGlobalShape` around a
`call` to a computation named `xla.sdy.manual_computation_body.N`
(`frontend_attributes={{inlineable="false"}}`).  The `*_gspmd` cases are the same
programs lowered with `jax_use_shardy_partitioner=False`: these use the classic
`custom_call_target="Sharding"`, `"SPMDFullToShardShape"`, `"SPMDShardToFullShape"`
with `sharding={{manual}}`.

## HLO text forms found in these files (the parser must accept them)

* pre-optimization `.hlo`: instruction names without `%`, computations without a
  signature (`ENTRY main.7 {{`), non-default layouts on transposes
  (`f32[12,16]{{0,1}} transpose(...)`), `/*index=5*/` comments inside long tuple
  shapes, `topk(x), k=3, largest=true`, `opt-barrier`, `constant(-inf)` /
  `constant(nan)` / `constant(true)` / `constant({{4}})`.
* `.optimized.hlo`: `%`-prefixed names, `ENTRY %main.6_spmd (param.2: f32[8], ...) -> (...) {{`,
  module attributes `is_scheduled=true`,
  `allow_spmd_sharding_propagation_to_parameters={{false,...}}`,
  `num_partitions=8`; sections `FileNames`, `FunctionNames`, `FileLocations`,
  `StackFrames` before the computations; `metadata={{op_name="..." stack_frame_id=7}}`;
  JSON `backend_config={{...}}`; `fusion(...), kind=kLoop|kCustom, calls=%...`;
  `control-predecessors={{%copy.15}}`; `frontend_attributes={{xla_cpu_small_call="true"}}`;
  replica groups as explicit lists `{{{{0,1,2,3}},{{4,5,6,7}}}}`, iota form `[2,4]<=[8]`, and
  mesh form `mesh['axis_0'=2,'axis_1'=4] {{'axis_0'}}` (optionally with
  `device_ids=([2,4]T(1,0))` after the mesh).

## Cases

{cases}
"""


def main():
    only = set(sys.argv[1:])
    os.makedirs(OUT_DIR, exist_ok=True)
    manifest_path = os.path.join(OUT_DIR, "MANIFEST.json")
    old = {}
    if only and os.path.exists(manifest_path):
        with open(manifest_path) as fh:
            old = {e["name"]: e for e in json.load(fh)["cases"]}
    results, failed = dict(old), []
    ordered = [c for c in CASES if not c["x64"]] + [c for c in CASES if c["x64"]]
    for c in ordered:
        if only and c["name"] not in only:
            continue
        if c["x64"]:
            jax.config.update("jax_enable_x64", True)
        saved = {}
        try:
            for k, v in (c.get("config") or {}).items():
                saved[k] = getattr(jax.config, k)
                jax.config.update(k, v)
            results[c["name"]] = run_case(c)
            print(f"[ok]   {c['name']}", flush=True)
        except Exception as e:  # skip with a note
            failed.append((c["name"], f"{type(e).__name__}: {e}"))
            print(f"[SKIP] {c['name']}: {type(e).__name__}: {str(e)[:500]}", flush=True)
            traceback.print_exc(limit=3)
        finally:
            for k, v in saved.items():
                jax.config.update(k, v)
    order = [c["name"] for c in CASES]
    entries = [results[n] for n in order if n in results]
    jaxlib_version = getattr(jax.lib, "__version__", None)
    try:
        import jaxlib
        jaxlib_version = jaxlib.__version__
    except Exception:
        pass
    for e in entries:
        e["jaxlib_version"] = jaxlib_version
    manifest = {
        "generator": "scripts/gen_jax_testdata.py",
        "jax_version": jax.__version__,
        "jaxlib_version": jaxlib_version,
        "backend": "cpu",
        "xla_flags": "--xla_force_host_platform_device_count=8",
        "bfloat16_stored_as": "float32",
        "cases": entries,
    }
    with open(manifest_path, "w") as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
    def case_line(entry):
        sharded = f" (sharded, {entry['num_devices']} devices)" if entry["sharded"] else ""
        return f"* `{entry['name']}`{sharded} -- {entry['description']}"

    case_lines = "\n".join(case_line(e) for e in entries)
    with open(os.path.join(OUT_DIR, "README.md"), "w") as fh:
        fh.write(README.format(jax=jax.__version__, jaxlib=jaxlib_version, cases=case_lines))

    # Check and summarize.
    print()
    print(f"{'case':28s} {'shard':5s} {'ndev':4s} {'#in':>3s} {'#out':>4s} "
          f"{'hlo':>8s} {'opt':>8s} {'mlir':>8s} {'npz':>8s}")
    total = 0
    bad = []
    for e in entries:
        sizes = []
        for k in ("hlo", "optimized_hlo", "mlir", "npz"):
            p = os.path.join(OUT_DIR, e["files"][k])
            s = os.path.getsize(p) if os.path.exists(p) else 0
            if s == 0:
                bad.append(p)
            sizes.append(s)
            total += s
        print(f"{e['name']:28s} {str(e['sharded']):5s} {e['num_devices']:4d} "
              f"{len(e['inputs']):3d} {len(e['outputs']):4d} "
              + " ".join(f"{s:8d}" for s in sizes))
    print(f"total bytes: {total}")
    if bad:
        print("EMPTY/MISSING FILES:", bad)
    if failed:
        print("FAILED/SKIPPED CASES:")
        for n, msg in failed:
            print(f"  {n}: {msg[:300]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
