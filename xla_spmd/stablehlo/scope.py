"""The scope of one computation being imported from StableHLO: its instructions and the SSA
values visible in it; rule modules (importer_ops, importer_control, importer_sdy,
importer_shardings) build instructions through it, below the importer driver."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import Computation, Instruction
from xla_spmd.ir.module import make_instruction
from xla_spmd.ir.ops import op_named
from xla_spmd.stablehlo.syntax_tree import Block, OpNode

if TYPE_CHECKING:
    from xla_spmd.stablehlo.importer import ModuleImporter

# A function result's ``jax.result_info`` is kept as frontend attribute
# ``jax.result_info.<result index>`` of the function's root, which HLO text carries.
RESULT_INFO = "jax.result_info"
# On a while whose regions capture outer values (carried as extra loop values in HLO): how
# many of its operands the StableHLO op had, so that the exporter writes the captures back.
WHILE_OPERANDS = "stablehlo.while_operands"
# On a computation: a function other than the entry that is public (others print private).
VISIBILITY = "visibility"
# On a value whose written sharding says nothing (all dims open, e.g. ``[{?}, {?}]`` on a
# mesh): Shardy prints it back as written, where one that propagation leaves all-open (what
# no sharding means) prints none.
OPEN_AS_WRITTEN = "xla_spmd.open_as_written"


def mark_written_open(sharding, frontend=()) -> tuple:
    """`frontend` with `OPEN_AS_WRITTEN` added where `sharding` (one or per value) is given
    and every leaf of it is all-open.

    >>> from xla_spmd.sharding import parse_sharding
    >>> mark_written_open(parse_sharding('<mesh<["a"=2]>, [{?}, {?}]>'))
    (('xla_spmd.open_as_written', 'true'),)
    >>> mark_written_open(parse_sharding('<mesh<["a"=2]>, [{"a", ?}, {?}]>'))
    ()
    """
    from xla_spmd.sharding import TensorSharding, is_unconstrained
    leaves = (sharding,) if isinstance(sharding, TensorSharding) else tuple(sharding or ())
    if leaves and all(isinstance(s, TensorSharding) and is_unconstrained(s) for s in leaves):
        return (*frontend, (OPEN_AS_WRITTEN, "true"))
    return tuple(frontend)


class Scope:
    """One computation being built: its instructions and the SSA values visible in it."""

    def __init__(self, importer: ModuleImporter, name: str):
        self.importer = importer
        self.name = name
        self.instructions: list[Instruction] = []
        self.values: dict[str, Instruction] = {}
        # Line where each SSA name of this computation was defined, to report redefinitions.
        self.defined_at: dict[str, int] = {}
        self.num_parameters = 0
        self.node: OpNode | None = None

    def emit(self, opcode: str, operands=(), shape=None, sharding=None, frontend=(), extras=(),
             name: str | None = None, **attrs) -> Instruction:
        op = op_named(opcode)
        if opcode != "parameter" and attrs.get("custom_call_target") != "Sharding":
            frontend = mark_written_open(sharding, frontend)
        try:
            attr_value = op.make_attrs(**attrs)
            inst = make_instruction(name or self.importer.fresh(opcode), op, operands,
                                    attr_value, shape, sharding=sharding,
                                    frontend_attributes=tuple(frontend), extras=tuple(extras))
        except XlaSpmdError as error:
            raise self.importer.error(self.node, str(error)) from None
        self.instructions.append(inst)
        return inst

    def parameter(self, shape, base: str = "Arg") -> Instruction:
        if any(getattr(leaf, "quantization", None) for leaf in shape.leaves()):
            raise self.importer.error(self.node, "quantized arguments (!quant.uniform) of "
                                                 "functions and regions are not supported")
        number = self.num_parameters
        self.num_parameters += 1
        return self.emit("parameter", shape=shape, parameter_number=number,
                         name=self.importer.fresh(f"{base}_{number}"))

    def unpack(self, inst: Instruction) -> list[Instruction]:
        """get-tuple-element of every element of a tuple-shaped instruction."""
        return [self.emit("get-tuple-element", (inst,), index=i)
                for i in range(len(inst.shape.elements))]

    def define(self, name: str, value: Instruction, line: int = 0) -> None:
        """Bind SSA `name`; a name bound twice in one function is an error (SSA form)."""
        if name in self.values:
            where = self.defined_at.get(name)
            first = f" (first defined on line {where})" if where else ""
            raise self.importer.error(self.node, f"value {name} is defined twice{first}; "
                                                 "every SSA value needs its own name")
        self.values[name] = value
        self.defined_at[name] = line
        self._record_name(name, value)

    def _record_name(self, name: str, value: Instruction) -> None:
        """Remember which MLIR value `value` came from (``%0`` rather than ``%0#0``)."""
        names = self.importer.value_names
        stack = self.importer.function_stack
        entry = self.importer.entry_node
        if stack and entry is not None and stack[-1] != entry.name:
            name = f"{name} in @{stack[-1]}"
        known = names.get(value.name)
        if known is None or ("#" in known and "#" not in name):
            names[value.name] = name

    def lookup(self, name: str) -> Instruction:
        try:
            return self.values[name]
        except KeyError:
            raise self.importer.error(self.node, f"use of undefined value {name}") from None

    def build(self, root: Instruction, extras=()) -> Computation:
        return Computation(self.name, tuple(self.instructions), root, tuple(extras))


def free_values(block: Block) -> list[str]:
    """SSA names a block uses but does not define (in order of first use), nested regions
    included."""
    used: list[str] = []
    seen: set[str] = set()

    def visit(b: Block, outer: set[str]):
        defined = set(outer)
        defined.update(name for name, _ in b.args)
        for op in b.ops:
            for operand in op.operands:
                if operand not in defined and operand.split("#")[0] not in defined \
                        and operand not in seen:
                    seen.add(operand)
                    used.append(operand)
            for region in op.regions:
                visit(region, defined)
            for result in op.results:
                defined.add(result)
                defined.add(result.split("#")[0])

    visit(block, set())
    return used
