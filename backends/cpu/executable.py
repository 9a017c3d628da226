"""The CPU backend: per-device programs fused, compiled to machine code with llvmlite, and
run with BLAS for contractions, numpy for data movement and the reference rule for anything
else (each such fallback counted and shown by ``report()`` and ``as_text()``).

``compile`` plans the entry computation and every computation control flow calls
(``program.plan``), renders every fusion into one LLVM module (``emitter``), and compiles it
through the cache (``compiler``). ``run`` walks a plan on the calling thread: generated
kernels are called through ctypes, which releases the GIL, so in-process devices compute in
parallel.

>>> import numpy as np
>>> from xla_spmd.backends import get_backend
>>> from xla_spmd.ir.hlo_parser import parse_hlo
>>> module = parse_hlo('''HloModule m
... ENTRY %e (x: f32[3]) -> f32[3] {
...   %x = f32[3] parameter(0)
...   %y = f32[3] multiply(%x, %x)
...   ROOT %z = f32[3] add(%y, %x)
... }''')
>>> executable = get_backend("cpu").compile(module, devices=(0,))
>>> executable.run(0, [np.arange(3, dtype=np.float32)], communicator=None)
[array([0., 2., 6.], dtype=float32)]
>>> executable.report()["fallbacks"]
{}
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

import xla_spmd.config as config
from xla_spmd.backends.cpu import compiler, epilogue, kernels, launch, stacked
from xla_spmd.backends.cpu.emitter import range_name, render_module, stacked_entry_name
from xla_spmd.backends.cpu.program import (
    CONTROL,
    OUTPUTS,
    Program,
    Step,
    plan,
    run_fusion,
)
from xla_spmd.backends.reference.control import while_rule
from xla_spmd.backends.reference.evaluator import (
    EVALUATE,
    Context,
    _describe,
    evaluate_computation,
    leaves,
)
from xla_spmd.backends.reference.executable import device_arguments
from xla_spmd.errors import EvaluationError, XlaSpmdError
from xla_spmd.ir import Computation, Family, Module
from xla_spmd.ir.batch_norm import inline_batch_norm
from xla_spmd.ir.hlo_printer import print_module

_ERRORS = (XlaSpmdError, ValueError, TypeError, IndexError, ArithmeticError)


class _Done:
    """The handle of a collective that ran at once (one device: no communicator)."""

    def __init__(self, value):
        self.value = value

    def wait(self):
        return self.value


class _CpuContext(Context):
    """The reference rules' context, whose called computations run through the CPU plans
    where one exists (reducer bodies and the like go to the reference evaluator)."""

    def __init__(self, executable: CpuExecutable, **fields):
        super().__init__(**fields)
        self.executable = executable

    def count_fallback(self, name: str) -> None:
        """Count one run of the reference rule of ``name`` by a kernel that falls back for
        these values (a sort whose keys hold NaN)."""
        with self.executable._lock:
            self.executable.fallback_runs[name] += 1

    def call(self, computation: Computation, args: Sequence) -> object:
        program = self.executable.programs.get(id(computation))
        if program is None:
            return evaluate_computation(computation, args, self)
        return self.executable.execute(program, list(args), self)


def _control_computations(module: Module) -> list[Computation]:
    """The entry and every computation reached from it through control flow."""
    found: dict[int, Computation] = {}
    pending = [module.entry]
    while pending:
        computation = pending.pop()
        if id(computation) in found:
            continue
        found[id(computation)] = computation
        for inst in computation.instructions:
            if inst.op.name in CONTROL:
                pending.extend(inst.called_computations())
    return list(found.values())


LOCKSTEP_MAX_BYTES = 4 << 20
"""The largest peak bytes per device of a program run in lockstep on one thread: above it
the kernels' time dominates, and one thread per device runs them on every core."""


def _located(program: Program, index: int, error: Exception) -> Exception:
    """``error`` raised at step ``index`` of ``program``, with the failing instruction
    printed around it (once: an error located in a called plan passes through)."""
    if getattr(error, "located", False):
        return error
    located = EvaluationError(_describe(program.computation, program.steps[index].inst, error))
    located.located = True
    return located


def _communicates_only_at_starts(programs, entry: Program) -> bool:
    """Whether every collective of every plan is a start/wait pair of the ``entry`` plan."""
    for program in programs:
        for step in program.steps:
            communicates = step.inst.op.family in (Family.COLLECTIVE, Family.ASYNC)
            if communicates and not (program is entry and step.kind in ("start", "wait")):
                return False
    return True


def plan_module(module: Module, libm: bool = False) -> dict[int, Program]:
    """``id(computation) -> its plan`` for the entry and every computation control flow
    runs, as ``CpuExecutable`` makes them (no code is generated: what a cost model prices).

    >>> from xla_spmd.ir.hlo_parser import parse_hlo
    >>> m = parse_hlo('HloModule m\\nENTRY e { x = f32[4] parameter(0)\\n'
    ...               '  ROOT y = f32[4] negate(x) }')
    >>> [step.kind for step in plan_module(m)[id(m.entry)].steps]
    ['fusion']
    """
    computations = _control_computations(module)
    called = {id(c) for c in computations}
    donated = frozenset(module.input_output_aliases)
    return {id(c): plan(c, called, f"c{k}_", libm, windows=True, fold_transposes=True,
                        inplace=True, donated=donated if c is module.entry else frozenset())
            for k, c in enumerate(computations)}


def written_parameters(program: Program) -> frozenset[int]:
    """The numbers of the parameters a fusion of ``program`` writes its output over (donated
    ones: see ``program._assign_inplace``)."""
    slots = {slot: number for number, slot in enumerate(program.parameter_slots)}
    return frozenset(slots[step.reads[step.fused.inplace]] for step in program.steps
                     if step.kind == "fusion" and step.fused.inplace is not None
                     and step.reads[step.fused.inplace] in slots)


def _take_over(arguments: list, written: frozenset[int], donated: Collection[int]) -> None:
    """Make ``arguments`` safe to write over where the plan writes over parameters
    (``written``): a donated argument that is a writable C-contiguous array owning its memory
    (or the sole view of a recycled buffer: an earlier large result) and sharing it with no
    other argument is written over (the caller handed it over; it
    checks that no other device's argument shares it); any other is first copied (into a
    recycled buffer), and the copy is written over."""
    for number in written:
        x = arguments[number]
        if not (number in donated and type(x) is np.ndarray
                and (x.base is None or OUTPUTS.sole_view(x))
                and x.flags.writeable and x.flags.c_contiguous and not any(
                    np.may_share_memory(x, leaf) for k, other in enumerate(arguments)
                    if k != number for leaf in leaves(other)  # in tuples too
                    if isinstance(leaf, np.ndarray))):
            copy = OUTPUTS.take(np.shape(x), np.dtype(x.dtype))
            np.copyto(copy, x)
            arguments[number] = copy


EXECUTION_MODES = ("stacked", "lockstep", "threaded", "ranks")
"""How the CPU backend runs a program on its devices (``execution_mode``):

* ``stacked``: in-process devices on the calling thread, each step launched once for all of
  them over ``(D, *shape)`` values (``run_together``, ``backends/cpu/stacked.py``);
* ``lockstep``: in-process devices on the calling thread, each step launched once per
  device before the next step (``run_together`` unstacked; also one device);
* ``threaded``: a thread per in-process device, each walking its plan (a large program, or
  one whose collectives are not all start/wait steps of the entry);
* ``ranks``: a process per device under MPI, each walking its plan."""


def execution_mode(module: Module, devices: int, in_process: bool = True,
                   programs: Mapping[int, Program] | None = None,
                   stack: bool | None = None) -> str:
    """Which of ``EXECUTION_MODES`` runs ``module`` on ``devices`` devices, in-process or
    (``in_process=False``) one per MPI rank; ``programs`` are its plans (``plan_module``,
    made when not given), ``stack`` overrides ``xs.config.cpu_stacked``.

    >>> from xla_spmd.ir.hlo_parser import parse_hlo
    >>> m = parse_hlo('HloModule m, num_partitions=2\\nENTRY e { x = f32[4] parameter(0)\\n'
    ...               '  ROOT y = f32[4] negate(x) }')
    >>> [execution_mode(m, 2), execution_mode(m, 2, stack=False), execution_mode(m, 1),
    ...  execution_mode(m, 2, in_process=False)]
    ['stacked', 'lockstep', 'lockstep', 'ranks']
    """
    if not in_process:
        return "ranks"
    programs = programs if programs is not None else plan_module(module)
    entry = programs[id(module.entry)]
    if not _runs_in_lockstep(programs, entry):
        return "threaded"
    if stack is None:
        stack = config.cpu_stacked
    stacks = stack and devices > 1 and _DATA_OFFSET is not None and stacked.stackable(entry)
    return "stacked" if stacks else "lockstep"


def _runs_in_lockstep(programs: Mapping[int, Program], entry: Program) -> bool:
    return (entry.peak_bytes <= LOCKSTEP_MAX_BYTES
            and _communicates_only_at_starts(programs.values(), entry))


def _awaited_control(entry: Program) -> frozenset[int]:
    """The indices of the ``entry`` plan's control steps (loops, calls, branches) that some
    collective waits for afterwards: run in lockstep, every device's loop runs on one thread,
    so a device whose loop does not end keeps the others from the collective they would wait
    at, and must be named at the collective timeout (``run_together``)."""
    last_wait = max((k for k, step in enumerate(entry.steps) if step.kind == "wait"),
                    default=-1)
    return frozenset(k for k, step in enumerate(entry.steps[:last_wait])
                     if step.kind == "control")


def _loop_timeout(devices: int) -> float | None:
    """How long a loop of one of ``devices`` devices running in lockstep may run before the
    others, waiting for it at their next collective, would time out: the collective timeout
    (None for one device, or with no timeout)."""
    if devices < 2:
        return None
    timeout = config.value("collective_timeout")
    return None if math.isinf(timeout) else timeout


def _limit_loops(contexts: Sequence[_CpuContext], timeout: float | None) -> None:
    for ctx in contexts:
        ctx.loop_timeout = timeout


_DATA_OFFSET = compiler.array_data_offset()
"""Where numpy keeps an array's data pointer (None: generated kernels are called without
stacked entries, and nothing runs stacked)."""


class CpuExecutable:
    """A module compiled for the CPU (see ``xla_spmd.backends.base.Executable``)."""

    def __init__(self, module: Module, devices: Sequence[int], libm: bool = False):
        # Batch norm runs as its primitive expansion (the reference evaluator's own), fused.
        module = inline_batch_norm(module)
        self.module = module
        self.devices = tuple(devices)
        self.programs: dict[int, Program] = plan_module(module, libm)
        fusions = [f for p in self.programs.values() for f in p.fusions]
        used = {id(s.fusion) for p in self.programs.values() for s in p.steps if s.fusion}
        fusions = [f for f in fusions if id(f) in used]
        data_offset = _DATA_OFFSET
        # The ranged forms of epilogues and split fusions (render_range): epilogues run in
        # place read the dot's value from their output; the forms of a split over threads
        # (columns, fusions split by rows) only where one device has the process's cores
        # (devices on threads of their own never split: blas.split_threads).
        alone = len(self.devices) == 1
        self.splits = {id(s) for p in self.programs.values() for s in p.steps
                       if alone and epilogue.splits(s)}
        ranges = {s.epilogue.fusion.name: s.epilogue.axes[:2 if alone else 1]
                  for p in self.programs.values() for s in p.steps
                  if s.epilogue is not None and s.kind == "kernel"}
        ranges.update({s.fused.name: ("rows",) for p in self.programs.values()
                       for s in p.steps if id(s) in self.splits})
        self.llvm_ir = render_module(fusions, data_offset, ranges)
        self.cache_key = compiler.cache_key(print_module(module) + "\n" + self.llvm_ir)
        # Held here: the machine code must outlive every step that calls into it.
        self.library = library = compiler.compile_library(
            self.llvm_ir, [f.name for f in fusions], self.cache_key) if fusions else None
        for program in self.programs.values():
            for step in program.steps:
                if step.kind == "fusion" and data_offset is None:  # run by run_fusion
                    assert library is not None  # compiled when there are fusions
                    step.function = library.function(step.fused.name,
                                                     1 + len(step.fused.inputs))
        self.fallback_runs: Counter = Counter()
        self._lock = threading.Lock()
        self.launches: dict[int, list[tuple]] = {
            key: [(self._launch(step, library, data_offset), step.slot, step.frees)
                  for step in program.steps]
            for key, program in self.programs.items()}
        entry = self.programs[id(module.entry)]
        self.written = written_parameters(entry)
        """The parameters a fusion writes over (donated: see ``run``)."""
        self.lockstep = _runs_in_lockstep(self.programs, entry)
        """Whether ``run_together`` may run this program (see there)."""
        self._awaited = _awaited_control(entry)
        """Entry steps whose loops run against the collective timeout in lockstep."""
        self.stackable = self.lockstep and data_offset is not None and stacked.stackable(entry)
        """Whether ``run_together`` runs the devices stacked (see ``stacked``)."""
        self._data_offset = data_offset
        self._stacked_plans: dict[int, list[tuple]] = {}

    def execution_mode(self, devices: int, in_process: bool = True,
                       stack: bool | None = None) -> str:
        """How this program runs on ``devices`` devices: see the module's
        ``execution_mode``."""
        return execution_mode(self.module, devices, in_process, self.programs, stack)

    def _launch(self, step: Step, library, data_offset: int | None) -> launch.Launch:
        """``step`` bound into a closure ``(values, ctx) -> value`` (see ``launch``)."""
        kind, inst = step.kind, step.inst
        if kind == "fusion" and step.epilogue is not None:  # its dot's launch computes it
            slot = step.slot
            return lambda values, ctx: values[slot]
        if kind == "fusion":
            if data_offset is None:
                return lambda values, ctx: run_fusion(step, values)
            entry = library.function(stacked_entry_name(step.fused), 2 + len(step.fused.inputs))
            if id(step) in self.splits:  # large: its rows split over threads
                ranged = library.function(range_name(step.fused, "rows"),
                                          3 + len(step.fused.inputs))
                return epilogue.split_launch(step, launch.fusion_launch(step, entry), ranged)
            return launch.fusion_launch(step, entry)
        if kind == "constant":
            value = step.value
            return lambda values, ctx: value
        if kind == "wait":
            slot = step.slot
            return lambda values, ctx: values[slot].wait()
        if kind == "kernel" and step.epilogue is not None:
            fusion, arity = step.epilogue.fusion, 3 + len(step.epilogue.fusion.inputs)
            assert library is not None  # compiled when there are fusions
            rows = library.function(range_name(fusion, "rows"), arity)
            columns = (library.function(range_name(fusion, "columns"), arity)
                       if step.epilogue.columns and len(self.devices) == 1 else None)
            return launch.kernel_launch(step, epilogue.binder(step.epilogue, rows, columns))
        if kind == "kernel":
            return launch.kernel_launch(step)
        if kind == "ufunc":
            return launch.generic_launch(step, step.function)
        reads = step.reads
        if kind == "start":
            evaluate, cache = EVALUATE.lookup(inst.op.name), step.cache

            def start(values, ctx):
                operands = [values[s] for s in reads]
                if ctx.communicator is None:
                    return _Done(evaluate(inst, operands, ctx))
                return kernels.start(inst, operands, ctx, cache)
            return start
        if kind == "control":
            return lambda values, ctx: self._control(inst, [values[s] for s in reads], ctx)
        counted = launch.generic_launch(step, step.function)
        name, lock, runs = inst.op.name, self._lock, self.fallback_runs

        def fallback(values, ctx):
            with lock:
                runs[name] += 1
            return counted(values, ctx)
        return fallback

    # -- running --------------------------------------------------------------------------

    donates = True
    """``run`` and ``run_together`` take ``donated``: the arguments the caller hands over."""

    def run(self, device: int, arguments: Sequence[np.ndarray], communicator: Any,
            donated: Collection[int] = ()) -> list[np.ndarray]:
        """Run device ``device``'s program (see ``xla_spmd.backends.base.Executable``).
        ``donated``: the numbers of the arguments the caller hands over (XLA's
        ``input_output_alias``): where an elementwise fusion can write over one, its result
        is computed in that argument's buffer, with no copy (``_take_over`` says when)."""
        coerced = device_arguments(self.module, device, arguments)
        _take_over(coerced, self.written, donated)
        context = self._context(device, communicator)
        with np.errstate(all="ignore"):  # IEEE results, no warnings: as every reference rule
            result = self.execute(self.programs[id(self.module.entry)], coerced, context)
        return [np.asarray(leaf) for leaf in leaves(result)]

    def run_together(self, arguments: Mapping[int, Sequence[np.ndarray]],
                     communicators: Mapping[int, Any], stack: bool | None = None,
                     donated: Mapping[int, Collection[int]] | None = None
                     ) -> dict[int, list[np.ndarray]]:
        """Run every device of ``arguments`` on the calling thread, in lockstep: each step of
        the plan for every device before the next step. Only where ``self.lockstep``: every
        collective is a start and a wait of the entry plan, so every member of a collective
        has started it before any member waits, and every member must be among the devices
        (``communicators[d]`` is device d's). Results are those of ``run`` on one thread per
        device, bit for bit (the same kernels, the communicators' own folds); a small program
        runs faster so, as its time is Python's and one thread holds no lock for others.

        With several devices and where ``self.stackable`` (unless ``stack`` is False), the
        devices' values are stacked and each step is launched once for all of them (see
        ``backends/cpu/stacked.py``); ``stack=False`` launches each step once per device.
        ``donated[d]``: device d's arguments handed over, as in ``run`` (stacked values are
        copies: nothing is handed over). Returns each device's results, flattened."""
        if not self.lockstep:
            raise XlaSpmdError(f"{self.module.name}: run_together needs a program whose "
                               "collectives are all start/wait steps of the entry, and small")
        if sorted(arguments) != list(range(len(arguments))) or set(communicators) != set(
                arguments):
            raise XlaSpmdError(f"{self.module.name}: run_together runs a whole world of "
                               f"devices 0..n-1 with a communicator each; got devices "
                               f"{sorted(arguments)}, communicators {sorted(communicators)}")
        if stack is None:
            stack = config.cpu_stacked
        if stack and self.stackable and len(arguments) > 1:
            return self._run_stacked(arguments, communicators)
        program = self.programs[id(self.module.entry)]
        states = []
        for device, device_args in arguments.items():
            values: list = [None] * len(program.computation.instructions)
            coerced = device_arguments(self.module, device, device_args)
            _take_over(coerced, self.written, (donated or {}).get(device, ()))
            for slot, argument in zip(program.parameter_slots, coerced):
                values[slot] = argument
            states.append((values, self._context(device, communicators[device])))
        index = 0
        contexts = [ctx for _, ctx in states]
        awaited, timeout = self._awaited, _loop_timeout(len(states))
        with np.errstate(all="ignore"):
            try:
                for launch_step, slot, frees in self.launches[id(program.computation)]:
                    if index in awaited:
                        _limit_loops(contexts, timeout)
                    for values, ctx in states:
                        values[slot] = launch_step(values, ctx)
                        for dead in frees:
                            values[dead] = None
                    if index in awaited:
                        _limit_loops(contexts, None)
                    index += 1
            except _ERRORS as error:
                located = _located(program, index, error)
                if located is error:
                    raise
                raise located from error
        return {device: [np.asarray(leaf) for leaf in leaves(values[program.root_slot])]
                for device, (values, _) in zip(arguments, states)}

    def _run_stacked(self, arguments: Mapping[int, Sequence[np.ndarray]],
                     communicators: Mapping[int, Any]) -> dict[int, list[np.ndarray]]:
        """``run_together`` with every value stacked over the devices."""
        count = len(arguments)
        program = self.programs[id(self.module.entry)]
        launches = self._stacked_plans.get(count)
        if launches is None:
            launches = self._stacked_plans[count] = self._stacked_plan(program, count)
        contexts = [self._context(d, communicators[d]) for d in range(count)]
        env = stacked.Environment(contexts)
        awaited, timeout = self._awaited, _loop_timeout(count)
        coerced = [device_arguments(self.module, d, arguments[d]) for d in range(count)]
        values: list = [None] * len(program.computation.instructions)
        for k, slot in enumerate(program.parameter_slots):
            values[slot] = stacked.stack([device_args[k] for device_args in coerced])
        del coerced
        index = 0
        with np.errstate(all="ignore"):
            try:
                for launch_step, slot, frees in launches:
                    if index in awaited:  # control flow runs device after device
                        _limit_loops(contexts, timeout)
                    values[slot] = launch_step(values, env)
                    for dead in frees:
                        values[dead] = None
                    if index in awaited:
                        _limit_loops(contexts, None)
                    index += 1
            except _ERRORS as error:
                located = _located(program, index, error)
                if located is error:
                    raise
                raise located from error
        results = leaves(values[program.root_slot])
        return {d: [np.asarray(leaf[d]) for leaf in results] for d in range(count)}

    def _stacked_plan(self, program: Program, count: int) -> list[tuple]:
        """The entry plan's steps bound for ``count`` stacked devices (see ``stacked``)."""
        def entry(fusion):
            assert self.library is not None  # compiled when there are fusions
            return self.library.function(stacked_entry_name(fusion), 2 + len(fusion.inputs))
        contexts = [self._context(d, None) for d in range(count)]
        device_launches = self.launches[id(program.computation)]
        return [(stacked.bind(step, device_launch, entry, contexts), slot, frees)
                for step, (device_launch, slot, frees) in zip(program.steps, device_launches)]

    def _context(self, device: int, communicator: Any) -> _CpuContext:
        return _CpuContext(self, partition_id=device, num_partitions=self.module.num_partitions,
                           communicator=communicator,
                           max_loop_iterations=config.max_loop_iterations)

    def execute(self, program: Program, arguments: list, ctx: _CpuContext) -> object:
        """Run one plan on ``arguments`` (the computation's parameters)."""
        values: list = [None] * len(program.computation.instructions)
        for slot, argument in zip(program.parameter_slots, arguments):
            values[slot] = argument
        del arguments
        index = 0
        try:
            for launch_step, slot, frees in self.launches[id(program.computation)]:
                values[slot] = launch_step(values, ctx)
                for dead in frees:
                    values[dead] = None
                index += 1
        except _ERRORS as error:
            located = _located(program, index, error)
            if located is error:
                raise
            raise located from error
        return values[program.root_slot]

    def _control(self, inst, operands: list, ctx: _CpuContext) -> object:
        attrs = inst.attrs
        if inst.op.name == "while":
            # The reference rule: its cap, its stop flag and its errors; ctx.call runs the
            # condition and body through their CPU plans.
            return while_rule(inst, operands, ctx)
        if inst.op.name == "conditional":
            selector, *arguments = operands
            if attrs.branch_computations:
                branches = attrs.branch_computations
                index = int(selector)
                index = index if 0 <= index < len(branches) else len(branches) - 1
            else:
                branches = (attrs.true_computation, attrs.false_computation)
                index = 0 if bool(selector) else 1
            return self.execute(self.programs[id(branches[index])], [arguments[index]], ctx)
        callee = attrs.to_apply if inst.op.name == "call" else attrs.calls
        return self.execute(self.programs[id(callee)], operands, ctx)

    # -- inspection -----------------------------------------------------------------------

    def report(self) -> dict:
        """What ran how: steps by kind, fused instructions, static fallbacks by opcode, the
        fallback runs so far, the peak bytes of the entry plan, the host CPU."""
        kinds: Counter = Counter()
        fallbacks: Counter = Counter()
        fused = 0
        for program in self.programs.values():
            for step in program.steps:
                kinds[step.kind] += 1
                if step.kind == "fusion":
                    fused += len(step.fused.members)
                if step.kind == "fallback":
                    fallbacks[step.inst.op.name] += 1
        with self._lock:
            runs = dict(self.fallback_runs)
        entry = self.programs[id(self.module.entry)]
        return {"steps": dict(kinds), "fused_instructions": fused,
                "fallbacks": dict(fallbacks), "fallback_runs": runs,
                "peak_bytes": entry.peak_bytes, "host": compiler.host()}

    def as_text(self) -> str:
        """The fused program: each computation's schedule, one line per step (a fusion that
        writes over an operand says which: ``[in place of a]``)."""
        lines = []
        for program in self.programs.values():
            lines.append(f"computation {program.computation.name} "
                         f"(peak {program.peak_bytes} bytes):")
            for step in program.steps:
                inst = step.inst
                if step.kind == "fusion":
                    members = ", ".join(m.op.name for m in step.fused.members)
                    inputs = ", ".join(i.name for i in step.fused.inputs)
                    where = "  [rows split over threads]" if id(step) in self.splits else ""
                    if step.epilogue is not None:
                        where = f"  [epilogue of {step.epilogue.dot_name}]"
                    if step.fused.inplace is not None:
                        where += f"  [in place of {step.fused.inputs[step.fused.inplace].name}]"
                    lines.append(f"  {inst.name} = {step.fused.kind} fusion "
                                 f"{step.fused.name} {{{members}}}({inputs}){where}")
                else:
                    operands = ", ".join(o.name for o in inst.operands)
                    label = {"kernel": "blas" if inst.op.name == "dot" else "numpy"}.get(
                        step.kind, step.kind)
                    if step.folded is not None:
                        operands = ", ".join(o.name for o in step.folded.operands)
                        label = f"blas: {step.folded.name} with its operands swapped"
                    if step.epilogue is not None:
                        label += (f", epilogue {step.epilogue.fusion.name} on each part"
                                  f"{' in place' if step.epilogue.in_place else ''}")
                    lines.append(f"  {inst.name} = {inst.op.name}({operands})  [{label}]")
        report = self.report()
        lines.append(f"steps: {report['steps']}; fused instructions: "
                     f"{report['fused_instructions']}; fallbacks: {report['fallbacks'] or 0}")
        lines.append(self._target_line(report))
        return "\n".join(lines)

    def _target_line(self, report: dict) -> str:
        """The last line of ``as_text``: what the code was generated for."""
        host = report["host"]
        return f"host: {host['cpu']} ({host['features']}), LLVM {host['llvm']}"


class CpuBackend:
    """Fusion, llvmlite code generation, BLAS and a communication-hiding schedule.

    Transcendentals (exp, log, tanh, ...) run through numpy's ufuncs by default, so results
    are bit-identical to the reference evaluator's (training losses agree to every digit);
    ``CpuBackend(libm=True)`` fuses them too, computed with the C math library (within 2 ulp).
    """

    name = "cpu"

    def __init__(self, libm: bool = False):
        self.libm = libm

    def compile(self, module: Module, devices: Sequence[int]) -> CpuExecutable:
        return CpuExecutable(module, devices, self.libm)


BACKEND = CpuBackend()
