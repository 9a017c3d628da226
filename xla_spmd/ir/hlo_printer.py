"""The HLO text printer: `Module` → text XLA's parser accepts; `parse_hlo` reads it back equal.

Conventions (chosen to reproduce the JAX/XLA dumps in tests/data/jax byte for byte):

* operands are printed by name, without their shapes (as current XLA prints them);
* a computation whose `extras` hold ``("signature", "1")`` is printed in XLA's long style:
  ``%`` before every name, the signature ``%c (p: f32[2]) -> f32[2] {`` and ``/*index=5*/``
  comments in long operand lists; any other computation in the short style JAX prints before
  optimization (bare names, no signature). `print_instruction` without a computation uses
  ``%`` names, for error messages;
* tuple shapes carry ``/*index=N*/`` before every fifth element; array shapes print their
  layout (the default one when the layout is None), signatures print none;
* op attributes come in XLA's order (the op's attribute order, called computations last, and
  XLA's own order for collectives); attributes equal to their default are omitted; then
  ``sharding``, ``frontend_attributes`` and the verbatim extras in the order they were read.

>>> from xla_spmd.ir import Builder, F32, ArrayShape, Module
>>> b = Builder("main")
>>> a = b.parameter(ArrayShape(F32, (2, 3)), "a")
>>> c = b.parameter(ArrayShape(F32, (3, 4)), "c")
>>> d = b.dot(a, c, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), name="dot")
>>> print_instruction(d)
'%dot = f32[2,4]{1,0} dot(%a, %c), lhs_contracting_dims={1}, rhs_contracting_dims={0}'
"""

from __future__ import annotations

from typing import TypeGuard

from xla_spmd.ir.attributes import ReplicaGroups, Window, f32_text
from xla_spmd.ir.custom_calls import SDY_MESHES, SDY_SHARDING
from xla_spmd.ir.hlo_lexer import escape
from xla_spmd.ir.literals import format_literal
from xla_spmd.ir.module import AxisSharding, Computation, Instruction, Module
from xla_spmd.ir.ops import AttrKind, Op
from xla_spmd.ir.shapes import ArrayShape, TupleShape

STACK_FRAMES_KEY = "#stack_frames"
SIGNATURE_EXTRA = ("signature", "1")
# A function's place in the StableHLO text it came from (the StableHLO exporter prints
# functions in that order); not HLO: never printed here.
FUNCTION_ORDER = "function_order"

_COLLECTIVE_ORDER = {
    "all-reduce": ("channel_id", "replica_groups", "constrain_layout",
                   "use_global_device_ids", "to_apply"),
    "reduce-scatter": ("channel_id", "replica_groups", "constrain_layout",
                       "use_global_device_ids", "dimensions", "to_apply"),
    "all-gather": ("channel_id", "replica_groups", "constrain_layout", "dimensions",
                   "use_global_device_ids"),
    "all-to-all": ("channel_id", "replica_groups", "constrain_layout", "dimensions"),
    "collective-permute": ("channel_id", "source_target_pairs"),
    "collective-broadcast": ("channel_id", "replica_groups"),
}
_IN_PARENTHESES = ("parameter_number", "literal")
_ALWAYS_PRINTED = {("topk", "largest")}  # XLA prints these even at their default


def shape_text(shape, layout: bool = True) -> str:
    """A shape as XLA prints it, with ``/*index=N*/`` before every fifth tuple element."""
    if isinstance(shape, TupleShape):
        parts = [("" if i == 0 or i % 5 else f"/*index={i}*/") + shape_text(e, layout)
                 for i, e in enumerate(shape.elements)]
        return "(" + ", ".join(parts) + ")"
    assert isinstance(shape, ArrayShape)
    return shape.to_text(layout)


def _attribute_order(op: Op) -> list[str]:
    base = op.name[:-len("-start")] if op.name.endswith("-start") else op.name
    kinds = {a.name: a.kind for a in op.attrs if a.name not in _IN_PARENTHESES}
    names = list(kinds)
    first = [n for n in _COLLECTIVE_ORDER.get(base, ()) if n in names]
    rest = [n for n in names if n not in first]
    called = [n for n in rest if kinds[n] in (AttrKind.COMPUTATION, AttrKind.COMPUTATIONS)]
    return first + [n for n in rest if n not in called] + called


def _value_text(kind: AttrKind, value, percent: str) -> str | None:
    if kind is AttrKind.INT:
        return str(value)
    if kind is AttrKind.FLOAT:
        return f32_text(value)
    if kind is AttrKind.BOOL:
        return "true" if value else "false"
    if kind is AttrKind.STRING:
        return f'"{escape(value)}"'
    if kind is AttrKind.RAW:
        return str(value)
    if kind is AttrKind.INT_LIST:
        return "{" + ",".join(map(str, value)) + "}"
    if kind is AttrKind.INT_PAIRS:
        return "{" + ",".join("{" + ",".join(map(str, p)) + "}" for p in value) + "}"
    if kind is AttrKind.REPLICA_GROUPS:
        return replica_groups_text(value)
    if kind is AttrKind.SLICE:
        strided = any(d.stride != 1 for d in value)
        return "{" + ", ".join(f"[{d.start}:{d.limit}" + (f":{d.stride}]" if strided else "]")
                               for d in value) + "}"
    if kind is AttrKind.PADDING:
        interior = any(d.interior for d in value)
        return "x".join(f"{d.low}_{d.high}" + (f"_{d.interior}" if interior else "")
                        for d in value)
    if kind is AttrKind.WINDOW:
        return window_text(value) if value.rank else None
    if kind is AttrKind.CONV_DIMS:
        return value.to_labels()
    if kind is AttrKind.PRECISION_LIST:
        return "{" + ",".join(p.value for p in value) + "}"
    if kind is AttrKind.COMPUTATION:
        return percent + value.name
    if kind is AttrKind.COMPUTATIONS:
        return "{" + ", ".join(percent + c.name for c in value) + "}"
    if kind is AttrKind.LITERAL:
        return format_literal(value)
    return value.value  # the enums: direction, comparison type, rng, fft


def replica_groups_text(groups: ReplicaGroups) -> str:
    if groups.mesh_axes_text is not None:
        return groups.mesh_axes_text
    if groups.group_dims is not None and groups.reshape_dims is not None:  # iota
        text = (f"[{','.join(map(str, groups.group_dims))}]<="
                f"[{','.join(map(str, groups.reshape_dims))}]")
        if groups.transpose is not None:
            text += f"T({','.join(map(str, groups.transpose))})"
        return text
    assert groups.explicit is not None, "replica groups are iota or listed"
    return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups.explicit) + "}"


def window_text(window: Window) -> str:
    """``{size=3x3 stride=2x2 pad=0_1x0_1 ...}``: sub-fields at their default are left out."""
    dims = window.dims

    def field(name: str, values) -> str:
        return f"{name}=" + "x".join(values)

    parts = [field("size", (str(d.size) for d in dims))]
    if any(d.stride != 1 for d in dims):
        parts.append(field("stride", (str(d.stride) for d in dims)))
    if any(d.padding_low or d.padding_high for d in dims):
        parts.append(field("pad", (f"{d.padding_low}_{d.padding_high}" for d in dims)))
    if any(d.lhs_dilation != 1 for d in dims):
        parts.append(field("lhs_dilate", (str(d.lhs_dilation) for d in dims)))
    if any(d.rhs_dilation != 1 for d in dims):
        parts.append(field("rhs_dilate", (str(d.rhs_dilation) for d in dims)))
    if any(d.reversal for d in dims):
        parts.append(field("rhs_reversal", ("1" if d.reversal else "0" for d in dims)))
    return "{" + " ".join(parts) + "}"


def _frontend_value(value: str) -> str:
    """Unquoted when the value is a braced group (XLA's LexesAsJsonDict), else quoted."""
    if value.startswith("{") and value.endswith("}") and _balanced(value):
        return value
    return f'"{escape(value)}"'


def _balanced(text: str) -> bool:
    depth, in_string, escaped = 0, False, False
    for i, c in enumerate(text):
        if in_string:
            escaped = c == "\\" and not escaped
            if c == '"' and not escaped:
                in_string = False
            continue
        if c == '"':
            in_string = True
        elif c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                return False
    return depth == 0 and not in_string


def _attributes(inst: Instruction, percent: str) -> list[str]:
    op = inst.op
    out = []
    for name in _attribute_order(op):
        spec = op.attr(name)
        assert spec is not None  # `name` is one of op's attributes
        value = getattr(inst.attrs, name.replace("-", "_"))
        at_default = not spec.required and value == spec.default
        if value is None or (at_default and (op.name, name) not in _ALWAYS_PRINTED):
            continue
        text = _value_text(spec.kind, value, percent)
        if text is not None:
            out.append(f"{name}={text}")
    frontend = list(inst.frontend_attributes)
    if inst.sharding is not None:
        gspmd, sdy = sharding_texts(inst.sharding)
        out.append(f"sharding={gspmd}")
        if sdy is not None:  # XLA prints an axis-based sharding beside its GSPMD form
            frontend = [(k, v) for k, v in frontend if k != SDY_SHARDING] + [(SDY_SHARDING, sdy)]
    if frontend:
        out.append("frontend_attributes={" + ",".join(
            f"{k}={_frontend_value(v)}" for k, v in frontend) + "}")
    out.extend(f"{name}={text}" for name, text in inst.extras)
    return out


def _instruction_text(inst: Instruction, percent: str, index_comments: bool) -> str:
    op = inst.op.name
    if op == "parameter":
        operands = str(inst.attrs.parameter_number)
    elif op == "constant":
        operands = format_literal(inst.attrs.literal, inst.shape)
    else:
        operands = ", ".join(
            (f"/*index={i}*/" if index_comments and i and i % 5 == 0 else "")
            + percent + o.name for i, o in enumerate(inst.operands))
    text = f"{percent}{inst.name} = {shape_text(inst.shape)} {op}({operands})"
    attributes = _attributes(inst, percent)
    return text + "".join(", " + a for a in attributes)


def _long_style(computation: Computation | None) -> bool:
    return computation is None or SIGNATURE_EXTRA in computation.extras


def print_instruction(inst: Instruction, computation: Computation | None = None) -> str:
    """One instruction on one line, without indentation or ``ROOT`` (for error messages)."""
    long = _long_style(computation)
    return _instruction_text(inst, "%" if long else "", long)


def print_computation(computation: Computation, is_entry: bool = False) -> str:
    long = _long_style(computation)
    percent = "%" if long else ""
    head = ("ENTRY " if is_entry else "") + percent + computation.name
    if long:
        params = ", ".join(f"{p.name}: {shape_text(p.shape, False)}"
                           for p in computation.parameters)
        head += f" ({params}) -> {shape_text(computation.root.shape, False)}"
    lines = [head + " {"]
    for inst in computation.instructions:
        root = "ROOT " if inst is computation.root else ""
        lines.append("  " + root + _instruction_text(inst, percent, long))
    tail = "".join(f", {k}={v}" for k, v in computation.extras
                   if (k, v) != SIGNATURE_EXTRA and k != FUNCTION_ORDER)
    lines.append("}" + tail)
    return "\n".join(lines)


def _is_axis_based(sharding: object) -> TypeGuard[AxisSharding]:
    """Axis-based shardings (xla_spmd.sharding.TensorSharding, which this layer may not
    import) offer their GSPMD form and their Shardy body text."""
    return hasattr(sharding, "to_hlo_sharding") and hasattr(sharding, "body_text")


def sharding_texts(sharding) -> tuple[str, str | None]:
    """The `sharding=` text, and for axis-based shardings (or tuples of them) the
    `xla.sdy.sharding` per-value text XLA prints beside it."""
    elements = sharding if isinstance(sharding, tuple) else (sharding,)
    if not elements or not all(_is_axis_based(e) for e in elements):
        return str(sharding), None
    gspmd = [str(e.to_hlo_sharding()) for e in elements]
    if isinstance(sharding, tuple):
        text = "{" + ", ".join((f"/*index={i}*/" if i and i % 5 == 0 else "") + g
                               for i, g in enumerate(gspmd)) + "}"
    else:
        text = gspmd[0]
    sdy = "#sdy.sharding_per_value<[" + ", ".join(f"<{e.body_text()}>" for e in elements)
    return text, sdy + "]>"


def _mesh_header(module: Module) -> list[tuple[str, str]]:
    """The `xla.sdy.meshes` module attribute for the meshes of axis-based shardings, when
    the header does not declare them already."""
    if any(k == "frontend_attributes" and SDY_MESHES in v for k, v in module.header):
        return []
    meshes: dict[str, object] = {}
    for computation in module.computations:
        for inst in computation.instructions:
            for e in inst.sharding_leaves():
                if _is_axis_based(e) and e.mesh_name:
                    meshes.setdefault(e.mesh_name, e.mesh)
    if not meshes:
        return []
    body = ", ".join(f"{name} = #sdy.mesh{mesh}" for name, mesh in meshes.items())
    return [("frontend_attributes", f"{{{SDY_MESHES}={{{body}}}}}")]


def print_module(module: Module) -> str:
    """The module as HLO text (header, stack-frame tables if any, computations callees
    first), ending with a newline."""
    header = "HloModule " + module.name + "".join(
        f", {k}={v}" for k, v in [*module.header, *_mesh_header(module)]
        if k != STACK_FRAMES_KEY)
    parts = [header + "\n\n"]
    stack_frames = module.header_value(STACK_FRAMES_KEY)
    if stack_frames:
        parts.append(stack_frames + "\n\n\n")
    parts.append("\n\n".join(print_computation(c, c is module.entry)
                             for c in module.computations))
    return "".join(parts) + "\n"


def _module_text(self: Module) -> str:
    """``str(module)``: `print_module`."""
    return print_module(self)


# A module prints as its HLO text. The printer is above `module` (it reads instructions and
# computations), so it gives `Module` its ``__str__`` rather than being imported by it.
Module.__str__ = _module_text
