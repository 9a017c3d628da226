"""rng-bit-generator as generated code (``backends/cpu/random.py``): bit for bit the
reference's Threefry and Philox bits and new states, over algorithms, output widths, shapes
(XLA's split of the 32-bit Threefry output included), state sizes and counters that wrap;
run alone and stacked over devices; no fallback left for it."""

import numpy as np
import pytest
from cpu_bits import exact_bits

from xla_spmd.backends.cpu import BACKEND
from xla_spmd.backends.reference import evaluate, leaves
from xla_spmd.collectives import LocalWorld
from xla_spmd.ir.hlo_parser import parse_hlo

SHAPES = [(), (1,), (5,), (4, 3), (3, 5), (3, 3, 1), (1, 7), (2, 9, 3)]
TYPES = ["u8", "u16", "u32", "s32", "u64", "s64"]


def _module(algorithm: str, state: str, out: str, partitions: int = 1) -> str:
    return f"""HloModule m, num_partitions={partitions}
ENTRY %e (s: {state}) -> ({state}, {out}) {{
  %s = {state} parameter(0)
  ROOT %r = ({state}, {out}) rng-bit-generator(%s), algorithm={algorithm}
}}"""


def _states(words: int, dtype) -> list:
    top = np.iinfo(np.uint64).max
    cases = [[7, 0, 1][:words], [0x0123456789ABCDEF, top - 2, top][:words],
             [top, top, 5][:words]]
    return [np.array(c, np.uint64).view(dtype) for c in cases]


@pytest.mark.parametrize("algorithm", ["rng_three_fry", "rng_philox", "rng_default"])
@pytest.mark.parametrize("out_type", TYPES)
@pytest.mark.parametrize("state_type", ["u64[2]", "u64[3]", "s64[2]"])
def test_generated_bits_equal_the_reference(algorithm, out_type, state_type):
    dtype = np.uint64 if state_type.startswith("u") else np.int64
    for dims in SHAPES:
        out = f"{out_type}[{','.join(map(str, dims))}]"
        module = parse_hlo(_module(algorithm, state_type, out))
        executable = BACKEND.compile(module, (0,))
        assert executable.report()["fallbacks"] == {}, out
        for state in _states(int(state_type[-2]), dtype):
            got = executable.run(0, [state], None)
            want = leaves(evaluate(module, [state]))
            assert [exact_bits(g) for g in got] == [exact_bits(np.asarray(w)) for w in want], (out,
                                                                                    state)


@pytest.mark.parametrize("algorithm", ["rng_three_fry", "rng_philox"])
def test_generated_bits_run_stacked(algorithm):
    """Four devices with their own states: each gets the bits of its own state."""
    module = parse_hlo(_module(algorithm, "u64[2]", "u32[3,4]", partitions=4))
    executable = BACKEND.compile(module, tuple(range(4)))
    arguments = {d: [np.array([d * 977, ((1 << 64) - 2 + d) % (1 << 64)], np.uint64)]
                 for d in range(4)}
    world = LocalWorld(4)
    results = executable.run_together(arguments, {d: world.communicator(d) for d in range(4)},
                                      stack=True)
    for device in range(4):
        want = leaves(evaluate(module, arguments[device]))
        assert [exact_bits(r) for r in results[device]] == [exact_bits(np.asarray(w)) for w in want]
