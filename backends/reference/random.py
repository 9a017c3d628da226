"""Reference evaluation rules: rng-bit-generator (XLA's exact expansions) and rng.

Invariants (op_semantics §13, XLA's `prng.cc` and `RngBitGeneratorExpander`; all checked
bit-exactly against XLA CPU outputs in tests/data/jax/rng_bit_generator): the state is
``[key, counter...]``. THREE_FRY runs Threefry-2x32-20 keyed by the (low, high) words of the
key on 64-bit counters ``counter + linear index``; 32-bit outputs split the first even dim
(else the largest) in halves (rounded up), generate one counter per half-shape element and
interleave its two words along that dim (x0 at 2i, x1 at 2i+1), trimming an odd tail; 64-bit
outputs are ``x0 | x1 << 32``; 8/16-bit outputs truncate the 32-bit stream. PHILOX (and
DEFAULT, which XLA CPU/GPU map to it) runs Philox-4x32-10 on 128-bit counters ``counter + i``
producing 4 words each, laid out round-robin; a u64[2] state's counter is
``(low = state[1], high = state[0])``. The new state is the key and the counter advanced by
the number of counters (Philox blocks) used.

>>> bits = threefry2x32(np.uint32([0]), np.uint32([0]), np.uint32([0]), np.uint32([0]))
>>> [hex(int(b[0])) for b in bits]  # Random123's known-answer test
['0x6b200159', '0x99ba4efe']
"""

from __future__ import annotations

import zlib

import numpy as np

from xla_spmd.backends.reference.evaluator import EVALUATE, Context
from xla_spmd.errors import EvaluationError
from xla_spmd.ir import Instruction, RngAlgorithm

_U32 = np.uint32
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U32(r)) | (x >> _U32(32 - r))


def threefry2x32(k0, k1, x0, x1, xp=np) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 with 20 rounds on uint32 arrays (keys broadcast); ``xp`` is the array
    module of the counters (numpy, or CuPy on the GPU backend)."""
    k0, k1 = np.asarray(k0, _U32), np.asarray(k1, _U32)
    ks = (k0, k1, _U32(0x1BD11BDA) ^ k0 ^ k1)
    x0 = xp.asarray(x0, _U32) + ks[0]
    x1 = xp.asarray(x1, _U32) + ks[1]
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            x0 = x0 + x1
            x1 = _rotl(x1, r)
            x1 = x1 ^ x0
        x0 = x0 + ks[(group + 1) % 3]
        x1 = x1 + ks[(group + 2) % 3] + _U32(group + 1)
    return x0, x1


def philox4x32(key: tuple, counters: list, xp=np) -> list:
    """Philox-4x32 with 10 rounds; `counters` is four uint32 arrays (of module ``xp``)."""
    k0, k1 = (np.asarray(k, _U32) for k in key)
    x = [xp.asarray(c, _U32) for c in counters]
    for round_index in range(10):
        if round_index:
            k0 = k0 + _U32(0x9E3779B9)
            k1 = k1 + _U32(0xBB67AE85)
        product0 = x[0].astype(np.uint64) * np.uint64(0xD2511F53)
        product1 = x[2].astype(np.uint64) * np.uint64(0xCD9E8D57)
        hi0, lo0 = (product0 >> np.uint64(32)).astype(_U32), product0.astype(_U32)
        hi1, lo1 = (product1 >> np.uint64(32)).astype(_U32), product1.astype(_U32)
        x = [hi1 ^ x[1] ^ k0, lo1, hi0 ^ x[3] ^ k1, lo0]
    return x


def _words(value: np.ndarray, xp=np) -> tuple[np.ndarray, np.ndarray]:
    value = xp.asarray(value, np.uint64)
    return value.astype(_U32), (value >> np.uint64(32)).astype(_U32)


def _join(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    return low.astype(np.uint64) | (high.astype(np.uint64) << np.uint64(32))


def _threefry_counters(key, counter, dims, xp):
    count = int(np.prod(dims, dtype=np.int64))
    counters = np.uint64(counter) + xp.arange(count, dtype=np.uint64)
    k0, k1 = _words(key)
    x0, x1 = threefry2x32(k0, k1, *_words(counters, xp), xp=xp)
    return x0.reshape(dims), x1.reshape(dims), count


def _three_fry(state: np.ndarray, dims: tuple, bits: int, xp):
    key, counter = state[0], state[1]
    if bits == 64:
        x0, x1, count = _threefry_counters(key, counter, dims, xp)
        output = _join(x0, x1)
    else:
        # XLA splits the first even dim, else the largest (first of equals).
        split = next((d for d, n in enumerate(dims) if n % 2 == 0 and n > 1), None)
        if split is None and dims and max(dims) > 1:
            split = int(np.argmax(dims))
        if split is None:
            x0, _, count = _threefry_counters(key, counter, dims, xp)
            output = x0
        else:
            half = list(dims)
            half[split] = -(-dims[split] // 2)
            x0, x1, count = _threefry_counters(key, counter, tuple(half), xp)
            both = xp.stack([x0, x1], axis=split + 1)
            padded = list(dims)
            padded[split] = half[split] * 2
            output = both.reshape(padded)[tuple(slice(0, n) for n in dims)]
    new_state = np.array(state, dtype=np.uint64)
    new_state[1] = np.uint64(counter) + np.uint64(count)
    return new_state, output


def _philox(state: np.ndarray, dims: tuple, bits: int, xp):
    key = state[0]
    low = np.uint64(state[1])
    # The 128-bit counter is (state[1], state[2]); with a u64[2] state XLA takes the key as
    # the high half (verified against XLA CPU outputs).
    high = np.uint64(state[2] if len(state) > 2 else state[0])
    count = int(np.prod(dims, dtype=np.int64))
    words_needed = count * 2 if bits == 64 else count
    blocks = -(-words_needed // 4)
    offsets = xp.arange(blocks, dtype=np.uint64)
    counter_low = low + offsets
    counter_high = high + (counter_low < low).astype(np.uint64)  # carry into the high word
    x = philox4x32(_words(key), [*_words(counter_low, xp), *_words(counter_high, xp)], xp)
    if bits == 64:
        numbers = xp.stack([_join(x[0], x[1]), _join(x[2], x[3])], axis=1).reshape(-1)
    else:
        numbers = xp.stack(x, axis=1).reshape(-1)
    output = numbers[:count].reshape(dims)
    new_low = low + np.uint64(blocks)
    new_state = np.array(state, dtype=np.uint64)
    new_state[1] = new_low
    if len(state) > 2:
        new_state[2] = high + np.uint64(new_low < low)
    return new_state, output


@EVALUATE.register("rng-bit-generator")
def rng_bit_generator_rule(inst: Instruction, operands: list, ctx: Context):
    new_state, bits = rng_bit_generator(inst, np.asarray(operands[0]))
    return new_state, bits.view(inst.shape.elements[1].dtype.numpy)


def rng_bit_generator(inst: Instruction, state: np.ndarray, xp=np) -> tuple:
    """(new state, the bits as unsigned integers of the output's width) of ``inst`` from its
    ``state`` (a small host array); the bits are computed with array module ``xp`` (numpy
    here, CuPy on the GPU backend)."""
    out_shape = inst.shape.elements[1]
    dtype = out_shape.dtype
    bits = dtype.bits
    if bits not in (8, 16, 32, 64):
        raise EvaluationError(f"rng-bit-generator {inst.name}: output type {dtype} must have "
                              "8, 16, 32 or 64 bits")
    generate_bits = 64 if bits == 64 else 32
    algorithm = inst.attrs.algorithm
    with np.errstate(over="ignore"):
        if algorithm is RngAlgorithm.THREE_FRY:
            new_state, raw = _three_fry(np.asarray(state, np.uint64), out_shape.dims,
                                        generate_bits, xp)
        else:  # PHILOX, and DEFAULT, which XLA's CPU and GPU backends run as PHILOX
            new_state, raw = _philox(np.asarray(state, np.uint64), out_shape.dims,
                                     generate_bits, xp)
    unsigned = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
    return new_state.astype(inst.shape.elements[0].dtype.numpy), raw.astype(unsigned)


@EVALUATE.register("rng")
def rng_rule(inst: Instruction, operands: list, ctx: Context):
    """Values are implementation-defined; a numpy Generator seeded by the instruction name
    makes each evaluation reproducible."""
    low, high = (np.asarray(o) for o in operands)
    generator = np.random.default_rng(zlib.crc32(inst.name.encode()))
    dims = inst.shape.dims
    dtype = inst.shape.dtype.array_dtype
    if inst.attrs.distribution.value == "rng_normal":
        values = generator.normal(low.astype(np.float64), high.astype(np.float64), dims)
    elif dtype.kind in "iu":
        values = generator.integers(low, high, dims, endpoint=False)
    else:
        values = generator.uniform(low.astype(np.float64), high.astype(np.float64), dims)
        values = np.minimum(values.astype(dtype), np.nextafter(high.astype(dtype), low))
    return values.astype(dtype)
