"""The CPU backend's schedule, priced: what a profile with ``schedule = "plan"`` predicts.

The CPU backend does not run HLO instructions one by one: it fuses elementwise chains into
generated kernels and runs a *plan* of steps (`xla_spmd.backends.cpu.program`): a fusion, a
BLAS or numpy kernel, a collective's start and its wait (the start moved up to just after its
operand, the wait down to just before its first reader), a control-flow op running other
plans. A step's price is its launch (the profile's ``launch_s`` by step kind: the Python
dispatch around the kernel, the same for a fusion of one op or of twenty) plus its roofline:
a fusion reads its inputs and writes its result once, whatever it computes between; a dot
kernel is the larger of FLOPs over GEMM throughput and bytes over memory bandwidth.

How the steps of the devices share the machine follows the backend too, as
`CpuExecutable.execution_mode` says (`execution_mode` here):

* *stacked* (in-process devices, a small program whose collectives are all starts and
  waits of the entry, the default ``cpu_stacked``): one thread launches each step once for
  all D devices over ``(D, *shape)`` values, so a step costs one launch plus the work of
  all D devices; its collectives are index arithmetic over the stacked values (memory
  copies), priced by the profile's alpha-beta line when the profile was calibrated stacked
  too, else as a launch plus the copy of the bytes they move. A step with no stacked form
  (control flow, a fallback, a collective whose groups do not split the devices evenly)
  runs each device's own launch on its slice: D launches. Nothing overlaps.
* *lockstep* (the same, unstacked): one thread runs each step for every device before the
  next: D launches per step, nothing overlaps;
* *threaded* (a larger program: a thread per in-process device) and *ranks* (MPI): a
  collective runs on the communication stream from its start while compute goes on, and its
  wait waits for it; in-process threads still take turns on the GIL for each launch.

A profile calibrated on this backend (`xla-spmd calibrate`) measures every price on all the
job's devices at once, so a price is the world's time for one step; its small programs ran
in the mode the profile records (`Profile.execution`), whose launches per step (1 stacked or
under MPI, D in lockstep or threaded) are the unit of its launch prices: `launch_factor`
rescales them to the mode a program runs in. Rates (bandwidth, FLOP/s) are each device's
share of the world's, so a step's roofline is one device's work at that rate, its cache
test (`Profile.traffic_time`) on the bytes the whole launch moves.
"""

from __future__ import annotations

from xla_spmd.backends.cpu.executable import execution_mode as _backend_mode
from xla_spmd.backends.cpu.executable import plan_module
from xla_spmd.backends.cpu.program import Program, Step
from xla_spmd.cost.profile import VIEW_OPCODES
from xla_spmd.cost.work import array_bytes, flops, memory_traffic
from xla_spmd.ir import Module

# Kernels that return a view of their operand (numpy shares the buffer), or a scalar: no
# traffic.
VIEWS = VIEW_OPCODES | {"partition-id", "replica-id"}
# Kernel opcodes the stacked runtime launches once for all devices (backends/cpu/stacked.py:
# `kernel_launch`); any other kernel runs once per device on its slice.
STACKED_KERNELS = frozenset(("reshape", "bitcast", "transpose", "slice", "get-tuple-element",
                             "tuple", "concatenate", "partition-id", "broadcast", "dot",
                             "reduce", "gather", "scatter", "dynamic-slice",
                             "dynamic-update-slice"))
# Collectives with a stacked form (over groups that split the devices evenly).
STACKED_COLLECTIVES = frozenset(("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                                 "collective-permute"))


def plans(module: Module) -> dict[int, Program]:
    """id(computation) -> its plan, for the entry and every computation control flow runs
    (as `CpuExecutable` makes them; no code is generated)."""
    return plan_module(module)


def execution_mode(module: Module, programs: dict[int, Program], communicator: str,
                   devices: int) -> str:
    """How the CPU backend runs `module` on `devices` devices of `communicator` ("local":
    in-process; else one per MPI rank): "stacked", "lockstep", "threaded" or "ranks"."""
    return _backend_mode(module, devices, communicator == "local", programs)


def launches_per_step(mode: str, devices: int) -> int:
    """Launches of one plan step on the world's clock: once for all devices stacked or on
    their own ranks, once per device where one thread (or the GIL) takes them in turn."""
    return devices if mode in ("lockstep", "threaded") else 1


def launch_factor(profile_mode: str, mode: str, devices: int) -> float:
    """What a launch price measured in `profile_mode` is multiplied by for a program run in
    `mode` on `devices` devices (see the module docstring).

    >>> launch_factor("stacked", "lockstep", 8), launch_factor("lockstep", "stacked", 8)
    (8.0, 0.125)
    """
    return launches_per_step(mode, devices) / launches_per_step(profile_mode, devices)


def launches(step: Step, mode: str, devices: int) -> int:
    """Launches of `step` on the world's clock in `mode`: once per device in lockstep or
    threaded, and stacked where it has no stacked form (`per_device_step`); else once."""
    if mode in ("lockstep", "threaded") or (mode == "stacked" and per_device_step(step)):
        return devices
    return 1


def per_device_step(step: Step) -> bool:
    """Whether the stacked runtime runs `step` once per device on its slice (no stacked
    form): control flow, fallbacks, kernels outside `STACKED_KERNELS`."""
    if step.kind in ("control", "fallback"):
        return True
    return step.kind == "kernel" and step.inst.op.name not in STACKED_KERNELS


def step_work(step: Step) -> tuple[float, float]:
    """(FLOPs, bytes moved) of one step: a fusion reads its inputs and writes its root once
    (a dot's epilogue reads the dot's output where the dot just wrote it, in cache: that
    read is not traffic); any other step is its instruction's."""
    if step.kind == "fusion":
        assert step.fusion is not None  # a fusion step's kernel
        hot = step.epilogue.operand if step.epilogue is not None else None
        inputs = sum(array_bytes(i.shape) for k, i in enumerate(step.fusion.inputs)
                     if k != hot)
        return 0.0, float(inputs + array_bytes(step.inst.shape))
    if step.folded is not None:  # a dot's transpose computed by the dot's kernel
        return flops(step.folded), memory_traffic(step.folded)
    if step.kind in ("constant", "start", "wait", "control") or step.inst.opcode in VIEWS:
        return 0.0, 0.0
    return flops(step.inst), memory_traffic(step.inst)
