"""Differential tests of the CPU backend against the reference evaluator on random programs
(``random_programs.py``) of every dtype it fuses (f32, f64, bf16, f16, s8, s32, u32, pred,
c64), aimed at its buffer optimisations: in-place fusions, donation, dot epilogues, split
fusions and products, recycled outputs. Each program runs three times in a row with a fresh
recycler that hands out every buffer (however small) again as soon as it is dropped, with
and without donating its aliased parameters, and on two in-process devices stacked, in
lockstep and on threads. Every result must equal the reference's bit for bit (any NaN
matches any NaN, as ``test_cpu_elementwise.py`` compares), no argument not handed over may
change, and no result of an earlier call may change.

Inputs are small halves or special values (NaN, infinities, signed zeros, subnormals,
integer extremes): sums are exact in any order there. (On random normal floats a dot or
a float sum over an elementwise op's result whose input was a transpose gives other bits
than the reference, whose numpy result keeps the transposed layout:
``test_cpu_operand_layouts.py``.)

The same examples run every time; a longer run draws new ones: ``RANDOM_PROGRAMS=2000
python -m pytest -q tests/backends/cpu/test_cpu_random_programs.py`` (examples per test).
"""

import os
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from xla_spmd.backends.cpu import CpuBackend
from xla_spmd.backends.cpu import program as cpu_program
from xla_spmd.backends.reference import evaluate
from xla_spmd.buffers import Recycler
from xla_spmd.collectives import LocalWorld
from xla_spmd.ir.hlo_parser import parse_hlo

sys.path[:0] = [str(Path(__file__).resolve().parent)]

from cpu_bits import exact_bits  # noqa: E402
from random_programs import arguments, program  # noqa: E402

SCALE = int(os.environ.get("RANDOM_PROGRAMS", "0"))


def _examples(default: int):
    # The same examples every run (a suite that passes passes again); RANDOM_PROGRAMS=N
    # draws N new ones each run.
    return settings(max_examples=SCALE or default, deadline=None, database=None,
                    derandomize=not SCALE, suppress_health_check=list(HealthCheck),
                    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target))


def _bits(x) -> bytes:
    """``exact_bits`` with every NaN made the same NaN (its sign and payload may differ: the
    backend promises a NaN where the reference has one)."""
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return b"c" + _bits(np.stack([x.real, x.imag]))
    if x.dtype.kind == "f" or x.dtype.name == "bfloat16":
        with np.errstate(invalid="ignore"):
            nan = np.isnan(x.astype(np.float32))
        if nan.any():
            x = x.copy()
            x[nan] = np.nan
    return exact_bits(x)


@contextmanager
def _recycling_everything():
    saved = cpu_program.OUTPUTS
    cpu_program.OUTPUTS = Recycler(min_bytes=1, max_count=64)
    try:
        yield
    finally:
        cpu_program.OUTPUTS = saved


def _module(data, size: str, partitions: int = 1):
    hlo, kinds, _, donate = program(data, size)
    alias = ""
    if donate:
        alias = ", input_output_alias={ " + ", ".join(
            f"{{{j}}}: ({i}, {{}}, may-alias)" for i, j in donate) + " }"
    header = f"HloModule m{alias}, num_partitions={partitions}"
    return (parse_hlo(f"{header}\n{hlo}"), parse_hlo(f"HloModule m\n{hlo}"), kinds,
            {i for i, _ in donate}, hlo)


def _want(module, args) -> list[bytes]:
    result = evaluate(module, [a.copy() for a in args])
    return [_bits(x) for x in (result if isinstance(result, tuple) else (result,))]


def _one_device(data, size: str) -> None:
    module, plain, kinds, handed, text = _module(data, size)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    special = data.draw(st.booleans())
    with _recycling_everything():
        executable = CpuBackend().compile(module, (0,))
        kept = []
        for _ in range(3):
            args = arguments(rng, kinds, special)
            saved = [exact_bits(a) for a in args]
            want = _want(plain, args)
            give = bool(handed) and data.draw(st.booleans())
            passed = [a.copy() if give and i in handed else a for i, a in enumerate(args)]
            outputs = executable.run(0, passed, None, donated=handed if give else ())
            assert [exact_bits(a) for a in args] == saved, f"an argument was written\n{text}"
            assert [_bits(o) for o in outputs] == want, text
            views = [o.reshape(-1)[::2] for o in outputs]  # outlive the results
            kept.append((outputs, want, views, [exact_bits(v) for v in views]))
            del outputs, passed
        for outputs, want, views, seen in kept:  # no later call wrote over an earlier one
            assert [_bits(o) for o in outputs] == want, text
            assert [exact_bits(v) for v in views] == seen, text


@pytest.mark.parametrize("size, examples", [("tiny", 300), ("epilogue", 10), ("large", 3)])
def test_random_programs_equal_the_reference_and_keep_results_and_arguments(size, examples):
    _examples(examples)(given(data=st.data())(_one_device))(size)


@_examples(60)
@given(data=st.data())
def test_random_programs_on_two_devices_stacked_lockstep_and_threaded(data):
    module, plain, kinds, handed, text = _module(data, "tiny", partitions=2)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    special = data.draw(st.booleans())
    with _recycling_everything():
        executable = CpuBackend().compile(module, (0, 1))
        kept = []
        for _ in range(3):
            mode = data.draw(st.sampled_from(["stacked", "lockstep", "threaded"]))
            if not executable.lockstep:
                mode = "threaded"
            args = {d: arguments(rng, kinds, special) for d in (0, 1)}
            saved = {d: [exact_bits(a) for a in args[d]] for d in (0, 1)}
            give = bool(handed) and data.draw(st.booleans())
            passed = {d: [a.copy() if give and i in handed else a for i, a in enumerate(args[d])]
                      for d in (0, 1)}
            donated = {d: handed if give else set() for d in (0, 1)}
            world = LocalWorld(2)
            if mode == "threaded":
                got = dict(enumerate(world.run(
                    lambda comm, passed=passed, donated=donated: executable.run(
                        comm.rank, passed[comm.rank], comm, donated=donated[comm.rank]))))
            else:
                got = executable.run_together(
                    passed, {d: world.communicator(d) for d in (0, 1)},
                    stack=mode == "stacked", donated=donated)
            for d in (0, 1):
                want = _want(plain, args[d])
                assert [_bits(o) for o in got[d]] == want, f"{mode} device {d}\n{text}"
                assert [exact_bits(a) for a in args[d]] == saved[d], text
                kept.append((got[d], want))
        for outputs, want in kept:
            assert [_bits(o) for o in outputs] == want, text
