"""Varying manual axes: JAX's ``check_vma`` typing of values inside a shard_map body.

A value in a manual region *varies* over a manual axis when the devices along it may hold
different values; otherwise it is *invariant* (the same on each). Inputs vary over the axes
their in_spec names; ``partition-id`` varies over every axis; a ``psum`` over axes A makes
its result invariant over A, ``psum_scatter`` makes it vary over A; anything else (an
``all_gather`` too, as JAX's) varies over the union of its operands' axes (constants vary
over none).

Autodiff reads the types (with ``check_vma=True``, the default, as in JAX 0.10): an
invariant value used by varying code, or by a collective over axes it does not vary over, is
implicitly broadcast first (JAX's ``pvary``), whose transpose is a ``psum``
(`transpose_implicit_broadcasts`, applied to every op's operand cotangents); a ``psum``
then transposes as on a varying operand, to the identity. An invariant result's cotangent
is invariant: it is not split among the devices. With ``check_vma=False`` none of this
applies (JAX's untyped shard_map: ``psum`` transposes to ``psum``).

>>> sorted(combine("add", [frozenset({"x"}), frozenset({"y"})], (), frozenset({"x", "y"})))
['x', 'y']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xla_spmd.frontend.parallel import COLLECTIVE_AXES, psum
from xla_spmd.frontend.tracing import ArrayLike, Trace, Tracer, Value, current_trace
from xla_spmd.ir import Instruction

NO_CHECK_VMA = "xla_spmd.check_vma"
"""Frontend attribute of a shard_map body call made with ``check_vma=False`` (value
"false"); without it the region is typed."""


def collective_axes(inst: Instruction, every: frozenset) -> frozenset:
    text = inst.frontend_attribute(COLLECTIVE_AXES)
    return every if text is None else frozenset(a for a in text.split(",") if a)


def combine(opcode: str, operand_vmas: Iterable[frozenset], axes: Iterable[str], every: frozenset
            ) -> frozenset:
    """The varying axes of an op's result from its operands' (`axes`: a collective's)."""
    if opcode in ("partition-id", "replica-id"):
        return every
    union = frozenset().union(*operand_vmas) if operand_vmas else frozenset()
    if opcode == "all-reduce":
        return union - frozenset(axes)
    if opcode in ("reduce-scatter", "custom-call"):  # custom-call: lax.pvary's axes, or none
        return union | frozenset(axes)
    return union


def _vmas(trace: Trace) -> dict[int, frozenset]:
    """Varying axes of every value of `trace` (computed incrementally, cached on it)."""
    assert trace.manual is not None  # asked inside a manual region only
    every = frozenset(trace.manual.axes)
    cache = trace.__dict__.setdefault("_vma_cache", {"count": 0, "values": {}})
    values = cache["values"]
    if not cache["count"]:
        captured = {id(param): outer for outer, param in
                    zip(trace.captures, _capture_parameters(trace))}
        known = getattr(trace, "parameter_vmas", {})
        for param in trace.parameters:
            outer = captured.get(id(param))
            if id(param) in known:
                values[id(param)] = known[id(param)]
            elif outer is not None:
                values[id(param)] = vma_of(outer, every)
            else:  # a loop carry or branch operand: assume it varies (no implicit sums)
                values[id(param)] = every
    instructions = trace.builder.instructions
    for inst in instructions[cache["count"]:]:
        if id(inst) in values:
            continue
        axes = collective_axes(inst, frozenset() if inst.opcode == "custom-call" else every)
        values[id(inst)] = combine(inst.opcode, [values.get(id(o), every)
                                                 for o in inst.operands], axes, every)
    cache["count"] = len(instructions)
    return values


def declare(trace: Trace, parameter_vmas: dict[int, frozenset]) -> None:
    """Give parameters of `trace` (by instruction id) their varying axes; before any
    instruction of the trace uses them."""
    trace.__dict__.setdefault("parameter_vmas", {}).update(parameter_vmas)
    cache = trace.__dict__.get("_vma_cache")
    if cache is not None:
        cache["values"].update(parameter_vmas)


def _capture_parameters(trace: Trace) -> list:
    return [trace._captured[id(outer.inst)] for outer in trace.captures]


def vma_of(value: ArrayLike, default: frozenset = frozenset()) -> frozenset:
    """The manual axes `value` varies over (`default` when it is not a typed traced value;
    a concrete value varies over none)."""
    if not isinstance(value, Tracer):
        return frozenset()
    trace = value.trace
    if not typed(trace):
        return default
    return _vmas(trace).get(id(value.inst), default)


def typed(trace: Trace | None) -> bool:
    """Whether `trace` is a shard_map body (or nested in one) typed with check_vma."""
    return trace is not None and trace.manual is not None and trace.manual.check_vma


def transpose_implicit_broadcasts(inst: Instruction, operands: Sequence[Value],
                                  cotangents: Sequence[Value | None]) -> list:
    """Operand cotangents of `inst` (in a typed trace) each summed over the axes the op needed
    its operand to vary over and the operand did not: the op saw an implicitly broadcast
    copy (JAX's ``pvary``), whose transpose is a ``psum``. An op needs the union of its
    operands' axes; a collective also its own axes."""
    trace = current_trace()
    assert trace is not None and trace.manual is not None  # inside a manual region only
    every = frozenset(trace.manual.axes)
    vmas = [vma_of(o, every) for o in operands]
    needed = frozenset().union(*vmas) if vmas else frozenset()
    if inst.opcode in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"):
        needed |= collective_axes(inst, every)
    out = []
    for ct, vma in zip(cotangents, vmas):
        missing = needed - vma
        if missing and isinstance(ct, Tracer) and (ct.aval.dtype.is_float
                                                   or ct.aval.dtype.is_complex):
            ct = psum(ct, tuple(a for a in trace.manual.axes if a in missing))
        out.append(ct)
    return out
