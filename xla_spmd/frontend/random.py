"""`xla_spmd.random`: JAX's random numbers, bit for bit: the same key and the same call give
``jax.random``'s values (checked against JAX-made data in tests/frontend/test_random_jax.py).

A key is JAX's raw key, a ``u32[2]`` array (``PRNGKey(seed)``; ``key(seed)`` is the same
here). Everything is built from the threefry2x32 block cipher (Salmon et al. 2011, 20 rounds)
written with u32 adds, rotations and xors, as JAX's default implementation with its default
``jax_threefry_partitionable``:

* ``random_bits(key, shape)``: threefry of the 64-bit counter ``0, 1, 2, ...`` over `shape`
  (row-major) split into its high and low words, the two output words xor-ed (32 bits),
  concatenated (64) or truncated (8, 16). Each element depends only on its own counter, so a
  sharded sample partitions with no communication.
* ``split(key, n)``: the two output words for counters ``0 .. n-1`` are the new keys;
  ``fold_in(key, d)`` hashes the pair ``(0, d)``.
* The samplers transform bits as JAX does: `uniform` fills the mantissa of a float in
  [1, 2); `normal` is ``sqrt(2) erfinv(u)``; `randint` combines two draws modulo the span;
  `permutation` sorts by random keys; `categorical` takes the Gumbel argmax.
* ``out_sharding=`` (`bits`, `uniform`, `normal`, `truncated_normal`, `bernoulli`,
  `randint`, `permutation`), as JAX's: the sample is drawn untyped and resharded to it (a
  sharding, or a PartitionSpec over the `use_mesh` mesh or the key's); without it a sample
  from one key is replicated under Explicit mesh axes, as JAX's ``random_bits`` rule gives.

>>> k1, k2 = split(PRNGKey(0))
>>> np.asarray(k1).tolist()
[1797259609, 2579123966]
>>> x = uniform(k1, (3,))
>>> bool(((np.asarray(x) >= 0) & (np.asarray(x) < 1)).all())
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import ml_dtypes
import numpy as np

from xla_spmd.frontend import lax, numpy_index, numpy_math, numpy_reductions, numpy_shape
from xla_spmd.frontend import numpy_core as xnp
from xla_spmd.frontend.dtypes import canonicalize, default_float, default_int, x64_enabled
from xla_spmd.frontend.sharding_types import takes_out_sharding
from xla_spmd.frontend.tracing import Array, ArrayLike, DTypeLike, Value, bind
from xla_spmd.ir import S32, U8, U16, U32, U64, DType

_UNSIGNED = {8: U8, 16: U16, 32: U32, 64: U64}
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


# ---------------------------------------------------------------------------------------------
# threefry2x32


def _u32(value) -> Value:
    return lax.constant(value, U32)


def _bcast(x, shape) -> Value:
    return x if tuple(x.shape) == tuple(shape) else lax.broadcast_in_dim(x, shape, ())


def _rotate_left(x, distance: int) -> Value:
    shape = x.shape
    left = bind("shift-left", x, lax.full(shape, distance, U32))
    right = bind("shift-right-logical", x, lax.full(shape, 32 - distance, U32))
    return bind("or", left, right)


def threefry2x32(key1: ArrayLike, key2: ArrayLike, x1: ArrayLike, x2: ArrayLike
                 ) -> tuple[Value, Value]:
    """The threefry2x32 hash of counter words `x1`, `x2` (u32 arrays of one shape) under key
    words `key1`, `key2` (u32 scalars): 5 groups of 4 rounds, a key injection after each."""
    shape = x1.shape
    keys = [_bcast(key1, shape), _bcast(key2, shape)]
    keys.append(bind("xor", bind("xor", keys[0], keys[1]), lax.full(shape, 0x1BD11BDA, U32)))
    x = [lax.add(x1, keys[0]), lax.add(x2, keys[1])]
    for group in range(5):
        for rotation in _ROTATIONS[group % 2]:
            x[0] = lax.add(x[0], x[1])
            x[1] = bind("xor", x[0], _rotate_left(x[1], rotation))
        x[0] = lax.add(x[0], keys[(group + 1) % 3])
        x[1] = lax.add(lax.add(x[1], keys[(group + 2) % 3]), lax.full(shape, group + 1, U32))
    return x[0], x[1]


def _key_words(key) -> tuple[Value, Value]:
    key = xnp.asarray(key)
    if key.shape != (2,) or key.dtype != np.uint32:
        raise ValueError(f"a random key is a uint32[2] array (PRNGKey(seed)), got {key.aval}")
    return lax.reshape(lax.slice(key, [0], [1]), ()), lax.reshape(lax.slice(key, [1], [2]), ())


def _counters(shape) -> tuple[Value, Value]:
    """The high and low words of a u64 row-major counter over `shape` (the high word is 0:
    no array has 2**32 elements), built from one iota per dim so that it partitions."""
    shape = tuple(shape)
    if math.prod(shape) >= 2 ** 32:
        raise ValueError(f"random bits for {math.prod(shape)} elements: at most 2**32 - 1")
    high = lax.full(shape, 0, U32)
    if not shape:
        return high, high
    low, stride = None, 1
    for dim in reversed(range(len(shape))):
        term = lax.iota(U32, shape, dim)
        if stride != 1:
            term = lax.mul(term, lax.full(shape, stride, U32))
        low = term if low is None else lax.add(low, term)
        stride *= shape[dim]
    assert low is not None  # shape has a dim
    return high, low


def _hash_pairs(key, shape) -> tuple[Value, Value]:
    key1, key2 = _key_words(key)
    high, low = _counters(shape)
    return threefry2x32(key1, key2, high, low)


# ---------------------------------------------------------------------------------------------
# Keys


def PRNGKey(seed: ArrayLike) -> Value:  # noqa: N802 (JAX's name)
    """The raw key of an integer seed, ``[high word, low word]``; without x64 the seed is a
    32-bit integer first (``PRNGKey(2**40 + 7)`` is ``[0, 7]``), as in JAX."""
    if isinstance(seed, Value):
        seed = lax.convert(seed, canonicalize(seed.aval.dtype))
        low = lax.convert(seed, U32)
        if seed.aval.dtype.bits == 64:
            high = lax.convert(bind("shift-right-logical", seed, lax.constant(32, seed.dtype)),
                               U32)
        else:
            high = lax.constant(0, U32)
        return lax.concatenate([lax.reshape(high, (1,)), lax.reshape(low, (1,))], 0)
    seed = int(seed)
    if not x64_enabled():
        seed = int(np.int64(seed).astype(np.int32))  # wraps, as JAX's int64 -> int32
        return Array(np.array([0, seed & 0xFFFFFFFF], np.uint32))
    seed &= 0xFFFFFFFFFFFFFFFF
    return Array(np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32))


key = PRNGKey


def key_data(keys: ArrayLike) -> Value:
    """The u32 words of keys (keys are raw arrays here: themselves)."""
    return xnp.asarray(keys)


def wrap_key_data(data: ArrayLike) -> Value:
    """Keys from their u32 words (keys are raw arrays here: the words themselves)."""
    return xnp.asarray(data, np.uint32)


def split(key: ArrayLike, num: int | tuple[int, ...] | list[int] = 2) -> Value:
    """`num` new keys (an int, or a shape), as a ``u32[*num, 2]`` array: unpack with
    ``k1, k2 = split(k)``."""
    shape = tuple(num) if isinstance(num, (tuple, list)) else (int(num),)
    bits1, bits2 = _hash_pairs(key, shape)
    ones = shape + (1,)
    return lax.concatenate([lax.reshape(bits1, ones), lax.reshape(bits2, ones)], len(shape))


def fold_in(key: ArrayLike, data: ArrayLike) -> Value:
    """A new key from `key` and a 32-bit integer (the hash of the pair ``(0, data)``)."""
    if (data.ndim if isinstance(data, Value) else np.ndim(data)) != 0:
        raise TypeError("fold_in takes a scalar; use a loop or vmap for several")
    key1, key2 = _key_words(key)
    word = lax.convert(xnp.asarray(data), U32) if isinstance(data, Value) else \
        _u32(int(data) & 0xFFFFFFFF)
    out1, out2 = threefry2x32(key1, key2, lax.reshape(_u32(0), (1,)), lax.reshape(word, (1,)))
    return lax.concatenate([out1, out2], 0)


def random_bits(key: ArrayLike, bit_width: int, shape: Sequence[int]) -> Value:
    """Uniform random bits of `shape`, unsigned of `bit_width` (8, 16, 32 or 64)."""
    if bit_width not in _UNSIGNED:
        raise ValueError(f"random_bits: bit_width {bit_width}; expected 8, 16, 32 or 64")
    bits1, bits2 = _hash_pairs(key, tuple(shape))
    if bit_width == 64:
        high = lax.convert(bits1, U64)
        shifted = bind("shift-left", high, lax.full(high.shape, 32, U64))
        return bind("or", shifted, lax.convert(bits2, U64))
    mixed = bind("xor", bits1, bits2)
    return mixed if bit_width == 32 else lax.convert(mixed, _UNSIGNED[bit_width])


@takes_out_sharding
def bits(key: ArrayLike, shape: Sequence[int] = (), dtype: DTypeLike = None) -> Value:
    """Uniform random bits of `shape` as an unsigned `dtype` (default uint32)."""
    dtype = lax.as_dtype(dtype or np.uint32)
    if dtype.kind.name != "UNSIGNED":
        raise ValueError(f"bits: dtype must be unsigned, got {dtype}")
    return random_bits(key, dtype.bits, shape)


# ---------------------------------------------------------------------------------------------
# Samplers


def _float_dtype(dtype, what: str) -> DType:
    dtype = default_float() if dtype is None else lax.as_dtype(dtype)
    if not dtype.is_float:
        raise ValueError(f"{what}: dtype must be a float type, got {dtype}")
    return dtype


def _finfo(dtype: DType):
    return ml_dtypes.finfo(dtype.numpy)


@takes_out_sharding
def uniform(key: ArrayLike, shape: Sequence[int] = (), dtype: DTypeLike = None,
            minval: float | Value = 0.0, maxval: float | Value = 1.0) -> Value:
    """Floats in ``[minval, maxval)``: random mantissa bits of a float in [1, 2), minus 1,
    scaled (``max(minval, u * (maxval - minval) + minval)``)."""
    dtype = _float_dtype(dtype, "uniform")
    shape = tuple(shape)
    info = _finfo(dtype)
    nbits, nmant = info.bits, info.nmant
    rng_bits = 8 if nmant < 8 else nbits
    uint = _UNSIGNED[nbits]
    raw = random_bits(key, rng_bits, shape)
    if rng_bits != nbits:
        raw = lax.convert(raw, uint)
    mantissa = bind("shift-right-logical", raw, lax.full(shape, rng_bits - nmant, uint))
    one_bits = int(np.array(1.0, dtype.array_dtype).view(uint.array_dtype))
    floats = lax.bitcast_convert(bind("or", mantissa, lax.full(shape, one_bits, uint)), dtype)
    floats = lax.sub(floats, lax.full(shape, 1.0, dtype))
    low = _bcast_to(xnp.astype(minval, dtype), shape)
    high = _bcast_to(xnp.astype(maxval, dtype), shape)
    return lax.max(low, lax.add(lax.mul(floats, lax.sub(high, low)), low))


def _bcast_to(x, shape) -> Value:
    return xnp.broadcast_to(x, xnp.broadcast_shapes(x.shape, shape))


@takes_out_sharding
def normal(key: ArrayLike, shape: Sequence[int] = (), dtype: DTypeLike = None) -> Value:
    """Standard normal samples: ``sqrt(2) * erfinv(u)`` for u uniform in (-1, 1)."""
    dtype = _float_dtype(dtype, "normal")
    low = np.nextafter(np.array(-1.0, dtype.numpy), np.array(0.0, dtype.numpy))
    u = uniform(key, shape, dtype, float(low), 1.0)
    return lax.mul(lax.full(u.shape, np.sqrt(2), dtype), numpy_math.erfinv(u))


@takes_out_sharding
def truncated_normal(key: ArrayLike, lower: ArrayLike, upper: ArrayLike,
                     shape: Sequence[int] | None = None, dtype: DTypeLike = None) -> Value:
    """Normal samples in the open interval ``(lower, upper)`` (inverse-CDF on a uniform
    between ``erf(lower / sqrt 2)`` and ``erf(upper / sqrt 2)``)."""
    dtype = _float_dtype(dtype, "truncated_normal")
    lower, upper = xnp.astype(lower, dtype), xnp.astype(upper, dtype)
    if shape is None:
        shape = xnp.broadcast_shapes(lower.shape, upper.shape)
    sqrt2 = lax.constant(np.sqrt(2), dtype)
    a = xnp.erf(xnp.true_divide(lower, sqrt2))
    b = xnp.erf(xnp.true_divide(upper, sqrt2))
    u = uniform(key, shape, dtype, a, b)
    out = xnp.multiply(sqrt2, numpy_math.erfinv(u))
    return xnp.clip(out, numpy_math.nextafter(lower, lax.constant(np.inf, dtype)),
                    numpy_math.nextafter(upper, lax.constant(-np.inf, dtype)))


@takes_out_sharding
def bernoulli(key: ArrayLike, p: ArrayLike = 0.5, shape: Sequence[int] | None = None) -> Value:
    """Booleans that are True with probability `p` (``uniform < p``)."""
    p = xnp.asarray(p)
    if not p.aval.dtype.is_float:
        raise TypeError(f"bernoulli: p must be floating, got {p.aval}")
    dims = p.shape if shape is None else tuple(shape)
    return xnp.less(uniform(key, dims, p.aval.dtype), p)


def _gumbel(key, shape, dtype: DType) -> Value:
    tiny = float(_finfo(dtype).tiny)
    u = uniform(key, shape, dtype, tiny, 1.0)
    return xnp.negative(xnp.log(xnp.negative(xnp.log(u))))


def gumbel(key: ArrayLike, shape: Sequence[int] = (), dtype: DTypeLike = None) -> Value:
    """Standard Gumbel samples (``-log(-log(u))``)."""
    return _gumbel(key, tuple(shape), _float_dtype(dtype, "gumbel"))


def categorical(key: ArrayLike, logits: ArrayLike, axis: int = -1,
                shape: Sequence[int] | None = None) -> Value:
    """Class indices drawn with probabilities ``softmax(logits, axis)`` (the Gumbel-max
    trick); `shape` may add leading sample dims to the batch dims."""
    logits = xnp.asarray(logits)
    rank = logits.ndim
    axis = axis - rank if axis >= 0 else axis
    batch_shape = tuple(n for d, n in enumerate(logits.shape) if d != axis % rank)
    shape = batch_shape if shape is None else tuple(shape)
    prefix = shape[:len(shape) - len(batch_shape)]
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis % rank, logits.shape[axis])
    noise = _gumbel(key, (*prefix, *logits_shape), logits.aval.dtype)
    expanded = numpy_shape.reshape(logits, (1,) * len(prefix) + logits.shape)
    return numpy_reductions.argmax(xnp.add(noise, expanded), axis=axis)


def _clip_to(value, dtype: DType) -> Value:
    """An integer array converted to `dtype`, clipped to its range rather than wrapped."""
    source = np.iinfo(value.dtype)
    target = np.iinfo(dtype.numpy)
    low, high = max(source.min, target.min), min(source.max, target.max)
    clipped = xnp.clip(value, lax.constant(low, value.aval.dtype),
                       lax.constant(high, value.aval.dtype))
    return lax.convert(clipped, dtype)


@takes_out_sharding
def randint(key: ArrayLike, shape: Sequence[int], minval: ArrayLike, maxval: ArrayLike,
            dtype: DTypeLike = None) -> Value:
    """Integers in ``[minval, maxval)``: two draws of random bits combined modulo the span
    (``maxval <= minval`` gives minval); 8- and 16-bit types are sampled in 32 bits."""
    dtype = default_int() if dtype is None else lax.as_dtype(dtype)
    if not dtype.is_integer:
        raise TypeError(f"randint: dtype must be an integer type, got {dtype}")
    shape = tuple(shape)
    if dtype.bits < 32:
        info = np.iinfo(dtype.numpy)
        low = xnp.clip(xnp.astype(minval, np.int32), int(info.min), int(info.max))
        high = xnp.clip(xnp.astype(maxval, np.int32), int(info.min), int(info.max) + 1)
        return lax.convert(_randint(key, shape, low, high, S32), dtype)
    return _randint(key, shape, minval, maxval, dtype)


def _randint(key, shape, minval, maxval, dtype: DType) -> Value:
    minval, maxval = xnp.asarray(minval), xnp.asarray(maxval)
    if not minval.aval.dtype.is_integer:
        minval = xnp.astype(minval, int)
    if not maxval.aval.dtype.is_integer:
        maxval = xnp.astype(maxval, int)
    limit = min(np.iinfo(dtype.numpy).max, np.iinfo(maxval.dtype).max)
    maxval_out_of_range = xnp.greater(maxval, lax.constant(limit, maxval.aval.dtype))
    minval = _bcast_to(_clip_to(minval, dtype), shape)
    maxval = _bcast_to(_clip_to(maxval, dtype), shape)
    maxval_out_of_range = _bcast_to(maxval_out_of_range, shape)
    nbits = dtype.bits
    unsigned = _UNSIGNED[nbits]
    key1, key2 = split(key)
    higher = random_bits(key1, nbits, shape)
    lower = random_bits(key2, nbits, shape)
    span = lax.convert(lax.sub(maxval, minval), unsigned)
    empty = xnp.less_equal(maxval, minval)
    one = lax.full(shape, 1, unsigned)
    span = lax.select(empty, one, span)
    span = lax.select(xnp.logical_and(maxval_out_of_range, xnp.logical_not(empty)),
                      lax.add(span, one), span)
    multiplier = bind("remainder", lax.full(shape, 2 ** (nbits // 2), unsigned), span)
    multiplier = bind("remainder", lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(bind("remainder", higher, span), multiplier),
                     bind("remainder", lower, span))
    offset = bind("remainder", offset, span)
    return lax.add(minval, lax.convert(offset, dtype))


def _shuffle(key, x, axis: int) -> Value:
    """`x` sorted along `axis` by random 32-bit keys, in rounds enough that ties are
    unlikely (3 log(n) / log(2**32 - 1) rounds)."""
    size = max(1, math.prod(x.shape))
    rounds = int(np.ceil(3 * np.log(size) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        key, subkey = split(key)
        sort_keys = random_bits(subkey, 32, x.shape)
        x = lax.sort([sort_keys, x], dimension=axis, is_stable=True, num_keys=1)[1]
    return x


@takes_out_sharding
def permutation(key: ArrayLike, x: ArrayLike, axis: int = 0, independent: bool = False) -> Value:
    """A random permutation of ``range(x)`` (an int), or of `x` along `axis` (the same for
    every slice unless `independent`)."""
    if not isinstance(x, Value) and np.ndim(x) == 0:
        return _shuffle(key, xnp.arange(int(x)), 0)
    x = xnp.asarray(x)
    axis = axis % x.ndim
    if independent or x.ndim == 1:
        return _shuffle(key, x, axis)
    order = _shuffle(key, xnp.arange(x.shape[axis]), 0)
    return numpy_index.take(x, order, axis=axis)
