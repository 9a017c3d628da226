"""The reference evaluator: a numpy interpreter of every op with XLA's semantics.

The driver is generic: it walks a computation in order and calls the rule registered for each
opcode in `EVALUATE` (one module per op family fills it). Values are numpy arrays, tuples of
values for tuple shapes, and `TOKEN_VALUE` for tokens. A rule receives the instruction, its
operand values and the `Context` of the device being evaluated, and returns the value.

>>> from xla_spmd.ir import parse_hlo
>>> import numpy as np
>>> m = parse_hlo('''HloModule m
... ENTRY %e (x: f32[3]) -> f32[3] {
...   %x = f32[3] parameter(0)
...   ROOT %n = f32[3] negate(%x)
... }''')
>>> evaluate(m, [np.arange(3, dtype=np.float32)])
array([-0., -1., -2.], dtype=float32)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

import xla_spmd.config as config
from xla_spmd.errors import EvaluationError, XlaSpmdError
from xla_spmd.ir import ArrayShape, Computation, Instruction, Module, Registry, TupleShape

EVALUATE = Registry("reference evaluation")


class _Token:
    def __repr__(self) -> str:
        return "token"


TOKEN_VALUE = _Token()


class Communicator(Protocol):
    """The collectives a rule runs through (`xla_spmd.collectives`' communicators have them;
    this layer does not import that one), over flattened device ids."""

    def all_reduce(self, x: Any, group: Sequence[int], op: Any = "sum") -> Any: ...

    def all_gather(self, x: Any, group: Sequence[int], axis: int = 0) -> Any: ...

    def reduce_scatter(self, x: Any, group: Sequence[int], axis: int = 0,
                       op: Any = "sum") -> Any: ...

    def all_to_all(self, x: Any, group: Sequence[int], split_axis: int = 0,
                   concat_axis: int = 0) -> Any: ...

    def collective_permute(self, x: Any, pairs: Sequence[tuple[int, int]]) -> Any: ...

    def broadcast(self, x: Any, group: Sequence[int], root: int) -> Any: ...


@dataclass
class Feeds:
    """A device's host queues: `infeed` holds the values its ``infeed`` ops take, oldest
    first (each the op's data: an array, or a tuple for a tuple-shaped infeed); `outfeed`
    collects ``(instruction name, value)`` for each ``outfeed`` run, in order.

    >>> from xla_spmd.ir import parse_hlo
    >>> m = parse_hlo('''HloModule m
    ... ENTRY e {
    ...   t = token[] after-all()
    ...   in = (f32[2], token[]) infeed(t)
    ...   x = f32[2] get-tuple-element(in), index=0
    ...   n = f32[2] negate(x)
    ...   t1 = token[] get-tuple-element(in), index=1
    ...   ROOT out = token[] outfeed(n, t1)
    ... }''')
    >>> feeds = Feeds(deque([np.array([1, 2], np.float32)]))
    >>> evaluate(m, [], feeds)
    token
    >>> feeds.outfeed
    [('out', array([-1., -2.], dtype=float32))]
    """

    infeed: deque = field(default_factory=deque)
    outfeed: list = field(default_factory=list)


@dataclass
class Context:
    """What a rule may need beyond its operands: the device it runs on, and how to exchange
    data with the other devices at a collective (None on one device)."""

    partition_id: int = 0
    replica_id: int = 0
    num_partitions: int = 1
    num_replicas: int = 1
    # exchange(inst, value) -> list of every device's value for this collective, indexed by
    # flattened device id (replica_id * num_partitions + partition_id).
    exchange: Callable[[Instruction, object], list] | None = None
    # A communicator (the protocol of xla_spmd.collectives: all_reduce(x, group, op), ...)
    # over flattened device ids. When set, collectives run through it instead of `exchange`:
    # this is how the runtime executes programs on in-process devices and on MPI ranks.
    communicator: Communicator | None = None
    # A `while` loop stops with an error after this many iterations (the process option
    # `max_loop_iterations`: XLA_SPMD_MAX_LOOP_ITERATIONS, --max-loop-iterations).
    max_loop_iterations: int = field(default_factory=lambda: config.max_loop_iterations)
    # Set (an object with `is_set()`, e.g. a threading.Event) when the run must stop: another
    # device failed, or the user pressed Ctrl-C. Loops check it every iteration. Defaults to
    # the communicator's `stopped`, where it has one (the in-process communicator).
    stop: Any = None
    # Seconds a `while` loop may run before it fails as a device that never reached the
    # collective the other devices wait at (the collective timeout): set where those devices
    # run after this one on the same thread (the CPU backend's lockstep runs), which would
    # otherwise wait for an endless loop with no deadline. None: only the iteration cap.
    loop_timeout: float | None = None
    # The device's infeed and outfeed queues (`Feeds`); None: an infeed fails, an outfeed
    # writes nowhere.
    feeds: Feeds | None = None

    def __post_init__(self) -> None:
        if self.stop is None:
            self.stop = getattr(self.communicator, "stopped", None)

    @property
    def device_id(self) -> int:
        return self.replica_id * self.num_partitions + self.partition_id

    def call(self, computation: Computation, args: Sequence) -> object:
        """Evaluate a called computation (reducers, loop bodies, branches) on this device."""
        return evaluate_computation(computation, args, self)


def stopped_error(what: str) -> EvaluationError:
    """The error of a device that stops because the run was stopped (``Context.stop``); it is
    marked as a consequence, so the caller reports the root cause instead."""
    error = EvaluationError(f"{what}: stopped because another device failed or the job was "
                            "interrupted")
    error.peer_failed = True
    return error


def evaluate_computation(computation: Computation, args: Sequence, ctx: Context) -> object:
    """`computation`'s root value on `args` (one per parameter), each instruction evaluated by
    its `EVALUATE` rule in order. A value is dropped as soon as its last user has run (its
    memory freed, unless the caller or another value still holds it): the peak is the live
    values, not every value the computation makes."""
    params = computation.parameters
    if len(args) != len(params):
        raise EvaluationError(f"computation {computation.name} takes {len(params)} "
                              f"arguments, got {len(args)}")
    values: dict[int, object] = {id(p): a for p, a in zip(params, args)}
    del args  # the parameters' values are dropped at their last use too
    for inst, dead in zip(computation.instructions, last_uses(computation)):
        if inst.op.name != "parameter":
            operands = [values[id(o)] for o in inst.operands]
            rule = EVALUATE.lookup(inst.op.name)
            try:
                values[id(inst)] = rule(inst, operands, ctx)
            except (XlaSpmdError, ValueError, TypeError, IndexError, ArithmeticError,
                    MemoryError) as error:
                if getattr(error, "located", False):
                    raise  # already shows the instructions around the failing one
                located = EvaluationError(_describe(computation, inst, error))
                located.located = True
                raise located from error
            del operands
        for key in dead:
            values.pop(key, None)
    return values[id(computation.root)]


_LAST_USES: dict[int, tuple[Computation, tuple]] = {}
_LAST_USES_KEPT = 512  # computations whose analysis is kept (the oldest dropped past it)


def last_uses(computation: Computation) -> tuple[tuple[int, ...], ...]:
    """Per instruction of `computation` (in order), the ids of the instructions whose values
    are dead once it has run: those it uses for the last time, and itself when nothing uses
    it; never the root. Memoised by identity (computations are immutable; the memo holds the
    computation, so that its id is not reused) for the last `_LAST_USES_KEPT` computations.

    >>> from xla_spmd.ir import parse_hlo
    >>> c = parse_hlo('''HloModule m
    ... ENTRY e {
    ...   x = f32[2] parameter(0)
    ...   n = f32[2] negate(x)
    ...   u = f32[2] abs(x)
    ...   ROOT a = f32[2] add(n, n)
    ... }''').entry
    >>> names = {id(i): i.name for i in c.instructions}
    >>> [sorted(names[k] for k in dead) for dead in last_uses(c)]
    [[], [], ['u', 'x'], ['n']]
    """
    entry = _LAST_USES.get(id(computation))
    if entry is not None and entry[0] is computation:
        return entry[1]
    instructions = computation.instructions
    last = {id(inst): k for k, inst in enumerate(instructions)}
    for k, inst in enumerate(instructions):
        for operand in inst.operands:
            last[id(operand)] = k
    dead: list[list[int]] = [[] for _ in instructions]
    for inst in instructions:
        if inst is not computation.root:
            dead[last[id(inst)]].append(id(inst))
    result = tuple(tuple(d) for d in dead)
    if len(_LAST_USES) >= _LAST_USES_KEPT:
        _LAST_USES.pop(next(iter(_LAST_USES)))
    _LAST_USES[id(computation)] = (computation, result)
    return result


def _describe(computation: Computation, failing: Instruction, error: Exception) -> str:
    from xla_spmd.ir.hlo_printer import print_instruction  # the printer is only for errors

    lines = []
    index = computation.instructions.index(failing)
    for inst in computation.instructions[max(0, index - 2): index + 3]:
        marker = ">>" if inst is failing else "  "
        lines.append(f"{marker} {print_instruction(inst, computation)}")
    return (f"evaluating {failing.name} ({failing.op.name}) in {computation.name} failed: "
            f"{type(error).__name__}: {error}\n" + "\n".join(lines))


def leaves(value) -> list:
    """The arrays of a (possibly nested) tuple value, in order."""
    if isinstance(value, tuple):
        return [leaf for element in value for leaf in leaves(element)]
    return [value]


def coerce_argument(value, shape, what: str) -> object:
    """Turn a user argument into the parameter's type, casting only when exact."""
    if isinstance(shape, TupleShape):
        if not isinstance(value, (tuple, list)) or len(value) != len(shape.elements):
            raise EvaluationError(f"{what} must be a tuple of {len(shape.elements)} values")
        return tuple(coerce_argument(v, s, f"{what}[{i}]")
                     for i, (v, s) in enumerate(zip(value, shape.elements)))
    if shape.is_token:
        return TOKEN_VALUE
    array = np.asarray(value)
    if array.shape != shape.dims:
        raise EvaluationError(f"{what} must have shape {list(shape.dims)} ({shape}), got "
                              f"{list(array.shape)}")
    target = shape.dtype.numpy
    if array.dtype == target:
        return array
    cast = array.astype(target)
    back = cast.astype(array.dtype)
    same = np.array_equal(back, array, equal_nan=array.dtype.kind in "fc")
    if not same:
        raise EvaluationError(f"{what} is {array.dtype}, and casting it to {shape.dtype} "
                              "(the parameter's type) is not exact")
    return cast


def evaluate(module: Module, args: Sequence, feeds: Feeds | None = None) -> object:
    """Evaluate the entry computation on one device; returns an array or a tuple of values.
    `feeds` holds the values its infeeds take and collects what it outfeeds."""
    params = module.entry.parameters
    if len(args) != len(params):
        raise EvaluationError(f"module {module.name} takes {len(params)} arguments, got "
                              f"{len(args)}")
    coerced = [coerce_argument(a, p.shape, f"argument {i} ({p.name})")
               for i, (a, p) in enumerate(zip(args, params))]
    return evaluate_computation(module.entry, coerced, Context(
        num_partitions=1, num_replicas=1, feeds=feeds))


def zeros_of(shape) -> object:
    if isinstance(shape, TupleShape):
        return tuple(zeros_of(s) for s in shape.elements)
    if shape.is_token:
        return TOKEN_VALUE
    return np.zeros(shape.dims, dtype=shape.dtype.numpy)


def array_shape(inst: Instruction) -> ArrayShape:
    if not isinstance(inst.shape, ArrayShape):
        raise EvaluationError(f"{inst.name}: expected an array result, got {inst.shape}")
    return inst.shape
