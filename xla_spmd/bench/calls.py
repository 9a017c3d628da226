"""The host's price of a jitted call, measured for a cost profile.

A training step is a jitted call: before and after the program runs, the frontend flattens
the arguments and finds the traced program, the runtime places each argument on the devices
and wraps each result. That work grows with the number of arrays passed, not with the program,
so `measure_calls` times jitted steps of one shape and two sizes, ``x -> x + 1`` over 1 and
over `MANY` arrays of a few KiB (every other one replicated, the rest split over every
device, as a step's parameters are), subtracts what the cost model predicts for
their programs, and fits the rest as ``call_overhead_s + array_s * arrays`` (arguments and
results). It lives here, above the cost model, because it needs the frontend.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

MANY = 24


def _residual(profile, mesh, count: int, repeats: int) -> float:
    """Fastest measured call over `count` arrays, less the model's price of its program."""
    import xla_spmd as xs
    from xla_spmd.cost import estimate

    # as a step's parameters are: some replicated, some split, of a few KiB
    split = xs.NamedSharding(mesh, xs.P(tuple(mesh.axis_names)))
    shardings = tuple(split if k % 2 else xs.NamedSharding(mesh, xs.P()) for k in range(count))
    arrays = [np.ones((8 * mesh.size, 16), np.float32) for _ in range(count)]
    step = xs.jit(lambda *a: tuple(x + 1 for x in a), in_shardings=shardings,
                  out_shardings=shardings)
    placed = [xs.device_put(a, s) for a, s in zip(arrays, shardings)]
    np.asarray(step(*placed)[0])
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        outputs = step(*placed)
        np.asarray(outputs[0])
        samples.append(time.perf_counter() - start)
    spmd = step.spmd_module(step.lower(*placed))
    return min(samples) - estimate(spmd, profile).step_time


def measure_calls(profile, repeats: int = 7):
    """`profile` with `call_overhead_s` and `array_s` measured on all the job's devices (see
    the module docstring)."""
    import xla_spmd as xs

    mesh = xs.make_mesh({"devices": xs.device_count()})
    bare = dataclasses.replace(profile, call_overhead_s=0.0, array_s=0.0)
    one = _residual(bare, mesh, 1, repeats)
    many = _residual(bare, mesh, MANY, repeats)
    array = max((many - one) / (2 * (MANY - 1)), 0.0)
    return dataclasses.replace(profile, call_overhead_s=max(one - 2 * array, 0.0),
                               array_s=array)
