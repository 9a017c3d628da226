"""Instructions, computations and modules: immutable values.

An `Instruction` holds its `Op`, its operand instructions, its result shape, its typed
attributes and an optional sharding. A `Computation` is a flat, topologically ordered tuple of
instructions with a root; a `Module` holds its computations (callees before callers) and names
the entry. Passes never mutate: they build new computations (see `rewrite`).

Instructions compare by identity (they are graph nodes); computations and modules compare
structurally with `==`, which is what ``parse(print(m)) == m`` relies on.

>>> from xla_spmd.ir import Builder, F32, ArrayShape
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(F32, (4,)), "x")
>>> root = b.multiply(x, x)
>>> m = Module.from_entry("square", b.build(root))
>>> [i.op.name for i in m.entry.instructions]
['parameter', 'multiply']
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from xla_spmd.errors import VerifyError
from xla_spmd.ir.attr_types import Attrs
from xla_spmd.ir.hlo_sharding import HloSharding
from xla_spmd.ir.ops import AttrKind, Op
from xla_spmd.ir.shapes import Shape

_ALIAS = re.compile(r"\{(\d*)\}\s*:\s*\((\d+),\s*\{\}")

Pairs = tuple[tuple[str, str], ...]


class AxisSharding(Protocol):
    """An axis-based sharding as this layer sees it: `xla_spmd.sharding.TensorSharding`,
    which ir does not import. The printer asks for its GSPMD form and its Shardy text."""

    @property
    def mesh(self) -> Any: ...

    @property
    def mesh_name(self) -> str | None: ...

    def to_hlo_sharding(self) -> HloSharding: ...

    def body_text(self) -> str: ...


# An instruction's sharding: GSPMD's (as parsed from HLO text) or axis-based (propagation
# and the frontend), or a tuple of them, one per element of a tuple-shaped result.
SingleSharding = HloSharding | AxisSharding
Sharding = SingleSharding | tuple[SingleSharding | None, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Instruction:
    """One SSA value. `extras` keeps attributes we carry verbatim (metadata, backend_config)."""

    name: str
    op: Op
    operands: tuple[Instruction, ...]
    shape: Shape
    attrs: Attrs
    sharding: Sharding | None = None
    frontend_attributes: Pairs = ()
    extras: Pairs = ()

    @property
    def opcode(self) -> str:
        return self.op.name

    def called_computations(self) -> tuple[Computation, ...]:
        """Computations this instruction calls, in attribute order."""
        called = []
        for spec in self.op.attrs:
            value = getattr(self.attrs, spec.name)
            if value is None:
                continue
            if spec.kind is AttrKind.COMPUTATION:
                called.append(value)
            elif spec.kind is AttrKind.COMPUTATIONS:
                called.extend(value)
        return tuple(called)

    def sharding_leaves(self) -> tuple[SingleSharding | None, ...]:
        """The sharding as a tuple: one entry per tuple element for a tuple sharding, else
        ``(sharding,)`` (``(None,)`` when there is none)."""
        sharding = self.sharding
        return sharding if isinstance(sharding, tuple) else (sharding,)

    def replace(self, **changes) -> Instruction:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return Instruction(**values)

    def frontend_attribute(self, key: str) -> str | None:
        for k, v in self.frontend_attributes:
            if k == key:
                return v
        return None

    def __repr__(self) -> str:
        return f"<{self.name} = {self.shape} {self.op.name}>"


@dataclass(frozen=True, slots=True, eq=False)
class Computation:
    """A topologically ordered list of instructions with a root."""

    name: str
    instructions: tuple[Instruction, ...]
    root: Instruction
    extras: Pairs = ()
    parameters: tuple[Instruction, ...] = field(init=False)

    def __post_init__(self):
        params = [i for i in self.instructions if i.op.name == "parameter"]
        params.sort(key=lambda p: p.attrs.parameter_number)
        object.__setattr__(self, "parameters", tuple(params))

    @property
    def parameter_shapes(self) -> tuple[Shape, ...]:
        return tuple(p.shape for p in self.parameters)

    @property
    def result_shape(self) -> Shape:
        return self.root.shape

    def called_computations(self) -> tuple[Computation, ...]:
        seen: dict[int, Computation] = {}
        for inst in self.instructions:
            for c in inst.called_computations():
                seen.setdefault(id(c), c)
        return tuple(seen.values())

    def users(self) -> dict[Instruction, list[Instruction]]:
        """The use map, computed on demand: instruction -> the instructions using it."""
        uses: dict[Instruction, list[Instruction]] = {i: [] for i in self.instructions}
        for inst in self.instructions:
            for operand in inst.operands:
                uses[operand].append(inst)
        return uses

    def instruction(self, name: str) -> Instruction:
        for inst in self.instructions:
            if inst.name == name:
                return inst
        raise KeyError(f"computation {self.name} has no instruction {name!r}")

    def __eq__(self, other) -> bool:
        return isinstance(other, Computation) and _structure(self) == _structure(other)

    def __hash__(self) -> int:
        return hash((self.name, len(self.instructions)))


@dataclass(frozen=True, slots=True, eq=False)
class Module:
    """A program: its computations (callees first) and its entry computation."""

    name: str
    computations: tuple[Computation, ...]
    entry: Computation
    header: Pairs = ()  # module attributes kept as written (num_partitions=8, ...)

    @staticmethod
    def from_entry(name: str, entry: Computation, header: Pairs = (),
                   extra: Iterable[Computation] = ()) -> Module:
        """The module of `entry` and every computation it reaches, callees first."""
        order: list[Computation] = []
        seen: set[int] = set()

        def visit(c: Computation):
            if id(c) in seen:
                return
            seen.add(id(c))
            for callee in c.called_computations():
                visit(callee)
            order.append(c)

        for c in extra:
            visit(c)
        visit(entry)
        # By identity: ``list.remove`` would compare computations structurally (``__eq__``),
        # printing every one before the entry.
        order = [c for c in order if c is not entry] + [entry]
        return Module(name, tuple(order), entry, header)

    def computation(self, name: str) -> Computation:
        for c in self.computations:
            if c.name == name:
                return c
        raise KeyError(f"module {self.name} has no computation {name!r}")

    def header_value(self, key: str) -> str | None:
        for k, v in self.header:
            if k == key:
                return v
        return None

    @property
    def num_partitions(self) -> int:
        return int(self.header_value("num_partitions") or 1)

    @property
    def input_output_aliases(self) -> dict[int, int]:
        """Donated parameter number -> the result it aliases, from XLA's
        ``input_output_alias`` attribute (``{ {1}: (0, {}, may-alias) }``: result 1 reuses
        parameter 0; ``{}`` names the only result)."""
        text = self.header_value("input_output_alias") or ""
        return {int(number): int(output or 0) for output, number in _ALIAS.findall(text)}

    @property
    def num_replicas(self) -> int:
        return int(self.header_value("replica_count") or 1)

    def with_entry(self, entry: Computation) -> Module:
        return Module.from_entry(self.name, entry, self.header)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Module) or self.name != other.name:
            return False
        if self.header != other.header or len(self.computations) != len(other.computations):
            return False
        return all(a == b for a, b in zip(self.computations, other.computations))

    def __hash__(self) -> int:
        return hash((self.name, len(self.computations)))

    # ``str(module)`` is its HLO text: `hlo_printer`, which reads this module, installs
    # `print_module` as ``Module.__str__`` (the ir package always loads it).


def _attr_key(attrs) -> tuple:
    key = []
    for f in fields(attrs):
        value = getattr(attrs, f.name)
        if isinstance(value, Computation):
            value = ("computation", value.name)
        elif isinstance(value, tuple) and value and isinstance(value[0], Computation):
            value = ("computations", tuple(c.name for c in value))
        key.append(value)
    return tuple(key)


def _structure(c: Computation) -> tuple:
    index = {inst: i for i, inst in enumerate(c.instructions)}
    rows = tuple((i.name, i.op.name, tuple(index[o] for o in i.operands), i.shape,
                  _attr_key(i.attrs), str(i.sharding) if i.sharding is not None else None,
                  i.frontend_attributes, i.extras) for i in c.instructions)
    return c.name, rows, index[c.root], c.extras


# ---------------------------------------------------------------------------------------------
# Creating and rewriting


def make_instruction(name: str, op: Op, operands: Iterable[Instruction], attrs=None,
                     shape: Shape | None = None, **extra) -> Instruction:
    """Create an instruction, inferring its shape (or checking the declared one)."""
    operands = tuple(operands)
    count = len(operands)
    if count < op.min_operands or (op.max_operands is not None and count > op.max_operands):
        expected = (op.min_operands if op.min_operands == op.max_operands
                    else f"{op.min_operands}..{op.max_operands or 'n'}")
        raise VerifyError(f"'{op.name}' {name}: takes {expected} operands, got {count}")
    if attrs is None:
        attrs = op.make_attrs()
    try:
        inferred = op.infer(tuple(o.shape for o in operands), attrs, shape)
    except VerifyError as error:
        raise VerifyError(f"{name}: {error}") from None
    if shape is None:
        shape = inferred
    elif not inferred.same_type(shape):
        raise VerifyError(f"{name}: declared shape {shape} differs from the inferred "
                          f"{inferred} of '{op.name}'")
    return Instruction(name, op, operands, shape, attrs, **extra)


RewriteFn = Callable[[Instruction, tuple[Instruction, ...]], Instruction | None]


def has_side_effect(inst: Instruction) -> bool:
    """Whether `inst` must run even when nothing uses its result."""
    if inst.op.name == "custom-call":  # the one op whose side effect is an attribute
        return bool(inst.attrs.custom_call_has_side_effect)
    return inst.op.side_effect


def rewrite(computation: Computation, fn: RewriteFn, name: str | None = None) -> Computation:
    """Build a new computation: `fn(old, new_operands)` returns the replacement, or None to
    keep the instruction (re-created with the new operands when they changed).

    Returns `computation` itself when nothing changed. Otherwise instructions the new root no
    longer reaches are dropped, except parameters and instructions with side effects.
    """
    mapping: dict[Instruction, Instruction] = {}
    changed = False
    for inst in computation.instructions:
        operands = tuple(mapping[o] for o in inst.operands)
        new = fn(inst, operands)
        if new is None:
            new = inst if operands == inst.operands else inst.replace(operands=operands)
        mapping[inst] = new
        changed = changed or new is not inst
    if not changed and (name is None or name == computation.name):
        return computation
    root = mapping[computation.root]
    keep = [mapping[i] for i in computation.instructions
            if i.op.name == "parameter" or has_side_effect(i)]
    return Computation(name or computation.name, topological_order(root, keep), root,
                       computation.extras)


def topological_order(root: Instruction, keep: Iterable[Instruction] = ()) -> tuple:
    """Instructions reachable from `root` (plus `keep`), operands before users."""
    order: list[Instruction] = []
    seen: set[int] = set()
    for start in [*keep, root]:
        stack = [(start, False)]
        while stack:
            inst, expanded = stack.pop()
            if id(inst) in seen and not expanded:
                continue
            if expanded:
                order.append(inst)
                continue
            seen.add(id(inst))
            stack.append((inst, True))
            stack.extend((o, False) for o in reversed(inst.operands) if id(o) not in seen)
    return tuple(order)


def rebind_called(inst: Instruction, replaced: dict[str, Computation]) -> Instruction:
    """`inst` calling the rebuilt versions of its called computations (`replaced` maps old
    computation names to new computations); `inst` itself when none of them changed."""
    changes = {}
    for spec in inst.op.attrs:
        value = getattr(inst.attrs, spec.name)
        if value is None:
            continue
        if spec.kind is AttrKind.COMPUTATION:
            new = replaced.get(value.name, value)
            if new is not value:
                changes[spec.name] = new
        elif spec.kind is AttrKind.COMPUTATIONS:
            new = tuple(replaced.get(c.name, c) for c in value)
            if any(a is not b for a, b in zip(new, value)):
                changes[spec.name] = new
    if not changes:
        return inst
    return inst.replace(attrs=dataclasses.replace(inst.attrs, **changes))


def map_computations(module: Module, fn: Callable[[Computation, dict], Computation]) -> Module:
    """Rebuild every computation callees-first. `fn(computation, replaced)` gets the map of
    already rebuilt callees (old name -> new computation) to use for called computations."""
    replaced: dict[str, Computation] = {}
    for c in module.computations:
        replaced[c.name] = fn(c, replaced)
    return Module(module.name, tuple(replaced[c.name] for c in module.computations),
                  replaced[module.entry.name], module.header)
