"""The HLO text parser: XLA's ``HloModule`` text → `Module`.

Accepts what ``HloModule::ToString`` prints in its two styles — the long one (``%`` names,
computation signatures, ``/*index=5*/`` comments) and the short one JAX prints before
optimization (bare names, no signatures) — plus typed operands (``f32[2]{0} %x``) of older
dumps. Invariants:

* computations are built callees first whatever their order in the text: bodies are located
  first, then each is parsed on demand when an instruction names it;
* instructions are built through `make_instruction`, so shapes are inferred and checked as they
  are read; a `VerifyError` becomes a `ParseError` at the instruction's line;
* what the IR does not model is kept verbatim: module attributes (`Module.header`, in order,
  plus the stack-frame tables under the key ``#stack_frames``), ``metadata``,
  ``backend_config`` and XLA's other generic attributes, and every attribute of a
  custom-call (`Instruction.extras`), and the print style
  of each computation (``("signature", "1")`` in `Computation.extras` for the long style);
* a rank ≥ 1 layout equal to the default (major-to-minor) is stored as None, so a shape
  printed with or without its default layout reads back equal.

>>> m = parse_hlo('''HloModule m
... ENTRY e {
...   x = f32[2,3]{1,0} parameter(0)
...   ROOT t = f32[3,2]{1,0} transpose(x), dimensions={1,0}
... }''')
>>> m.entry.root.attrs.dimensions
(1, 0)
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from xla_spmd.errors import (
    MAX_NESTING,
    TOO_DEEP,
    ParseError,
    ShardingError,
    VerifyError,
    XlaSpmdError,
)
from xla_spmd.ir import opdefs, opdefs_compute, opdefs_program  # noqa: F401 (fill OPS)
from xla_spmd.ir.attributes import Window
from xla_spmd.ir.dtypes import TOKEN, DType
from xla_spmd.ir.hlo_attr_values import AttributeValueParser
from xla_spmd.ir.hlo_lexer import Scanner
from xla_spmd.ir.hlo_printer import SIGNATURE_EXTRA, STACK_FRAMES_KEY
from xla_spmd.ir.hlo_sharding import HloSharding
from xla_spmd.ir.literals import parse_literal
from xla_spmd.ir.module import Computation, Instruction, Module, make_instruction
from xla_spmd.ir.ops import OPS, AttrKind, Op
from xla_spmd.ir.shapes import ArrayShape, Shape, TupleShape

_STACK_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_OPCODE_RE = re.compile(r"[a-z][a-z0-9\-]*")
_ATTR_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_DTYPE_RE = re.compile(r"[a-z][a-z0-9]*(?=\[)")
# Ops whose result XLA's parser builds without reading the written shape (CreatePartitionId,
# CreateReplicaId): always u32[].
_WRITTEN_SHAPE_IGNORED = frozenset({"partition-id", "replica-id"})
_GENERIC_ATTRS = ("metadata", "backend_config", "statistics", "control-predecessors",
                  "origin", "result_accuracy", "schedule")


def parse_hlo(text: str, filename: str | None = None) -> Module:
    """Parse XLA HLO text into a `Module`; raises `ParseError` naming line and column."""
    parser = _ModuleParser(text, filename)
    try:
        return parser.parse()
    except RecursionError:  # a nesting no explicit limit caught; the cursor is in it
        raise parser.s.error(TOO_DEEP) from None


# ---------------------------------------------------------------------------------------------
# Records of the first pass


@dataclass
class _ComputationRecord:
    name: str
    is_entry: bool
    has_signature: bool
    body_start: int
    body_end: int
    name_pos: int
    extras: tuple = ()
    built: Computation | None = None
    building: bool = False


@dataclass
class _InstructionRecord:
    name: str
    pos: int
    shape: Shape | None  # None: omitted, inferred from the operands
    op: Op
    operands: list = field(default_factory=list)  # (name, position)
    attrs: dict = field(default_factory=dict)
    sharding: HloSharding | None = None
    frontend_attributes: tuple = ()
    extras: list = field(default_factory=list)
    is_root: bool = False
    built: Instruction | None = None
    building: bool = False


class _ModuleParser:
    def __init__(self, text: str, filename: str | None):
        self.s = Scanner(text, filename)
        self.records: dict[str, _ComputationRecord] = {}
        self.order: list[Computation] = []

    # -- module -------------------------------------------------------------------------------

    def parse(self) -> Module:
        s = self.s
        if s.peek_word() != "HloModule":
            raise s.fail("'HloModule' at the start of the module")
        s.word()
        name, _ = s.name("the module name")
        header = []
        while s.accept(","):
            key = s.match(_ATTR_NAME_RE, "a module attribute name")
            s.expect("=", f"after module attribute '{key}'")
            header.append((key, s.raw_value()))
        if s.peek_word() in _STACK_SECTIONS:
            header.append((STACK_FRAMES_KEY, self._stack_frames()))
        while not s.at_end():
            self._locate_computation()
        if not self.records:
            raise s.fail("a computation")
        for record in list(self.records.values()):
            self._build(record.name, s.pos)
        entries = [r for r in self.records.values() if r.is_entry]
        if len(entries) > 1:
            raise s.error(f"two ENTRY computations: {entries[0].name} and {entries[1].name}",
                          entries[1].name_pos)
        entry = (entries[0] if entries else list(self.records.values())[-1]).built
        assert entry is not None  # every record was built above
        return Module(name, tuple(self.order), entry, tuple(header))

    def _stack_frames(self) -> str:
        """The stack-frame tables printed between the header and the computations, verbatim."""
        s = self.s
        start = end = s.pos
        text = s.text
        while end < len(text):
            line_end = text.find("\n", end)
            line_end = len(text) if line_end < 0 else line_end
            line = text[end:line_end].strip()
            if line and not (line[0].isdigit() or line in _STACK_SECTIONS):
                break
            end = line_end + 1
        s.pos = min(end, len(text))
        return text[start:s.pos].rstrip()

    def _locate_computation(self) -> None:
        s = self.s
        is_entry, name, name_pos = s.marked_name("ENTRY", "a computation name")
        if name in self.records:
            raise s.error(f"computation {name} is defined twice", name_pos)
        has_signature = s.at("(")
        if has_signature:
            s.balanced()
            s.expect("->", "after the parameter list of a computation")
            self.shape()
        if not s.at("{"):
            raise s.fail(f"'{{' to open the body of computation {name}")
        body_start = s.pos + 1
        s.balanced()
        body_end = s.pos - 1
        extras = []
        while s.accept(","):
            key = s.match(_ATTR_NAME_RE, "a computation attribute name")
            s.expect("=", f"after computation attribute '{key}'")
            extras.append((key, s.raw_value()))
        if has_signature:
            extras.insert(0, SIGNATURE_EXTRA)
        self.records[name] = _ComputationRecord(name, is_entry, has_signature, body_start,
                                                body_end, name_pos, tuple(extras))

    def _build(self, name: str, use_pos: int) -> Computation:
        record = self.records.get(name)
        if record is None:
            close = difflib.get_close_matches(name, list(self.records), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise self.s.error(f"unknown computation {name}{hint}", use_pos)
        if record.built is not None:
            return record.built
        if record.building:
            raise self.s.error(f"computation {name} calls itself (recursion is not allowed)",
                               use_pos)
        record.building = True
        saved = self.s.pos
        self.s.pos = record.body_start
        record.built = _ComputationParser(self, record).parse()
        self.s.pos = saved
        self.order.append(record.built)
        return record.built

    # -- shapes -------------------------------------------------------------------------------

    def shape(self, depth: int = 0) -> Shape:
        s = self.s
        if s.accept("("):
            if depth >= MAX_NESTING:
                raise s.error(f"tuple shape {TOO_DEEP}", s.pos - 1)
            elements = []
            if not s.accept(")"):
                while True:
                    elements.append(self.shape(depth + 1))
                    if s.accept(")"):
                        break
                    s.expect(",", "or ')' in a tuple shape")
            return TupleShape(tuple(elements))
        start = s.pos
        type_name = s.match(_DTYPE_RE, "a shape")
        try:
            dtype = DType.named(type_name)
        except XlaSpmdError:
            raise s.error(f"unknown element type '{type_name}'", start) from None
        s.expect("[")
        dims = []
        if not s.accept("]"):
            while True:
                if s.at("<=") or s.at("?"):
                    raise s.error("dynamic dimensions are not supported; give static sizes")
                dims.append(s.integer("a dimension size"))
                if s.accept("]"):
                    break
                s.expect(",", "or ']' in the dimensions of a shape")
        layout = None
        if s.text.startswith("{", s.pos):  # a layout follows the dims without blanks
            layout = self._layout(len(dims))
        if dtype is TOKEN:
            return ArrayShape(TOKEN, ())
        if dims and layout == tuple(range(len(dims) - 1, -1, -1)):
            layout = None
        try:
            return ArrayShape(dtype, tuple(dims), layout)
        except VerifyError as error:
            raise s.error(str(error), start) from None

    def _layout(self, rank: int) -> tuple[int, ...]:
        s = self.s
        s.expect("{")
        minor_to_major = []
        while not s.at("}") and not s.at(":"):
            minor_to_major.append(s.integer("a layout dimension"))
            if not s.accept(","):
                break
        if s.at(":"):  # tiling, memory space, ...: not modelled, skipped
            self._skip_to_brace()
            return tuple(minor_to_major)
        s.expect("}", "to close a layout")
        if rank == 0 and not minor_to_major:
            return ()
        return tuple(minor_to_major)

    def _skip_to_brace(self) -> None:
        s = self.s
        depth = 0
        while s.pos < len(s.text):
            c = s.text[s.pos]
            s.pos += 1
            if c in "({[":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif c == "}":
                if depth == 0:
                    return
                depth -= 1
        raise s.error("unterminated layout")


class _ComputationParser(AttributeValueParser):
    """Parses one computation body into instruction records, then builds them in order."""

    def __init__(self, module: _ModuleParser, record: _ComputationRecord):
        self.module = module
        self.s = module.s
        self.record = record
        self.instructions: dict[str, _InstructionRecord] = {}
        self.built: list[Instruction] = []

    def parse(self) -> Computation:
        s, record = self.s, self.record
        while True:
            s.skip()
            if s.pos >= record.body_end:
                break
            inst = self.instruction()
            if inst.name in self.instructions:
                raise s.error(f"instruction name {inst.name} is used twice in {record.name}",
                              inst.pos)
            self.instructions[inst.name] = inst
        if not self.instructions:
            raise s.error(f"computation {record.name} has no instructions", record.name_pos)
        self.check_parameter_numbers()
        for inst in self.instructions.values():
            self.build(inst)
        roots = [i for i in self.instructions.values() if i.is_root]
        if len(roots) > 1:
            raise s.error(f"computation {record.name} has two ROOT instructions", roots[1].pos)
        root = (roots[0] if roots else list(self.instructions.values())[-1]).built
        assert root is not None  # every instruction was built above
        return Computation(record.name, tuple(self.built), root, record.extras)

    def check_parameter_numbers(self) -> None:
        """XLA numbers a computation's n parameters 0..n-1, each number once."""
        params = [i for i in self.instructions.values() if i.op.name == "parameter"]
        seen: dict[int, str] = {}
        for inst in params:
            number = inst.attrs["parameter_number"]
            if number in seen:
                raise self.s.error(f"parameter number {number} of %{inst.name} is already "
                                   f"used by %{seen[number]} in computation "
                                   f"{self.record.name}; number its {len(params)} parameters "
                                   f"0..{len(params) - 1}, each once", inst.pos)
            if not 0 <= number < len(params):
                raise self.s.error(f"parameter number {number} of %{inst.name} is out of "
                                   f"range: computation {self.record.name} has "
                                   f"{len(params)} parameters, numbered 0..{len(params) - 1}",
                                   inst.pos)
            seen[number] = inst.name

    def build(self, inst: _InstructionRecord) -> Instruction:
        if inst.built is not None:
            return inst.built
        if inst.building:
            raise self.s.error(f"instruction {inst.name} is its own operand (cycle)", inst.pos)
        inst.building = True
        operands = []
        for name, pos in inst.operands:
            operand = self.instructions.get(name)
            if operand is None:
                raise self.s.error(f"unknown instruction %{name} used as operand of "
                                   f"%{inst.name}", pos)
            operands.append(self.build(operand))
        for spec in inst.op.attrs:  # XLA omits the window of a convolution without spatial dims
            if spec.kind is AttrKind.WINDOW and spec.required and spec.name not in inst.attrs:
                inst.attrs[spec.name] = Window(())
        try:
            op = inst.op
            attrs = op.make_attrs(**inst.attrs)
            # XLA builds these with their fixed u32[] result, whatever shape is written
            # (``s32[] partition-id()`` in its tests): so do we.
            shape = None if op.name in _WRITTEN_SHAPE_IGNORED else inst.shape
            inst.built = make_instruction(
                inst.name, inst.op, operands, attrs, shape, sharding=inst.sharding,
                frontend_attributes=inst.frontend_attributes, extras=tuple(inst.extras))
            if inst.sharding is not None and (shape is None or op.name == "outfeed"):
                inst.sharding.check_shape(_sharded_shape(inst.built), f"%{inst.name}")
        except ShardingError as error:
            raise self.s.error(f"%{inst.name}: {error}", inst.pos) from None
        except VerifyError as error:
            raise self.s.error(str(error), inst.pos) from None
        self.built.append(inst.built)
        return inst.built

    # -- one instruction ----------------------------------------------------------------------

    def instruction(self) -> _InstructionRecord:
        s = self.s
        is_root, name, pos = s.marked_name("ROOT", "an instruction name")
        s.expect("=", f"after instruction name {name}")
        s.skip()
        # XLA's parser infers an omitted shape (``min = minimum(a, b)`` in a reducer).
        omitted = not s.at("(") and _DTYPE_RE.match(s.text, s.pos) is None
        shape = None if omitted else self.module.shape()
        s.skip()
        opcode_pos = s.pos
        opcode = s.match(_OPCODE_RE, "an opcode")
        op = OPS.get(opcode)
        if op is None:
            close = difflib.get_close_matches(opcode, list(OPS), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise s.error(f"unknown opcode '{opcode}'{hint}", opcode_pos)
        if shape is None and op.name in ("parameter", "constant"):
            raise s.error(f"{op.name} {name} needs its shape (e.g. f32[2] {op.name}(...))",
                          opcode_pos)
        inst = _InstructionRecord(name, pos, shape, op, is_root=is_root)
        self.operands(inst)
        while s.accept(","):
            self.attribute(inst)
        return inst

    def operands(self, inst: _InstructionRecord) -> None:
        s = self.s
        if not s.at("("):
            raise s.fail(f"'(' after opcode '{inst.op.name}'")
        if inst.op.name == "constant":
            s.skip()
            start = s.pos + 1
            text = s.balanced()[1:-1]
            try:
                inst.attrs["literal"] = parse_literal(text, inst.shape)
            except ParseError as error:
                raise s.error(f"constant {inst.name}: {error.message}",
                              start + (error.column or 1) - 1) from None
            return
        s.expect("(")
        if inst.op.name == "parameter":
            inst.attrs["parameter_number"] = s.integer("a parameter number")
            s.expect(")", "after the parameter number")
            return
        if s.accept(")"):
            return
        while True:
            s.skip()
            if s.at("(") or _DTYPE_RE.match(s.text, s.pos):
                self.module.shape()  # older dumps type every operand
            s.skip()
            pos = s.pos
            name, _ = s.name("an operand name")
            if s.at("("):
                raise s.error("nested instructions as operands are not supported; name the "
                              "operand instruction", pos)
            inst.operands.append((name, pos))
            if s.accept(")"):
                return
            if not s.accept(","):
                raise s.fail("',' or ')' after operand")

    def attribute(self, inst: _InstructionRecord) -> None:
        s = self.s
        s.skip()
        pos = s.pos
        name = s.match(_ATTR_NAME_RE, "an attribute name")
        s.expect("=", f"after attribute name '{name}'")
        op = inst.op
        spec = op.attr(name) if name not in ("parameter_number", "literal") else None
        if spec is not None:
            if name in inst.attrs:
                raise s.error(f"attribute '{name}' is given twice", pos)
            inst.attrs[name] = self.value(spec, op)
        elif name == "sharding":
            s.skip(newlines=False)
            start = s.pos
            text = s.balanced() if s.at("{") else s.raw_value()
            try:
                inst.sharding = HloSharding.parse(text)
                if inst.shape is not None and op.name != "outfeed":  # else checked once built
                    inst.sharding.check_shape(inst.shape, f"%{inst.name}")
            except (ParseError, ShardingError) as error:  # re-anchor its column in the file
                raise s.error(f"%{inst.name}: {getattr(error, 'message', error)}",
                              start + (getattr(error, "column", None) or 1) - 1) from None
        elif name == "frontend_attributes":
            inst.frontend_attributes = self.frontend_attributes()
        elif name in _GENERIC_ATTRS or op.name == "custom-call":
            inst.extras.append((name, s.raw_value()))
        else:
            # XLA's parser refuses an attribute the op does not have; so do we.
            names = [a.name for a in op.attrs]
            close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
            hint = (f"; did you mean '{close[0]}'?" if close else "")
            known = f" (it has {', '.join(names)})" if names else " (it takes none)"
            raise s.error(f"'{op.name}' has no attribute '{name}'{hint}{known}", pos)

    def frontend_attributes(self) -> tuple[tuple[str, str], ...]:
        s = self.s
        s.expect("{", "to open frontend_attributes")
        pairs = []
        while not s.accept("}"):
            key = s.string() if s.at('"') else s.word("a frontend attribute name")
            s.expect("=", f"after frontend attribute '{key}'")
            value = s.string() if s.at('"') else s.raw_value()
            pairs.append((key, value))
            if not s.accept(","):
                s.expect("}", "or ',' in frontend_attributes")
                break
        return tuple(pairs)

__all__ = ["parse_hlo", "STACK_FRAMES_KEY", "SIGNATURE_EXTRA"]


def _sharded_shape(inst: Instruction) -> Shape:
    """The shape `inst`'s sharding describes: its own, but an outfeed's is its data's (XLA
    also writes the data's and the token's, as a tuple of one more element).

    >>> m = parse_hlo("HloModule m\\nENTRY e {\\n  t = token[] after-all()\\n"
    ...               "  p = (f32[4], f32[2]) parameter(0)\\n  ROOT o = token[] outfeed(p, t)\\n}")
    >>> str(_sharded_shape(m.entry.root))
    '(f32[4], f32[2])'
    """
    if inst.op.name != "outfeed":
        return inst.shape
    data, token = (o.shape for o in inst.operands)
    written = inst.sharding
    data_leaves = len(data.leaves())
    if isinstance(written, HloSharding) and written.is_tuple \
            and len(written.elements) == data_leaves + 1:
        return TupleShape((data, token))
    return data
