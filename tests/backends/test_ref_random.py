"""Reference evaluator: rng-bit-generator vs an independent scalar Threefry, vs XLA's own
outputs (tests/data/jax/rng_bit_generator), and rng."""

import pathlib

import numpy as np
import pytest

from xla_spmd.backends.reference import evaluate
from xla_spmd.ir import (
    F32,
    U8,
    U32,
    U64,
    ArrayShape,
    Builder,
    Module,
    RngAlgorithm,
    RngDistribution,
    TupleShape,
)

DATA = pathlib.Path(__file__).parents[1] / "data" / "jax" / "rng_bit_generator"
MASK = 0xFFFFFFFF


def threefry_scalar(key: int, counter: int) -> tuple[int, int]:
    """Threefry-2x32-20 written out as in the Random123 paper, with Python ints."""
    k = [key & MASK, key >> 32]
    k.append(0x1BD11BDA ^ k[0] ^ k[1])
    x = [(counter & MASK) + k[0] & MASK, ((counter >> 32) + k[1]) & MASK]
    rotations = [13, 15, 26, 6, 17, 29, 16, 24]
    for round_index in range(20):
        r = rotations[round_index % 8]
        x[0] = (x[0] + x[1]) & MASK
        x[1] = ((x[1] << r) | (x[1] >> (32 - r))) & MASK
        x[1] ^= x[0]
        if round_index % 4 == 3:
            j = round_index // 4 + 1
            x[0] = (x[0] + k[j % 3]) & MASK
            x[1] = (x[1] + k[(j + 1) % 3] + j) & MASK
    return x[0], x[1]


def generate(state, out_shape, algorithm=RngAlgorithm.THREE_FRY):
    b = Builder("entry")
    s = b.parameter(ArrayShape(U64, (len(state),)), "state")
    root = b.rng_bit_generator(s, algorithm=algorithm,
                               shape=TupleShape((s.shape, out_shape)))
    return evaluate(Module.from_entry("rbg", b.build(root)), [np.array(state, np.uint64)])


def test_threefry_u64_output_and_state():
    key, counter = 0x0123456789ABCDEF, 2**64 - 3  # the counter wraps
    new_state, bits = generate([key, counter], ArrayShape(U64, (2, 3)))
    want = []
    for i in range(6):
        lo, hi = threefry_scalar(key, (counter + i) % 2**64)
        want.append(lo | hi << 32)
    np.testing.assert_array_equal(bits.reshape(-1), np.array(want, np.uint64))
    np.testing.assert_array_equal(new_state, [key, (counter + 6) % 2**64])


@pytest.mark.parametrize("dims,split", [((4, 6), 0), ((3, 5), 1), ((5,), 0), ((3, 4), 1),
                                        ((1, 1), None), ((), None)])
def test_threefry_u32_split_rule(dims, split):
    key, counter = 42, 7
    new_state, bits = generate([key, counter], ArrayShape(U32, dims))
    if split is None:
        counters = int(np.prod(dims))
        want = np.array([threefry_scalar(key, counter + i)[0] for i in range(counters)],
                        np.uint32).reshape(dims)
    else:
        half = list(dims)
        half[split] = -(-dims[split] // 2)
        counters = int(np.prod(half))
        want = np.zeros(dims, np.uint32)
        for i, index in enumerate(np.ndindex(*half)):
            words = threefry_scalar(key, counter + i)
            for word in range(2):
                target = list(index)
                target[split] = 2 * index[split] + word
                if target[split] < dims[split]:
                    want[tuple(target)] = words[word]
    np.testing.assert_array_equal(bits, want)
    assert int(new_state[1]) == counter + counters


def test_bits_match_xla_cpu_outputs():
    """XLA's own THREE_FRY and PHILOX streams (MANIFEST: bit_reproducible)."""
    data = np.load(DATA / "rng_bit_generator.npz")
    state = data["arg0"].reshape(2, 2).view(np.uint64).reshape(2)
    for offset, algorithm in ((0, RngAlgorithm.THREE_FRY), (5, RngAlgorithm.PHILOX)):
        s1, bits = generate(state, ArrayShape(U32, (4, 6)), algorithm)
        np.testing.assert_array_equal(bits, data[f"out{offset + 1}"])
        np.testing.assert_array_equal(s1.view(np.uint32), data[f"out{offset}"])
        s2, bits = generate(s1, ArrayShape(U32, (3, 5)), algorithm)
        np.testing.assert_array_equal(bits, data[f"out{offset + 3}"])
        np.testing.assert_array_equal(s2.view(np.uint32), data[f"out{offset + 2}"])
        _, bits = generate(state, ArrayShape(U8, (5,)), algorithm)
        np.testing.assert_array_equal(bits, data[f"out{offset + 4}"])


def test_default_is_philox_and_u64_philox_shape():
    state = [5, 9]
    a = generate(state, ArrayShape(U32, (7,)), RngAlgorithm.DEFAULT)
    b = generate(state, ArrayShape(U32, (7,)), RngAlgorithm.PHILOX)
    np.testing.assert_array_equal(a[1], b[1])
    new_state, bits = generate(state, ArrayShape(U64, (3,)), RngAlgorithm.PHILOX)
    assert bits.shape == (3,) and int(new_state[1]) == 9 + 2  # 6 words = 2 blocks


def test_rng_uniform_in_range_and_reproducible():
    b = Builder("entry")
    low, high = b.constant(np.float32(-1)), b.constant(np.float32(2))
    m = Module.from_entry("rng", b.build(b.rng(low, high, distribution=RngDistribution.UNIFORM,
                                               shape=ArrayShape(F32, (100,)))))
    values = evaluate(m, [])
    assert values.dtype == np.float32 and values.min() >= -1 and values.max() < 2
    np.testing.assert_array_equal(values, evaluate(m, []))
