"""Collective test cases shared by the local tests and the MPI program.

Each case runs one or more collectives on a communicator and is checked against a numpy
reference computed from every device's input (inputs are a pure function of the device
id, so every rank can compute all of them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), np.dtype(bool),
          np.dtype(np.complex64), BF16]
UFUNCS = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
          "and": np.bitwise_and, "or": np.bitwise_or}


def weighted(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A non-commutative reducer: a left fold exposes the reduction order."""
    return a * 2 + b


def data(device: int, dtype: np.dtype, shape: tuple[int, ...], salt: int) -> np.ndarray:
    rng = np.random.default_rng(device * 7919 + salt)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(-4, 5, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def reference_fold(arrays: list[np.ndarray], op: Any) -> np.ndarray:
    reducer = UFUNCS[op] if isinstance(op, str) else op
    dtype = arrays[0].dtype
    compute = np.float32 if dtype == BF16 else dtype
    return np.asarray(functools.reduce(reducer, [a.astype(compute) for a in arrays])
                      ).astype(dtype)


def layouts(world: int) -> dict[str, list[tuple[int, ...]]]:
    """Replica-group layouts over ``world`` ranks; an odd world leaves its last rank alone."""
    half = world // 2
    alone = [(world - 1,)] if world % 2 else []
    return {
        "all": [tuple(range(world))],
        "reversed": [tuple(reversed(range(world)))],
        "pairs": [(i, i + 1) for i in range(0, world - 1, 2)] + alone,
        "strided": [(i, i + half) for i in range(half)] + alone,
    }


def group_of(groups: list[tuple[int, ...]], device: int) -> tuple[int, ...]:
    return next(g for g in groups if device in g)


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[Any], Any]          # comm -> result
    expect: Callable[[int], Any]       # device -> expected result
    exact: bool = True                 # False: MPI may reduce floats in its own order


def _ops_for(dtype: np.dtype) -> list[Any]:
    if dtype.kind == "b":
        return ["sum", "prod", "min", "max", "and", "or"]
    if dtype.kind in "iu":
        return ["sum", "prod", "min", "max", "and", "or", weighted]
    if dtype.kind == "c":
        return ["sum", "prod", weighted]
    return ["sum", "prod", "min", "max", weighted]


def build_cases(world: int) -> list[Case]:
    cases: list[Case] = []
    inputs = {}
    square = (2 * world, 2 * world)  # splits evenly over every group size of every layout

    def inp(device, dtype, shape, salt):
        key = (device, dtype, shape, salt)
        if key not in inputs:
            inputs[key] = data(device, dtype, shape, salt)
        return inputs[key]

    for layout_name, groups in layouts(world).items():
        for dtype in DTYPES:
            tag = f"{layout_name}-{dtype.name}"
            shape = (8, 4)
            for index, op in enumerate(_ops_for(dtype)):
                salt = index + 1
                name = op if isinstance(op, str) else op.__name__

                def run(comm, groups=groups, dtype=dtype, op=op, salt=salt, shape=shape):
                    group = group_of(groups, comm.rank)
                    return comm.all_reduce(inp(comm.rank, dtype, shape, salt), group, op)

                def expect(device, groups=groups, dtype=dtype, op=op, salt=salt, shape=shape):
                    group = group_of(groups, device)
                    return reference_fold([inp(d, dtype, shape, salt) for d in group], op)

                inexact = dtype.kind in "fc" and dtype != BF16 and name in ("sum", "prod")
                cases.append(Case(f"all_reduce-{name}-{tag}", run, expect, not inexact))
                if name in ("sum", "max", "weighted"):
                    for axis in (0, 1):
                        def run_rs(comm, groups=groups, dtype=dtype, op=op, salt=salt,
                                   axis=axis):
                            group = group_of(groups, comm.rank)
                            x = inp(comm.rank, dtype, square, salt)
                            return comm.reduce_scatter(x, group, axis, op)

                        def expect_rs(device, groups=groups, dtype=dtype, op=op, salt=salt,
                                      axis=axis):
                            group = group_of(groups, device)
                            total = reference_fold([inp(d, dtype, square, salt)
                                                    for d in group], op)
                            return np.split(total, len(group), axis)[group.index(device)]

                        cases.append(Case(f"reduce_scatter-{name}-axis{axis}-{tag}", run_rs,
                                          expect_rs, not inexact))

            for axis in (0, 1):
                def run_ag(comm, groups=groups, dtype=dtype, axis=axis):
                    group = group_of(groups, comm.rank)
                    return comm.all_gather(inp(comm.rank, dtype, (2, 3), 11), group, axis)

                def expect_ag(device, groups=groups, dtype=dtype, axis=axis):
                    group = group_of(groups, device)
                    return np.concatenate([inp(d, dtype, (2, 3), 11) for d in group], axis)

                cases.append(Case(f"all_gather-axis{axis}-{tag}", run_ag, expect_ag))

            for split_axis, concat_axis in ((0, 1), (1, 0), (1, 2)):
                def run_a2a(comm, groups=groups, dtype=dtype, s=split_axis, c=concat_axis):
                    group = group_of(groups, comm.rank)
                    return comm.all_to_all(inp(comm.rank, dtype, square + (3,), 12), group, s, c)

                def expect_a2a(device, groups=groups, dtype=dtype, s=split_axis,
                               c=concat_axis):
                    group = group_of(groups, device)
                    k = group.index(device)
                    chunks = [np.split(inp(d, dtype, square + (3,), 12), len(group), s)[k]
                              for d in group]
                    return np.concatenate(chunks, c)

                cases.append(Case(f"all_to_all-{split_axis}{concat_axis}-{tag}", run_a2a,
                                  expect_a2a))

            def run_bc(comm, groups=groups, dtype=dtype):
                group = group_of(groups, comm.rank)
                return comm.broadcast(inp(comm.rank, dtype, (5,), 13), group, group[-1])

            def expect_bc(device, groups=groups, dtype=dtype):
                return inp(group_of(groups, device)[-1], dtype, (5,), 13)

            cases.append(Case(f"broadcast-{tag}", run_bc, expect_bc))

        def run_barrier(comm, groups=groups):
            comm.barrier(group_of(groups, comm.rank))
            return comm.rank

        cases.append(Case(f"barrier-{layout_name}", run_barrier, lambda d: d))

    permutes = {
        "ring": [(i, (i + 1) % world) for i in range(world)],
        "swap01": [(0, 1), (1, 0)],
        "to-last": [(0, world - 1)],
        "self": [(i, i) for i in range(world)],
    }
    for perm_name, pairs in permutes.items():
        for dtype in DTYPES:
            def run_cp(comm, pairs=pairs, dtype=dtype):
                return comm.collective_permute(inp(comm.rank, dtype, (3, 2), 14), pairs)

            def expect_cp(device, pairs=pairs, dtype=dtype):
                source = {t: s for s, t in pairs}.get(device)
                if source is None:
                    return np.zeros((3, 2), dtype)
                return inp(source, dtype, (3, 2), 14)

            cases.append(Case(f"permute-{perm_name}-{dtype.name}", run_cp, expect_cp))

    cases.append(_async_case(world, inp))
    cases.append(_mixed_waits_case(world, inp))
    return cases


def _async_case(world: int, inp) -> Case:
    """Start several collectives on different groups, wait for them in reverse order."""
    pairs = layouts(world)["pairs"]
    everyone = tuple(range(world))
    f32, bf16 = np.dtype(np.float32), BF16

    def run(comm):
        d = comm.rank
        pair = group_of(pairs, d)
        handles = [
            comm.all_reduce_start(inp(d, np.dtype(np.int32), (4,), 21), everyone, "sum"),
            comm.all_gather_start(inp(d, f32, (2,), 22), pair, 0),
            comm.reduce_scatter_start(inp(d, bf16, (world, 2), 23), everyone, 0, "sum"),
            comm.all_to_all_start(inp(d, f32, (world, 2), 24), everyone, 0, 1),
            comm.broadcast_start(inp(d, f32, (3,), 25), pair, pair[0]),
            comm.collective_permute_start(inp(d, f32, (2,), 26),
                                          [(i, (i + 1) % world) for i in range(world)]),
            comm.barrier_start(everyone),
        ]
        return [h.wait() for h in reversed(handles)][::-1]

    def expect(d):
        pair = group_of(pairs, d)
        i32 = np.dtype(np.int32)
        return [
            reference_fold([inp(e, i32, (4,), 21) for e in everyone], "sum"),
            np.concatenate([inp(e, f32, (2,), 22) for e in pair]),
            reference_fold([inp(e, bf16, (world, 2), 23) for e in everyone], "sum")[d:d + 1],
            np.concatenate([inp(e, f32, (world, 2), 24)[d:d + 1] for e in everyone], 1),
            inp(pair[0], f32, (3,), 25),
            inp((d - 1) % world, f32, (2,), 26),
            None,
        ]

    return Case("async-mixed", run, expect)


def _mixed_waits_case(world: int, inp) -> Case:
    """Even devices make blocking calls; odd ones start two collectives and wait later. Under
    MPI the members must still move the payloads alike (blocking MPI calls only when every
    member waits at once); buffers are large enough to have payload stages."""
    everyone = tuple(range(world))
    f32 = np.dtype(np.float32)
    reduced, gathered = (world * 4096,), (world, 1024)

    def run(comm):
        d = comm.rank
        a, b = inp(d, f32, reduced, 31), inp(d, f32, gathered, 32)
        if d % 2 == 0:
            return [comm.all_reduce(a, everyone, "sum"), comm.all_gather(b, everyone, 1)]
        first = comm.all_reduce_start(a, everyone, "sum")
        second = comm.all_gather_start(b, everyone, 1)
        return [first.wait(), second.wait()]

    def expect(d):
        return [reference_fold([inp(e, f32, reduced, 31) for e in everyone], "sum"),
                np.concatenate([inp(e, f32, gathered, 32) for e in everyone], 1)]

    return Case("mixed-waits", run, expect)


def mismatch(result: Any, expected: Any, exact: bool) -> str | None:
    """None if ``result`` matches ``expected``, else a description."""
    if isinstance(expected, list):
        for index, (r, e) in enumerate(zip(result, expected, strict=True)):
            problem = mismatch(r, e, exact)
            if problem:
                return f"item {index}: {problem}"
        return None
    if expected is None or isinstance(expected, int):
        return None if result == expected else f"got {result!r}, expected {expected!r}"
    result = np.asarray(result)
    if result.shape != expected.shape or result.dtype != expected.dtype:
        return (f"got {result.dtype}{list(result.shape)}, "
                f"expected {expected.dtype}{list(expected.shape)}")
    if exact:
        same = np.array_equal(result.view(np.uint8) if result.dtype == BF16 else result,
                              expected.view(np.uint8) if expected.dtype == BF16 else expected)
    else:
        same = np.allclose(result, expected, rtol=1e-5, atol=1e-6)
    return None if same else f"values differ:\n{result}\nexpected\n{expected}"
