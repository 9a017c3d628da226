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


class CallProbe:
    """The two jitted steps of `measure_calls`, compiled once: `sample()` times each once
    (bench calls it between its own rounds, so the probe shares their window), `fit` turns
    the fastest times into the profile's call prices."""

    def __init__(self, mesh):
        import xla_spmd as xs

        self.steps = {}
        for count in (1, MANY):
            # as a step's parameters are: some replicated, some split, of a few KiB
            split = xs.NamedSharding(mesh, xs.P(tuple(mesh.axis_names)))
            shardings = tuple(split if k % 2 else xs.NamedSharding(mesh, xs.P())
                              for k in range(count))
            arrays = [np.ones((8 * mesh.size, 16), np.float32) for _ in range(count)]
            step = xs.jit(lambda *a: tuple(x + 1 for x in a), in_shardings=shardings,
                          out_shardings=shardings)
            placed = [xs.device_put(a, s) for a, s in zip(arrays, shardings)]
            np.asarray(step(*placed)[0])  # compile, warm up
            self.steps[count] = (step, placed, [])

    def sample(self) -> None:
        for step, placed, samples in self.steps.values():
            start = time.perf_counter()
            outputs = step(*placed)
            np.asarray(outputs[0])
            samples.append(time.perf_counter() - start)

    def fit(self, profile):
        """`profile` with `call_overhead_s` and `array_s` from the samples so far."""
        from xla_spmd.cost import estimate

        bare = dataclasses.replace(profile, call_overhead_s=0.0, array_s=0.0)
        residual = {}
        for count, (step, placed, samples) in self.steps.items():
            spmd = step.spmd_module(step.lower(*placed))
            residual[count] = min(samples) - estimate(spmd, bare).step_time
        array = max((residual[MANY] - residual[1]) / (2 * (MANY - 1)), 0.0)
        return dataclasses.replace(profile, call_overhead_s=max(residual[1] - 2 * array, 0.0),
                                   array_s=array)


def measure_calls(profile, repeats: int = 7):
    """`profile` with `call_overhead_s` and `array_s` measured on all the job's devices (see
    the module docstring)."""
    import xla_spmd as xs

    probe = CallProbe(xs.make_mesh({"devices": xs.device_count()},
                                   axis_types=xs.AxisType.Auto))
    for _ in range(repeats):
        probe.sample()
    return probe.fit(profile)
