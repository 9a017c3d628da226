"""What a reducer computation computes: one recogniser for every pass that asks.

Reductions, scatters, windowed reductions and all-reduces carry a scalar computation. Passes
need to know when it is a plain monoid (to use a fast kernel, to add a VJP, to let partial
results be combined by an all-reduce), and `reducer_kind` says so.

>>> from xla_spmd.ir import F32, ArrayShape, Builder
>>> b = Builder("sum")
>>> x, y = b.parameter(ArrayShape(F32, ()), "x"), b.parameter(ArrayShape(F32, ()), "y")
>>> reducer_kind(b.build(b.op("add", y, x)))
'add'
"""

from __future__ import annotations

from collections.abc import Sequence

from xla_spmd.ir.builder import Builder
from xla_spmd.ir.dtypes import DType
from xla_spmd.ir.module import Computation, Instruction
from xla_spmd.ir.shapes import ArrayShape

# Kind -> the opcode of ``lhs <op> rhs``.
KIND_OPCODES = {"add": "add", "mul": "multiply", "max": "maximum", "min": "minimum",
                "and": "and", "or": "or"}
OPCODE_KINDS = {opcode: kind for kind, opcode in KIND_OPCODES.items()}


def scalar_reducer(kind: str, dtype: DType, name: str,
                   parameter_names: tuple[str, str] = ("lhs", "rhs")) -> Computation:
    """The computation `name` of two `dtype` scalars ``(lhs, rhs) -> lhs <kind> rhs`` (`kind`
    one of ``KIND_OPCODES``), or ``rhs`` for kind 'set' (scatter with replacement): the
    reducer `reducer_kind` calls `kind`. Callers keep one per kind and dtype.

    >>> from xla_spmd.ir import F32
    >>> maximum = scalar_reducer("max", F32, "max_f32", ("x", "y"))
    >>> reducer_kind(maximum), [p.name for p in maximum.parameters], maximum.root.opcode
    ('max', ['x', 'y'], 'maximum')
    """
    b = Builder(name)
    lhs, rhs = (b.parameter(ArrayShape(dtype, ()), n) for n in parameter_names)
    return b.build(rhs if kind == "set" else b.op(KIND_OPCODES[kind], lhs, rhs))


def _is_pair(inst: Instruction, lhs: Instruction, rhs: Instruction) -> bool:
    return len(inst.operands) == 2 and {id(o) for o in inst.operands} == {id(lhs), id(rhs)}


def reducer_kind(computation: Computation) -> str:
    """Which reduction `computation` is.

    'add', 'mul', 'max', 'min', 'and', 'or': exactly ``lhs <op> rhs`` on scalars of one type;
    'set': returns rhs (scatter with replacement); 'keep': returns lhs; 'argmax-like': a
    variadic reducer whose every output is lhs_k or rhs_k picked by selects; 'other'.
    """
    params = computation.parameters
    root = computation.root
    if len(params) == 2:
        lhs, rhs = params
        if root is rhs:
            return "set"
        if root is lhs:
            return "keep"
        kind = OPCODE_KINDS.get(root.opcode)
        if (kind is not None and len(computation.instructions) == 3
                and _is_pair(root, lhs, rhs) and all(
                    isinstance(p.shape, ArrayShape) and p.shape.rank == 0
                    and p.shape.dtype is root.shape.dtype for p in params)):
            return kind
        return "other"
    if len(params) % 2 == 0 and len(params) > 2 and _is_selection(computation):
        return "argmax-like"
    return "other"


def componentwise_kinds(computation: Computation) -> list[str] | None:
    """Per output of a variadic reducer, the simple kind it is, when output k reads only
    lhs_k and rhs_k (independent reductions sharing one instruction); else None."""
    params, root = computation.parameters, computation.root
    n = len(params) // 2
    if root.opcode != "tuple" or len(root.operands) != n:
        return None
    kinds = []
    for k, element in enumerate(root.operands):
        kind = OPCODE_KINDS.get(element.opcode)
        if kind is None or not _is_pair(element, params[k], params[n + k]):
            return None
        kinds.append(kind)
    return kinds


def _is_selection(computation: Computation) -> bool:
    """Whether every output k of the reducer is lhs_k or rhs_k (picked by `select`s)."""
    params: Sequence[Instruction] = computation.parameters
    root = computation.root
    n = len(params) // 2
    if root.opcode != "tuple" or len(root.operands) != n:
        return False
    for k, element in enumerate(root.operands):
        choices = {id(params[k]), id(params[n + k])}
        if id(element) in choices:
            continue
        if element.opcode != "select" or not {id(o) for o in element.operands[1:]} <= choices:
            return False
    return True
