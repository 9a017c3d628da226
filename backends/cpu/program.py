"""The plan of one computation: its schedule of steps, each a generated fusion, a kernel, a
collective start or wait, a control-flow op running other plans, or a reference fallback.

Invariants:

* Steps follow the computation's topological order, except collectives: a collective starts
  right after the step that produces its operand and is waited for right before the first
  step that uses its result, so communication overlaps the compute between. Every device
  runs the same plan, so every device starts collectives in the same order.
* Liveness: each value is dropped after its last use (``Step.frees``); ``peak_bytes`` is the
  largest sum of live array bytes over the schedule (arguments included, a buffer written
  over counted once).

Buffer assignment (``plan(..., inplace=True)``, the CPU executable's plans):

* **In place.** A loop fusion writes its output over an operand that dies at it, has its
  shape and dtype, is read only at the output's own index, is the plan's own buffer (a loop
  fusion's or a dot's output, or a donated parameter) and shares its buffer with no value
  read later (``_assign_inplace`` says exactly when). The kernel reads that operand through
  its output pointer, and only that pair loses LLVM's ``noalias`` (``Fusion.inplace``). The
  decision is static: it holds for every run and needs no reference counts.
* **Donated arguments** (XLA's ``input_output_alias``) are such operands too: the executable
  writes over a donated argument only when its caller hands it over and it is a writable
  C-contiguous buffer no other argument shares (``CpuExecutable.run``); otherwise that run
  writes over a copy of it (in a recycled buffer: one more pass over memory). Where the
  result is not computed in the donated buffer (not an elementwise fusion over the donated
  parameter but a dot's, a transpose's, a collective's; an argument that is a view of a
  larger array or passed twice; stacked runs, whose values are stacked copies; the
  reference and GPU backends), the result keeps its own buffer and the donated one is
  released with the deleted argument (``jit_runtime._hand_over``): never a copy after the
  run.
* **Recycled outputs.** A loop fusion's output of 1 MiB or more is a view of a buffer from
  ``OUTPUTS`` (``xla_spmd.buffers.Recycler``), which hands a buffer out again only when no
  object at all refers to it: its pages stay mapped from run to run (a fresh 64 MB output
  costs ~5 ms of page faults). A pool keyed on reference counts that this backend had
  before (removed in 5349cc4) adopted any array given back, so a reference convolution's
  result with permuted strides became a row-major kernel's output (wrong values in
  ``sharded_conv_grad``); the recycler only hands out C-contiguous buffers it allocated.
* Only what the root or a side-effecting op needs is scheduled; members of a fusion that
  nothing outside it uses are computed only inside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from xla_spmd.backends.cpu import epilogue, kernels, random
from xla_spmd.backends.cpu.fusion import Fusion, fuse
from xla_spmd.backends.cpu.renderer import TRANSCENDENTAL, accumulator_dtype
from xla_spmd.backends.reference.evaluator import EVALUATE
from xla_spmd.buffers import Recycler
from xla_spmd.errors import EvaluationError
from xla_spmd.ir import Computation, Family, Instruction
from xla_spmd.ir.module import has_side_effect

CONTROL = ("while", "conditional", "call", "fusion")
_SHARING = ("tuple", "get-tuple-element", "reshape", "bitcast", "transpose", "slice")


@dataclass(slots=True)
class Step:
    """One entry of the schedule: ``kind`` is ``fusion``, ``kernel``, ``ufunc`` (a
    transcendental through numpy's ufunc, bit-identical to the reference), ``constant``,
    ``start``, ``wait``, ``control`` or ``fallback``; ``slot`` receives the value; ``reads`` are the
    operand slots; ``frees`` the slots dead after this step; ``folded``: the dot whose
    transpose a ``kernel`` step of a transpose computes, reading the dot's operands
    (``kernels.folded_transpose``); ``epilogue``: on a dot's kernel step, the loop fusion it
    runs on its output, on that fusion's step the same (its value is then the dot step's
    doing: ``epilogue.py``)."""

    kind: str
    inst: Instruction
    slot: int
    reads: tuple[int, ...]
    fusion: Fusion | None = None
    function: Any = None  # a fusion's compiled function (ctypes), linked where run_fusion runs it
    value: object = None
    frees: tuple[int, ...] = ()
    cache: dict = field(default_factory=dict)   # per-device facts a kernel computes once
    folded: Instruction | None = None
    epilogue: Any = None  # an epilogue.Epilogue

    @property
    def fused(self) -> Fusion:
        """The fusion of a ``fusion`` step (an error naming the step for another kind)."""
        if self.fusion is None:
            raise EvaluationError(f"{self.kind} step {self.inst.name} has no fusion")
        return self.fusion


@dataclass
class Program:
    """The schedule of one computation and what it needs at run time."""

    computation: Computation
    steps: list[Step]
    parameter_slots: tuple[int, ...]
    root_slot: int
    fusions: list[Fusion]
    peak_bytes: int = 0
    counts: dict = field(default_factory=dict)


def plan(computation: Computation, called: set[int], prefix: str = "", libm: bool = False,
         windows: bool = False, fold_transposes: bool = False, inplace: bool = False,
         donated: frozenset[int] = frozenset()) -> Program:
    """The schedule of ``computation``; ``called`` are ids of computations that get their own
    programs (the bodies of control flow); kernel names start with ``prefix``; ``libm``
    generates code for transcendentals too; ``windows`` for reduce-windows (see ``fuse``);
    ``fold_transposes``: a dot's transpose is a kernel step reading the dot's operands
    (``Step.folded``, the CPU's BLAS kernels: ``kernels.folded_transpose``); ``inplace``:
    elementwise fusions write over an operand that dies there (``Fusion.inplace``, see
    ``_assign_inplace``), among them the parameters numbered in ``donated``."""
    folds: dict[int, Instruction] = {}
    if fold_transposes:
        users = computation.users()
        for inst in computation.instructions:
            dot = kernels.folded_transpose(inst, users, computation.root)
            if dot is not None:
                folds[id(inst)] = dot
    fusions, by_root = fuse(computation, prefix, libm, windows, frozenset(folds))
    slot_of = {id(inst): k for k, inst in enumerate(computation.instructions)}
    required = _required(computation, by_root, folds)
    steps: list[Step] = []
    for inst in computation.instructions:
        if id(inst) not in required or inst.op.name == "parameter":
            continue
        slot = slot_of[id(inst)]
        fusion = by_root.get(id(inst))
        if fusion is not None:
            reads = tuple(slot_of[id(i)] for i in fusion.inputs)
            steps.append(Step("fusion", inst, slot, reads, fusion=fusion))
            continue
        reads = tuple(slot_of[id(o)] for o in inst.operands)
        name = inst.op.name
        folded = folds.get(id(inst))
        if folded is not None:  # the transpose of a dot, computed by the dot's kernel
            reads = tuple(slot_of[id(o)] for o in folded.operands)
            steps.append(Step("kernel", inst, slot, reads, folded=folded))
        elif name == "constant" or (name == "iota" and kernels.kernel_for(inst) is None):
            value = EVALUATE.lookup(name)(inst, [], None)
            steps.append(Step("constant", inst, slot, reads, value=value))
        elif kernels.can_start(inst):
            steps.append(Step("start", inst, slot, reads))
            # The operands stay alive until the wait: the communicator reads them meanwhile.
            steps.append(Step("wait", inst, slot, (slot, *reads)))
        elif name in CONTROL and all(id(c) in called for c in inst.called_computations()):
            steps.append(Step("control", inst, slot, reads))
        elif name in TRANSCENDENTAL:
            steps.append(Step("ufunc", inst, slot, reads, function=EVALUATE.lookup(name)))
        elif kernels.kernel_for(inst) is not None:
            steps.append(Step("kernel", inst, slot, reads, function=kernels.kernel_for(inst)))
        else:
            steps.append(Step("fallback", inst, slot, reads, function=EVALUATE.lookup(name)))
    steps = _overlap_collectives(steps)
    parameters = tuple(slot_of[id(p)] for p in computation.parameters)
    root_slot = slot_of[id(computation.root)]
    program = Program(computation, steps, parameters, root_slot, fusions)
    _assign_frees(program)
    if inplace:
        _assign_inplace(program, donated)
    if fold_transposes:  # the CPU's BLAS kernels: dots run their epilogues
        epilogue.attach(steps, root_slot, program.fusions)
    program.peak_bytes = _peak_bytes(program)
    for step in steps:
        program.counts[step.kind] = program.counts.get(step.kind, 0) + 1
    return program


def _required(computation: Computation, by_root: dict[int, Fusion],
              folds: dict[int, Instruction]) -> set[int]:
    required = {id(computation.root)}
    for inst in reversed(computation.instructions):
        keep = (has_side_effect(inst) or inst.op.family in (Family.COLLECTIVE, Family.ASYNC))
        if id(inst) not in required and not keep:
            continue
        required.add(id(inst))
        fusion = by_root.get(id(inst))
        operands = (fusion.inputs if fusion is not None else
                    folds[id(inst)].operands if id(inst) in folds else inst.operands)
        for operand in operands:
            required.add(id(operand))
    return required


def _overlap_collectives(steps: list[Step]) -> list[Step]:
    """Move each collective's start up to just after its operands' producers, and its wait
    down to just before its first reader (in linear time; starts keep their order)."""
    others = [s for s in steps if s.kind != "start"]
    produced_at = {s.slot: k for k, s in enumerate(others) if s.kind != "start"}
    after: dict[int, list[Step]] = {}
    for step in steps:
        if step.kind == "start":
            position = max((produced_at[r] for r in step.reads if r in produced_at),
                           default=-1)
            after.setdefault(position, []).append(step)
    started = list(after.get(-1, []))
    for k, step in enumerate(others):
        started.append(step)
        started.extend(after.get(k, []))
    rest = [s for s in started if s.kind != "wait"]
    first_reader: dict[int, int] = {}
    for k, step in enumerate(rest):
        for slot in step.reads:
            first_reader.setdefault(slot, k)
    before: dict[int, list[Step]] = {}
    for step in started:
        if step.kind == "wait":
            position = first_reader.get(step.slot, len(rest))
            before.setdefault(position, []).append(step)
    result = []
    for k, step in enumerate(rest):
        result.extend(before.get(k, []))
        result.append(step)
    result.extend(before.get(len(rest), []))
    return result


def _nbytes(shape) -> int:
    return sum(leaf.byte_size for leaf in shape.leaves() if not leaf.is_token)


def _last_reads(program: Program) -> dict[int, int]:
    """Slot -> the position of the last step reading it (the root: one past the end)."""
    last: dict[int, int] = {}
    for k, step in enumerate(program.steps):
        for slot in step.reads:
            last[slot] = k
    last[program.root_slot] = len(program.steps)
    return last


def _assign_frees(program: Program) -> None:
    """Set each step's ``frees``: the slots read for the last time there."""
    last = _last_reads(program)
    for k, step in enumerate(program.steps):
        step.frees = tuple(s for s in dict.fromkeys(step.reads)
                           if last.get(s) == k and s != step.slot)


def _fresh(step: Step) -> bool:
    """Whether ``step`` makes its value in a new C-contiguous buffer that only the plan
    holds: a loop fusion's output (``numpy.empty`` or a recycled buffer nothing else refers
    to) or a dot's (``kernels.dot_kernel``'s preallocated output, or its conversion)."""
    if step.kind == "fusion":
        return step.fused.kind == "loop"
    return step.kind == "kernel" and (step.folded is not None or step.inst.op.name == "dot")


def _assign_inplace(program: Program, donated: frozenset[int]) -> None:
    """Let each loop fusion write its output over one of its operands where that is safe by
    construction (``Fusion.inplace``). Operand ``s`` qualifies when

    * it dies at this step (read by no later step, not the root);
    * its buffer is the plan's own: a loop fusion (possibly over another operand, in place)
      or a dot made it, or it is a parameter numbered in ``donated`` (the caller hands the buffer
      over; see ``CpuExecutable.run``); never a constant, a view, a collective's or a
      reference rule's result (which may share a buffer with anything);
    * it has the output's shape and dtype and the fusion reads it only at the output's own
      index (``Fusion.aligned_inputs``);
    * no other value read at this step or later aliases its buffer. A value that is not a
      fusion's output (a view, a tuple, a collective's or a kernel's result) is taken to
      share a buffer with every operand it was made from.
    """
    instructions = program.computation.instructions
    last = _last_reads(program)
    owners: dict[int, frozenset] = {}   # slot -> the buffers its value may share
    aliases: dict[object, list[int]] = {}   # buffer -> the slots that may share it
    own = {slot: (("donated", slot) if number in donated else ("parameter", slot))
           for number, slot in enumerate(program.parameter_slots)}
    for slot, buffer in own.items():
        owners[slot] = frozenset([buffer])
        aliases.setdefault(buffer, []).append(slot)
    for k, step in enumerate(program.steps):
        if step.kind == "start":
            continue  # its value is a handle; the wait's result is what the slot holds
        buffer = None
        if step.kind == "fusion" and step.fused.kind == "loop":
            for j in step.fused.aligned_inputs():
                candidate = _writable(step, step.reads[j], k, owners, aliases, last,
                                      instructions)
                if candidate is not None:
                    buffer = candidate
                    fusion = replace(step.fused, inplace=j)
                    position = next(i for i, f in enumerate(program.fusions)
                                    if f is step.fused)
                    program.fusions[position] = fusion
                    step.fusion = fusion
                    break
            mine = frozenset([buffer if buffer is not None else ("fresh", step.slot)])
        elif _fresh(step):
            mine = frozenset([("fresh", step.slot)])
        elif step.kind == "fusion" and step.fused.kind in ("reduce", "window"):
            mine = frozenset([("made", step.slot)])  # a new accumulator (not written over)
        elif step.kind == "constant":
            mine = frozenset([("constant", step.slot)])
        else:
            mine = frozenset([("made", step.slot)]).union(
                *(owners.get(s, frozenset()) for s in step.reads))
        owners[step.slot] = mine
        for b in mine:
            aliases.setdefault(b, []).append(step.slot)


def _writable(step: Step, slot: int, k: int, owners: dict, aliases: dict, last: dict,
              instructions) -> object:
    """The buffer of operand ``slot`` if step ``k`` may write its output over it (see
    ``_assign_inplace``), else None."""
    if last.get(slot) != k or slot == step.slot or step.reads.count(slot) != 1:
        return None
    mine = owners.get(slot, frozenset())
    if len(mine) != 1:
        return None
    (buffer,) = mine
    if buffer[0] not in ("fresh", "donated"):
        return None
    if instructions[slot].shape != step.inst.shape:
        return None
    for other in aliases.get(buffer, ()):
        if other != slot and last.get(other, -1) >= k:
            return None
    return buffer


def _peak_bytes(program: Program) -> int:
    """The peak of live bytes over the schedule: arguments, each step's new buffer (none for
    a view or a tuple, none for a fusion written over its operand, whose bytes carry over;
    a dot's epilogue's from the dot's step, which runs it) and a reduction's accumulator
    scratch."""
    instructions = program.computation.instructions
    live = {slot: _nbytes(instructions[slot].shape) for slot in program.parameter_slots}
    peak = sum(live.values())
    for step in program.steps:
        if step.kind == "start":
            continue
        # Tuples and views share their operands' buffers.
        shares = (step.inst.op.name in _SHARING and step.kind == "kernel"
                  and step.folded is None)
        if step.kind == "fusion" and step.fused.inplace is not None:
            live[step.slot] = live.pop(step.reads[step.fused.inplace], 0)
        else:
            live[step.slot] = 0 if shares else _nbytes(step.inst.shape)
        after = step.epilogue
        if step.kind == "kernel" and after is not None and not after.in_place:
            # the dot's launch writes its epilogue's output too
            live[after.slot] = _nbytes(instructions[after.slot].shape)
        if step.kind == "fusion" and step.fused.kind in ("reduce", "window"):
            scratch = step.inst.shape.num_elements * accumulator_dtype(
                step.inst.shape.dtype).itemsize
        else:
            scratch = 0
        peak = max(peak, sum(live.values()) + scratch)
        for slot in step.frees:
            live.pop(slot, None)
    return peak


OUTPUTS = Recycler(max_count=32)
"""The recycled buffers of large loop-fusion outputs, shared by every device and executable
of the process (``xla_spmd.buffers``: a buffer is handed out again only once nothing refers
to it, so a result the caller keeps is never overwritten)."""


def output_allocator(inst: Instruction):
    """``allocate(dims, dtype)`` for the output of ``inst``: ``OUTPUTS.take`` where it is
    large enough to be recycled, else ``numpy.empty``."""
    large = _nbytes(inst.shape) >= OUTPUTS.min_bytes
    return OUTPUTS.take if large else np.empty


def run_fusion(step: Step, values: list) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Run a generated fusion kernel on its inputs into a fresh output (of an rng fusion: the
    new state and the bits, its tuple's elements)."""
    fusion, inst = step.fused, step.inst
    inputs = [np.asarray(values[slot], order="C") for slot in step.reads]
    pointers = [a.ctypes.data for a in inputs]
    if fusion.kind == "rng":
        shape = inst.shape.elements[1]
        bits = np.empty(shape.dims, np.dtype(f"u{shape.dtype.bits // 8}"))
        if bits.size:
            step.function(bits.ctypes.data, *pointers)
        return random.next_state(inst, inputs[0]), bits.view(shape.dtype.array_dtype)
    if fusion.kind == "loop":
        if fusion.inplace is not None:  # written over that input (see _assign_inplace)
            out = inputs[fusion.inplace]
            pointers[fusion.inplace] = out.ctypes.data
        else:
            out = output_allocator(inst)(inst.shape.dims, inst.shape.dtype.array_dtype)
        if out.size:
            step.function(out.ctypes.data, *pointers)
        return out
    accumulator = np.empty(inst.shape.dims, accumulator_dtype(inst.shape.dtype))
    init = values[step.reads[fusion.inputs.index(inst.operands[1])]]
    accumulator[...] = np.asarray(init).astype(accumulator.dtype)
    if inst.operands[0].shape.num_elements:
        step.function(accumulator.ctypes.data, *pointers)
    dtype = inst.shape.dtype.numpy
    return accumulator if accumulator.dtype == dtype else accumulator.astype(dtype)
