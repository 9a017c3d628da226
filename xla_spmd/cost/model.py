"""Where one device's time and memory go in a partitioned (SPMD) program.

`estimate(spmd_module, profile)` prices every instruction of the entry computation for one
device (all devices run the same program, so one device stands for all):

* compute: a roofline, the larger of FLOPs over GEMM throughput (contractions) and bytes
  read and written over memory bandwidth, plus the profile's per-instruction overhead;
* collectives: ``alpha + beta * bytes_per_device`` for the kind and group size;
* control flow: a ``while`` costs its body and condition times the known trip count (once
  when unknown), a ``call`` its callee, a ``conditional`` its costliest branch.

The schedule is the program order, on two streams: compute, and communication. A
synchronous collective waits for both streams and holds both; an asynchronous pair
(``all-gather-start`` ... ``all-gather-done``) runs on the communication stream while
compute goes on, and the ``-done`` waits for it. The step time is when both streams end,
plus the profile's fixed step overhead and the host's price of the jitted call
(``call_overhead_s + array_s * (arguments + results)``).

A profile with ``schedule = "plan"`` (calibrated on the CPU backend) prices the backend's own
plan instead: a launch per fused step, not per instruction, once for all devices where the
backend runs them stacked, once per device in lockstep, serial in both (see
`xla_spmd.cost.plan`).

Peak memory comes from a liveness pass over the same order: a value is allocated when
defined and freed after its last use; parameters (owned by the caller) and results live
throughout; tuples, get-tuple-element and bitcasts alias what they hold.

>>> from xla_spmd.ir import parse_hlo
>>> m = parse_hlo('''HloModule m, num_partitions=2
... add { a = f32[] parameter(0)
...   b = f32[] parameter(1)
...   ROOT s = f32[] add(a, b) }
... ENTRY e { x = f32[64,64] parameter(0)
...   d = f32[64,64] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
...   ROOT r = f32[64,64] all-reduce(d), channel_id=1, replica_groups={{0,1}},
...     use_global_device_ids=true, to_apply=add }''')
>>> from xla_spmd.cost.profile import DEFAULT_PROFILE   # every instruction priced
>>> report = estimate(m, DEFAULT_PROFILE)
>>> [(op.name, op.kind, op.flops) for op in report.ops]
[('x', 'free', 0.0), ('d', 'compute', 524288.0), ('r', 'collective', 0.0)]
>>> report.peak_memory
49152
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from xla_spmd.cost.plan import (
    execution_mode,
    launch_factor,
    launches,
    launches_per_step,
    plans,
    step_work,
)
from xla_spmd.cost.profile import Profile, load_profile
from xla_spmd.cost.work import array_bytes, flops, memory_traffic
from xla_spmd.ir import Computation, Instruction, Module
from xla_spmd.ir.ops import Family
from xla_spmd.partition.report import collective_table

# Instructions that compute nothing: they name or alias values already there.
FREE = frozenset(("parameter", "tuple", "get-tuple-element", "bitcast", "opt-barrier",
                  "after-all", "partition-id", "replica-id"))
ALIASING = frozenset(("tuple", "get-tuple-element", "bitcast", "opt-barrier"))
_TRIP = re.compile(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"(\d+)"')


@dataclass
class OpCost:
    """One instruction of the schedule, priced."""

    name: str
    opcode: str
    kind: str                 # "compute", "collective", "free"
    start: float              # seconds since the step began
    time: float
    flops: float = 0.0
    bytes: float = 0.0        # memory traffic (compute) or bytes per device (collective)
    group_size: int = 0
    source: str = ""          # the user's file:line, from the op's metadata
    stream: str = "compute"   # "compute" or "comm"
    cause: str = ""           # a collective: the op that forced it (see `attribute`)


@dataclass
class CostReport:
    """The priced schedule of one device."""

    profile: Profile
    ops: list[OpCost]
    step_time: float
    peak_memory: int
    memory_timeline: list[int] = field(default_factory=list)   # live bytes after each op

    @property
    def compute_time(self) -> float:
        return sum(op.time for op in self.ops if op.kind == "compute")

    @property
    def collective_time(self) -> float:
        return sum(op.time for op in self.ops if op.kind == "collective")

    @property
    def collective_bytes(self) -> float:
        return sum(op.bytes for op in self.ops if op.kind == "collective")

    def dominant_collective(self) -> str:
        """The collective kind that takes the most time ("-" when there is none)."""
        by_kind: dict[str, float] = {}
        for op in self.ops:
            if op.kind == "collective":
                base = op.opcode.removesuffix("-start")
                by_kind[base] = by_kind.get(base, 0.0) + op.time
        return max(by_kind, key=lambda kind: by_kind[kind]) if by_kind else "-"


def source_of(inst: Instruction) -> str:
    """``file:line`` of the user's code that made `inst` (its metadata), or ""."""
    for key, value in inst.extras:
        if key == "metadata":
            file = re.search(r'source_file="([^"]*)"', value)
            line = re.search(r"source_line=(\d+)", value)
            if file and line:
                return f"{file.group(1)}:{line.group(1)}"
    return ""


def attribute(computation: Computation) -> dict[str, Instruction]:
    """Collective name -> the user's op that forced it. A reduction (all-reduce,
    reduce-scatter) finishes the partial sums of the op before it; any other collective
    reshards a value for the op after it. The nearest instruction with a source location in
    that direction wins (the other direction when there is none)."""
    users = computation.users()

    def nearest(start: Instruction, forward: bool) -> Instruction | None:
        frontier, seen = [start], {start}
        while frontier:
            following = []
            for inst in frontier:
                for nxt in (users.get(inst, ()) if forward else inst.operands):
                    if nxt in seen:
                        continue
                    seen.add(nxt)
                    if source_of(nxt) and _base_kind(nxt) is None:
                        return nxt
                    following.append(nxt)
            frontier = following
        return None

    causes = {}
    for inst in computation.instructions:
        kind = _base_kind(inst)
        if kind is None:
            continue
        forward = kind not in ("all-reduce", "reduce-scatter")
        cause = nearest(inst, forward) or nearest(inst, not forward)
        if cause is not None:
            causes[inst.name] = cause
    return causes


def _base_kind(inst: Instruction) -> str | None:
    name = inst.opcode.removesuffix("-start").removesuffix("-done")
    return name if inst.op.family in (Family.COLLECTIVE, Family.ASYNC) and name in (
        "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
        "collective-broadcast") else None


def trip_count(inst: Instruction) -> int:
    for key, value in inst.extras:
        if key == "backend_config":
            match = _TRIP.search(value)
            if match:
                return int(match.group(1))
    return 1


class _Pricer:
    """Prices instructions; called computations are priced once each."""

    def __init__(self, module: Module, profile: Profile):
        self.profile = profile
        self.rows = {row["name"]: row for row in collective_table(module)}
        self._callee: dict[int, float] = {}

    def callee_time(self, computation: Computation) -> float:
        key = id(computation)
        if key not in self._callee:
            self._callee[key] = sum(self.price(i)[1] for i in computation.instructions)
        return self._callee[key]

    def price(self, inst: Instruction) -> tuple[str, float, float, float, int]:
        """(kind, seconds, flops, bytes, group size) of one instruction."""
        p = self.profile
        row = self.rows.get(inst.name)
        if row is not None:
            arrays = len(inst.operands) if row["kind"] != "all-to-all" else 1
            seconds = p.collective_time(row["kind"], row["group_size"], row["bytes"],
                                        max(arrays, 1))
            return "collective", seconds, 0.0, row["bytes"], row["group_size"]
        if inst.opcode in FREE or inst.op.family is Family.ASYNC:
            return "free", 0.0, 0.0, 0.0, 0
        if inst.opcode == "while":
            body = sum(self.callee_time(c) for c in inst.called_computations())
            return "compute", body * trip_count(inst), 0.0, 0.0, 0
        if inst.opcode in ("call", "fusion", "async-start"):
            return "compute", sum(self.callee_time(c) for c in inst.called_computations()), \
                0.0, 0.0, 0
        if inst.opcode == "conditional":
            branches = [self.callee_time(c) for c in inst.called_computations()]
            return "compute", p.op_overhead_s + max(branches, default=0.0), 0.0, 0.0, 0
        work, traffic = flops(inst), memory_traffic(inst)
        gemm = inst.op.family is Family.CONTRACTION
        return ("compute", p.compute_time(work, traffic, gemm=gemm, opcode=inst.opcode), work,
                traffic, 0)


def _schedule(computation: Computation, pricer: _Pricer) -> tuple[list[OpCost], float]:
    """Program order on a compute and a communication stream (see the module docstring)."""
    compute_free = comm_free = 0.0
    pending: dict[str, float] = {}     # an async start's name -> when its transfer ends
    ops = []
    causes = attribute(computation)
    for inst in computation.instructions:
        kind, seconds, work, traffic, group = pricer.price(inst)
        cause = causes.get(inst.name)
        source = source_of(cause if cause is not None else inst)
        cause_name = f"{cause.name} ({cause.opcode})" if cause is not None else ""
        if kind == "collective" and inst.opcode.endswith("-start"):
            start = max(compute_free, comm_free)
            comm_free = start + seconds
            pending[inst.name] = comm_free
            ops.append(OpCost(inst.name, inst.opcode, kind, start, seconds, work, traffic,
                              group, source, "comm", cause_name))
            continue
        if inst.opcode.endswith("-done") and inst.operands:
            compute_free = max(compute_free, pending.pop(inst.operands[0].name, 0.0))
        if kind == "collective":
            start = max(compute_free, comm_free)
            compute_free = comm_free = start + seconds
            ops.append(OpCost(inst.name, inst.opcode, kind, start, seconds, work, traffic,
                              group, source, "comm", cause_name))
            continue
        ops.append(OpCost(inst.name, inst.opcode, kind, compute_free, seconds, work,
                          traffic, group, source))
        compute_free += seconds
    return ops, max(compute_free, comm_free)


class _PlanPricer:
    """Prices the CPU backend's plan steps in the mode the backend runs them (see
    `xla_spmd.cost.plan`)."""

    def __init__(self, module: Module, pricer: _Pricer):
        self.pricer = pricer
        self.programs = plans(module)
        profile = pricer.profile
        self.devices = max(module.num_partitions * module.num_replicas, 1)
        self.mode = execution_mode(module, self.programs, profile.communicator, self.devices)
        # called plans run inside a control step: each device its own, in turn in-process
        self.body_mode = "ranks" if self.mode == "ranks" else "lockstep"
        self._time: dict[int, float] = {}

    def launch(self, step, mode: str, opcode: str, inputs: int) -> float:
        """One step's launch price on the world's clock in `mode`: the profile's price,
        measured in its own mode, times the launches of each (`plan.launches`); a price
        that is not the opcode's own was measured on steps with a stacked form."""
        p, devices = self.pricer.profile, self.devices
        calibrated = p.calibrated_mode
        unit = (launches(step, calibrated, devices) if p.own_launch(step.kind, opcode)
                else launches_per_step(calibrated, devices))
        return p.launch(step.kind, opcode, inputs) * launches(step, mode, devices) / unit

    def collective(self, step, mode: str) -> tuple[str, float, float, float, int]:
        """A collective's start: the profile's alpha-beta line, but run stacked with a
        profile not calibrated so, a launch plus a copy of the bytes it moves."""
        kind, seconds, work, moved, group = self.pricer.price(step.inst)
        p = self.pricer.profile
        if mode == "stacked" and p.calibrated_mode != "stacked" and kind == "collective":
            copy = 2.0 * moved   # read, then written where the members' results go
            launch = p.launch("kernel", "copy") * launch_factor(p.calibrated_mode, mode,
                                                                self.devices)
            seconds = launch + p.traffic_time(copy, copy * self.devices) if group > 1 else 0.0
        return kind, seconds, work, moved, group

    def step(self, step, mode: str | None = None) -> tuple[str, float, float, float, int]:
        """(kind, seconds, flops, bytes, group size) of one step in `mode` (the program's by
        default); a start is priced as its collective (the start and wait launches are
        inside the collective's alpha)."""
        mode = mode or self.mode
        p = self.pricer.profile
        if step.kind in ("start", "wait"):
            if step.kind == "wait":
                return "free", 0.0, 0.0, 0.0, 0
            return self.collective(step, mode)
        if step.kind == "control":
            inst = step.inst
            times = [self.program_time(self.programs[id(c)])
                     for c in inst.called_computations() if id(c) in self.programs]
            if inst.opcode == "while":
                seconds = sum(times) * trip_count(inst)
            elif inst.opcode == "conditional":
                seconds = max(times, default=0.0)
            else:
                seconds = sum(times)
            return "compute", self.launch(step, mode, "", 0) + seconds, 0.0, 0.0, 0
        if step.kind == "constant":
            return "free", 0.0, 0.0, 0.0, 0
        work, traffic = step_work(step)
        inst = step.folded if step.folded is not None else step.inst  # a dot's transpose
        gemm = step.kind == "kernel" and inst.op.family is Family.CONTRACTION
        # a stacked launch moves every device's bytes at once (its cache test)
        together = self.devices if mode == "stacked" else 1
        roofline = max(p.gemm_time(work) if gemm else 0.0,
                       p.traffic_time(traffic, traffic * together))
        opcode = inst.opcode
        if opcode == "dot" and inst.attrs.lhs_batch_dims:
            opcode = "dot.batched"
        inputs = len(step.fusion.inputs) if step.kind == "fusion" else 2
        return "compute", self.launch(step, mode, opcode, inputs) + roofline, work, traffic, 0

    def program_time(self, program) -> float:
        """Seconds of a called plan, its steps one after another (each device's in turn)."""
        key = id(program.computation)
        if key not in self._time:
            self._time[key] = sum(self.step(s, self.body_mode)[1] for s in program.steps)
        return self._time[key]


def _plan_schedule(module: Module, pricer: _Pricer) -> tuple[list[OpCost], float]:
    """The entry plan's steps in order: serial when stacked or in lockstep, else compute
    and communication on two streams as in `_schedule` (see `xla_spmd.cost.plan`)."""
    steps = _PlanPricer(module, pricer)
    program = steps.programs[id(module.entry)]
    serial = steps.mode in ("stacked", "lockstep")
    causes = attribute(module.entry)
    compute_free = comm_free = 0.0
    pending: dict[str, float] = {}
    ops = []
    for step in program.steps:
        inst = step.inst
        kind, seconds, work, traffic, group = steps.step(step)
        cause = causes.get(inst.name)
        source = source_of(cause if cause is not None else inst)
        cause_name = f"{cause.name} ({cause.opcode})" if cause is not None else ""
        if step.kind == "wait":
            compute_free = max(compute_free, pending.pop(inst.name, 0.0))
            continue
        if kind == "collective":
            start = max(compute_free, comm_free) if not serial else compute_free
            comm_free = start + seconds
            if serial:
                compute_free = comm_free
            else:
                pending[inst.name] = comm_free
            ops.append(OpCost(inst.name, inst.opcode, kind, start, seconds, work, traffic,
                              group, source, "comm", cause_name))
            continue
        opcode = f"fusion ({inst.opcode})" if step.kind == "fusion" else inst.opcode
        ops.append(OpCost(inst.name, opcode, kind, compute_free, seconds, work, traffic,
                          group, source))
        compute_free += seconds
    return ops, max(compute_free, comm_free)


def live_bytes(computation: Computation, transient=None) -> list[int]:
    """Bytes live on one device after each instruction of `computation` (see the module
    docstring); `transient(inst)` adds a called computation's own peak at its caller."""
    instructions = computation.instructions
    last_use = {inst: i for i, inst in enumerate(instructions)}
    for i, inst in enumerate(instructions):
        for operand in inst.operands:
            last_use[operand] = max(last_use[operand], i)
    end = len(instructions)
    for inst in computation.parameters:
        last_use[inst] = end
    last_use[computation.root] = end
    # An alias (tuple, get-tuple-element) keeps what it holds alive as long as itself;
    # aliases follow what they hold, so one reverse sweep carries every extension back.
    for inst in reversed(instructions):
        if inst.opcode in ALIASING:
            for operand in inst.operands:
                last_use[operand] = max(last_use[operand], last_use[inst])
    release: dict[int, int] = {}
    for inst in instructions:
        if inst.opcode not in ALIASING and last_use[inst] < end:
            release[last_use[inst]] = release.get(last_use[inst], 0) + array_bytes(inst.shape)
    live = 0
    timeline = []
    for i, inst in enumerate(instructions):
        if inst.opcode not in ALIASING:
            live += array_bytes(inst.shape)
        timeline.append(live + (transient(inst) if transient else 0))
        live -= release.get(i, 0)
    return timeline


def estimate(module: Module, profile: Profile | None = None) -> CostReport:
    """Price `module` (a partitioned program) for one device: see the module docstring."""
    profile = profile or load_profile()
    pricer = _Pricer(module, profile)
    if profile.schedule == "plan":
        ops, end = _plan_schedule(module, pricer)
    else:
        ops, end = _schedule(module.entry, pricer)
    peaks: dict[int, int] = {}

    def transient(inst: Instruction) -> int:
        called = inst.called_computations()
        if not called or inst.opcode not in ("while", "call", "conditional", "fusion"):
            return 0
        result = 0
        for c in called:
            if id(c) not in peaks:
                inner = live_bytes(c, transient)
                params = sum(array_bytes(p.shape) for p in c.parameters)
                peaks[id(c)] = max(0, max(inner, default=0) - params)
            result = max(result, peaks[id(c)])
        return result

    timeline = live_bytes(module.entry, transient)
    arrays = len(module.entry.parameters) + len(module.entry.root.shape.leaves())
    return CostReport(profile, ops, end + profile.step_overhead_s + profile.call_time(arrays),
                      max(timeline, default=0), timeline)


def totals(module: Module) -> dict[str, float]:
    """``{"flops": ..., "bytes accessed": ...}`` of one device running `module` (the keys
    of XLA's cost analysis): a call counts its callee, a ``while`` its body and condition
    times the known trip count (once when unknown), a ``conditional`` its costliest branch.

    >>> from xla_spmd.ir import parse_hlo
    >>> totals(parse_hlo('''HloModule m
    ... ENTRY e { x = f32[4,8] parameter(0)
    ...   ROOT d = f32[4,4] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={1} }'''))
    {'flops': 256.0, 'bytes accessed': 320.0}
    """
    memo: dict[int, tuple[float, float]] = {}

    def of(computation: Computation) -> tuple[float, float]:
        if id(computation) in memo:
            return memo[id(computation)]
        work = traffic = 0.0
        for inst in computation.instructions:
            if inst.opcode in FREE or inst.op.family is Family.ASYNC:
                continue
            inner = [of(c) for c in inst.called_computations()]
            if inst.opcode == "while":
                times = trip_count(inst)
                work += times * sum(w for w, _ in inner)
                traffic += times * sum(t for _, t in inner)
            elif inst.opcode == "conditional":
                w, t = max(inner, default=(0.0, 0.0))
                work, traffic = work + w, traffic + t
            elif inst.opcode in ("call", "fusion"):
                work += sum(w for w, _ in inner)
                traffic += sum(t for _, t in inner)
            else:
                work += flops(inst)
                traffic += memory_traffic(inst)
        memo[id(computation)] = (work, traffic)
        return work, traffic

    work, traffic = of(module.entry)
    return {"flops": work, "bytes accessed": traffic}


@dataclass(frozen=True)
class MemoryStats:
    """Per-device memory of a compiled program, named as JAX's ``CompiledMemoryStats``."""

    argument_size_in_bytes: int
    output_size_in_bytes: int
    temp_size_in_bytes: int
    alias_size_in_bytes: int
    peak_memory_in_bytes: int
    generated_code_size_in_bytes: int = 0


def memory_stats(module: Module) -> MemoryStats:
    """Argument, output, temporary and peak bytes of one device running `module` (the peak
    from the liveness pass of `estimate`; temporaries are what the peak holds beyond the
    arguments and results)."""
    arguments = sum(array_bytes(p.shape) for p in module.entry.parameters)
    outputs = array_bytes(module.entry.root.shape)
    peak = estimate(module).peak_memory
    return MemoryStats(arguments, outputs, max(0, peak - arguments - outputs), 0, peak)
