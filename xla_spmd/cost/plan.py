"""The CPU backend's schedule, priced: what a profile with ``schedule = "plan"`` predicts.

The CPU backend does not run HLO instructions one by one: it fuses elementwise chains into
generated kernels and runs a *plan* of steps (`xla_spmd.backends.cpu.program`): a fusion, a
BLAS or numpy kernel, a collective's start and its wait (the start moved up to just after its
operand, the wait down to just before its first reader), a control-flow op running other
plans. A step's price is its launch (the profile's ``launch_s`` by step kind: the Python
dispatch around the kernel, the same for a fusion of one op or of twenty) plus its roofline:
a fusion reads its inputs and writes its result once, whatever it computes between; a dot
kernel is the larger of FLOPs over GEMM throughput and bytes over memory bandwidth.

How the steps of the devices share the machine follows the backend too:

* *lockstep* (in-process devices, a small program whose collectives are all starts and
  waits of the entry: ``CpuExecutable.lockstep``): one thread runs each step for every
  device before the next, so nothing overlaps: a collective's time adds to the step's;
* otherwise (a thread or an MPI rank per device) a collective runs on the communication
  stream from its start while compute goes on, and its wait waits for it.

A profile calibrated on this backend (`xla-spmd calibrate`) measures every price in the same
mode, on all the job's devices at once, so a price is the world's time for one step.
"""

from __future__ import annotations

from xla_spmd.backends.cpu.executable import (
    LOCKSTEP_MAX_BYTES,
    _communicates_only_at_starts,
    _control_computations,
)
from xla_spmd.backends.cpu.program import Program, Step, plan
from xla_spmd.cost.profile import VIEW_OPCODES
from xla_spmd.ir import Module

# Kernels that return a view of their operand (numpy shares the buffer), or a scalar: no
# traffic.
VIEWS = VIEW_OPCODES | {"partition-id", "replica-id"}


def plans(module: Module) -> dict[int, Program]:
    """id(computation) -> its plan, for the entry and every computation control flow runs
    (as `CpuExecutable` makes them; no code is generated)."""
    computations = _control_computations(module)
    called = {id(c) for c in computations}
    return {id(c): plan(c, called, f"c{k}_") for k, c in enumerate(computations)}


def runs_in_lockstep(module: Module, programs: dict[int, Program], communicator: str) -> bool:
    """Whether the in-process runtime runs `module` on one thread, step by step for every
    device (`CpuExecutable.lockstep`)."""
    entry = programs[id(module.entry)]
    return (communicator == "local" and entry.peak_bytes <= LOCKSTEP_MAX_BYTES
            and _communicates_only_at_starts(programs.values(), entry))


def step_work(step: Step) -> tuple[float, float]:
    """(FLOPs, bytes moved) of one step: a fusion reads its inputs and writes its root once;
    any other step is its instruction's."""
    from xla_spmd.cost.model import _array_bytes, flops, memory_traffic

    if step.kind == "fusion":
        assert step.fusion is not None  # a fusion step's kernel
        inputs = sum(_array_bytes(i.shape) for i in step.fusion.inputs)
        return 0.0, float(inputs + _array_bytes(step.inst.shape))
    if step.kind in ("constant", "start", "wait", "control") or step.inst.opcode in VIEWS:
        return 0.0, 0.0
    return flops(step.inst), memory_traffic(step.inst)
