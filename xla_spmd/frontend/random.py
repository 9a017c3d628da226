"""`xla_spmd.random`: explicit keys and counter-based random numbers from `rng-bit-generator`
(threefry), a deterministic function of the key (and of nothing else).

A key is a ``u32[2]`` array. Its bits become the generator's ``u64[2]`` state
``[key, counter]``; `split` and `fold_in` derive new keys from generated bits.

>>> k1, k2 = split(key(0))
>>> x = uniform(k1, (3,))
>>> bool(((np.asarray(x) >= 0) & (np.asarray(x) < 1)).all())
True
"""

from __future__ import annotations

import math

import numpy as np

from xla_spmd.frontend import lax
from xla_spmd.frontend import numpy_api as xnp
from xla_spmd.frontend.tracing import Array, bind
from xla_spmd.ir import F32, F64, U32, U64, ArrayShape, RngAlgorithm, TupleShape

ALGORITHM = RngAlgorithm.THREE_FRY


def key(seed: int):
    """A key from an integer seed (as ``jax.random.key``'s raw form, ``[hi, lo]``)."""
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
    return Array(np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32))


PRNGKey = key


def _state(k, counter=None):
    k = xnp.asarray(k)
    if k.shape != (2,) or k.dtype != np.uint32:
        raise ValueError(f"a random key is a u32[2] array, got {k.aval}")
    packed = lax.reshape(lax.bitcast_convert(k, U64, ()), (1,))
    count = lax.full((1,), 0, U64) if counter is None else \
        lax.reshape(lax.convert(xnp.asarray(counter), U64), (1,))
    return lax.concatenate([packed, count], 0)


def random_bits(k, shape, dtype=U32, counter=None):
    """Uniform random bits of `shape` (u32 or u64) for key `k`."""
    shape = tuple(shape)
    state = _state(k, counter)
    out = bind("rng-bit-generator", state,
               shape=TupleShape((ArrayShape(U64, (2,)), ArrayShape(dtype, shape))),
               algorithm=ALGORITHM)
    return lax.get_tuple_element(out, 1)


def split(k, num: int = 2):
    """`num` new keys, as a ``u32[num, 2]`` array (unpack with ``k1, k2 = split(k)``)."""
    return random_bits(k, (num, 2))


def fold_in(k, data):
    """A new key from `k` and an integer."""
    return random_bits(k, (2,), counter=data)


def uniform(k, shape=(), dtype=xnp.float32, minval=0.0, maxval=1.0):
    """Uniform floats in [minval, maxval)."""
    dtype = lax.as_dtype(dtype)
    if dtype is F64:
        bits = random_bits(k, shape, U64)
        mantissa = lax.bitcast_convert(
            xnp.bitwise_or(bind("shift-right-logical", bits, lax.full(bits.shape, 12, U64)),
                           lax.full(bits.shape, 0x3FF0000000000000, U64)), F64)
    else:
        bits = random_bits(k, shape, U32)
        mantissa = lax.bitcast_convert(
            xnp.bitwise_or(bind("shift-right-logical", bits, lax.full(bits.shape, 9, U32)),
                           lax.full(bits.shape, 0x3F800000, U32)), F32)
        mantissa = lax.convert(mantissa, dtype)
    unit = mantissa - 1.0
    return xnp.maximum(minval + (maxval - minval) * unit, minval)


def normal(k, shape=(), dtype=xnp.float32):
    """Standard normal samples (Box-Muller on two uniform streams)."""
    pair = uniform(k, (2,) + tuple(shape), dtype)
    u1, u2 = pair[0], pair[1]
    radius = xnp.sqrt(-2.0 * xnp.log1p(-u1))
    return radius * xnp.cos((2.0 * math.pi) * u2)


def randint(k, shape, minval, maxval, dtype=xnp.int32):
    """Integers in [minval, maxval) (modulo reduction of 32 random bits)."""
    bits = random_bits(k, shape, U32)
    span = lax.full(bits.shape, maxval - minval, U32)
    offset = bind("remainder", bits, span)
    return xnp.astype(offset, dtype) + minval


def bernoulli(k, p=0.5, shape=()):
    return uniform(k, shape) < p


def categorical(k, logits, axis: int = -1):
    """Samples of class indices from unnormalized log-probabilities (Gumbel max)."""
    logits = xnp.asarray(logits)
    u = uniform(k, logits.shape, logits.dtype, minval=1e-12)
    return xnp.argmax(logits - xnp.log(-xnp.log(u)), axis)


def permutation(k, n: int):
    """A random permutation of ``range(n)``."""
    return xnp.argsort(random_bits(k, (n,), U32))
