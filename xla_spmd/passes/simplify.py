"""Algebraic simplification: a table of local rewrites, one row per pattern.

Each row is ``(opcodes, function)``; the function gets the instruction (with its operands
already simplified) and returns its replacement, or None when the pattern does not match.
The driver applies the rows of an instruction's opcode until none matches (at most
`MAX_ROUNDS` times), in one topological walk, so chains like
``transpose(transpose(reshape(reshape(x))))`` collapse in a single pass.

Invariants: a row never changes a value (up to the sign of a floating zero in ``x + 0``, as
XLA's algebraic simplifier); forwarding an operand in place of an instruction that carries a
sharding only happens when the operand has the same sharding (unless `respect_shardings`
is off, as after partitioning); new instructions keep the
replaced instruction's name (or get a fresh one), so names stay unique. Constant folding is
done here on the literals with numpy, for small integer arrays only (the offsets and tables
the partitioner emits); nothing imports the reference evaluator.

Example: ``%t = transpose(transpose(%x), dimensions={1,0}), dimensions={1,0}`` becomes `%x`.

>>> from xla_spmd.ir import parse_hlo
>>> m = parse_hlo('''HloModule m
... ENTRY %e (x: f32[2,3]) -> f32[2,3] {
...   %x = f32[2,3] parameter(0)
...   %a = f32[3,2] transpose(%x), dimensions={1,0}
...   ROOT %b = f32[2,3] transpose(%a), dimensions={1,0}
... }''')
>>> simplify(m).entry.root.name
'x'
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xla_spmd.ir import (
    ArrayShape,
    Computation,
    Instruction,
    Literal,
    Module,
    SliceDim,
    TupleShape,
    make_instruction,
    op_named,
)
from xla_spmd.ir.builder import NameGenerator
from xla_spmd.ir.module import rewrite
from xla_spmd.passes.pass_manager import (
    Pass,
    shardings_agree,
    transform_module,
)

MAX_ROUNDS = 8
SMALL_CONSTANT = 16      # broadcast of a scalar constant becomes a constant up to this size
FOLD_LIMIT = 1024        # integer constant folding up to this many elements


class _Context:
    """Per-computation state of the rows: fresh names and memoized splat values."""

    def __init__(self, computation: Computation, respect_shardings: bool = True):
        self.computation = computation
        self.respect_shardings = respect_shardings
        self._names: NameGenerator | None = None
        self._splats: dict[int, tuple] = {}

    def fresh(self, base: str) -> str:
        if self._names is None:
            self._names = NameGenerator(i.name for i in self.computation.instructions)
        return self._names(base)

    def forward(self, inst: Instruction, replacement: Instruction) -> Instruction | None:
        """`replacement` in place of `inst` when their types (and shardings) agree."""
        if not replacement.shape.same_type(inst.shape):
            return None
        if self.respect_shardings and not shardings_agree(inst, replacement):
            return None
        return replacement

    def splat(self, inst: Instruction):
        """The one value every element of `inst` has (constant or broadcast constant)."""
        entry = self._splats.get(id(inst))
        if entry is None:  # the instruction is kept in the entry so its id stays unique
            entry = self._splats[id(inst)] = (inst, _splat(inst))
        return entry[1]


_NONE = object()


def _splat(inst: Instruction):
    if inst.opcode == "broadcast":
        inst = inst.operands[0]
    if inst.opcode != "constant" or inst.attrs.literal.is_tuple:
        return _NONE
    array = inst.attrs.literal.array
    if array.size == 0:
        return _NONE
    first = array.flat[0]
    if array.size > 1 and not bool(np.all(array == first)):
        return _NONE
    return first


def _is(ctx: _Context, inst: Instruction, value) -> bool:
    found = ctx.splat(inst)
    return found is not _NONE and bool(found == value)


def _constant(name: str, array: np.ndarray, like: Instruction) -> Instruction:
    shape = like.shape
    return make_instruction(name, op_named("constant"), (),
                            op_named("constant").make_attrs(literal=Literal(np.array(array))),
                            ArrayShape(shape.dtype, shape.dims, shape.layout),
                            sharding=like.sharding)


def _constant_array(inst: Instruction) -> np.ndarray | None:
    if inst.opcode != "constant" or inst.attrs.literal.is_tuple:
        return None
    return inst.attrs.literal.array


def _small_integer(*insts: Instruction) -> bool:
    return all(isinstance(i.shape, ArrayShape) and i.shape.num_elements <= FOLD_LIMIT
               and (i.shape.dtype.is_integer) for i in insts)


# ---------------------------------------------------------------------------------------------
# The rows


def identity_operand(value: int, commutative: bool = True):
    """A row forwarding the other operand when one is the constant `value` (the op's
    identity); only the rhs counts when the op is not commutative."""
    def row(inst, ctx):
        lhs, rhs = inst.operands
        if _is(ctx, rhs, value):
            return ctx.forward(inst, lhs)
        if commutative and _is(ctx, lhs, value):
            return ctx.forward(inst, rhs)
        return None
    return row


add_zero = identity_operand(0)
subtract_zero = identity_operand(0, commutative=False)
multiply_one = identity_operand(1)


def multiply_zero(inst, ctx):
    if not inst.shape.dtype.is_integer:
        return None
    if not any(_is(ctx, o, 0) for o in inst.operands):
        return None
    return _zeros_like(inst, ctx)


def _zeros_like(inst, ctx):
    shape = inst.shape
    if shape.num_elements <= SMALL_CONSTANT:
        return _constant(inst.name, np.zeros(shape.dims, shape.dtype.numpy), inst)
    scalar = make_instruction(ctx.fresh(inst.name + ".zero"), op_named("constant"), (),
                              op_named("constant").make_attrs(
                                  literal=Literal(np.zeros((), shape.dtype.numpy))),
                              ArrayShape(shape.dtype, ()))
    return make_instruction(inst.name, op_named("broadcast"), (scalar,),
                            op_named("broadcast").make_attrs(dimensions=()), shape,
                            sharding=inst.sharding)


def negate_negate(inst, ctx):
    (x,) = inst.operands
    return ctx.forward(inst, x.operands[0]) if x.opcode == "negate" else None


def reshape_reshape(inst, ctx):
    (x,) = inst.operands
    if x.opcode != "reshape":
        return None
    return inst.replace(operands=x.operands)


def reshape_same(inst, ctx):
    (x,) = inst.operands
    return ctx.forward(inst, x)


def transpose_transpose(inst, ctx):
    (x,) = inst.operands
    if x.opcode != "transpose":
        return None
    inner, outer = x.attrs.dimensions, inst.attrs.dimensions
    composed = tuple(inner[p] for p in outer)
    return inst.replace(operands=x.operands, attrs=inst.op.make_attrs(dimensions=composed))


def transpose_identity(inst, ctx):
    if tuple(inst.attrs.dimensions) != tuple(range(len(inst.attrs.dimensions))):
        return None
    return ctx.forward(inst, inst.operands[0])


def broadcast_constant(inst, ctx):
    (x,) = inst.operands
    array = _constant_array(x)
    if array is None or array.ndim != 0 or inst.shape.num_elements > SMALL_CONSTANT:
        return None
    return _constant(inst.name, np.full(inst.shape.dims, array, dtype=array.dtype), inst)


def slice_full(inst, ctx):
    (x,) = inst.operands
    if all(s.start == 0 and s.limit == n and s.stride == 1
           for s, n in zip(inst.attrs.slice, x.shape.dims)):
        return ctx.forward(inst, x)
    return None


def convert_same(inst, ctx):
    (x,) = inst.operands
    return ctx.forward(inst, x) if x.shape.dtype is inst.shape.dtype else None


def select_constant(inst, ctx):
    predicate, on_true, on_false = inst.operands
    value = ctx.splat(predicate)
    if value is _NONE:
        return None
    return ctx.forward(inst, on_true if bool(value) else on_false)


def concatenate_one(inst, ctx):
    return ctx.forward(inst, inst.operands[0]) if len(inst.operands) == 1 else None


def pad_nothing(inst, ctx):
    if all(p.low == 0 and p.high == 0 and p.interior == 0 for p in inst.attrs.padding):
        return ctx.forward(inst, inst.operands[0])
    return None


def copy_forward(inst, ctx):
    return ctx.forward(inst, inst.operands[0])


def tuple_element_of_tuple(inst, ctx):
    (t,) = inst.operands
    return ctx.forward(inst, t.operands[inst.attrs.index]) if t.opcode == "tuple" else None


def tuple_of_elements(inst, ctx):
    operands = inst.operands
    if not operands or any(o.opcode != "get-tuple-element" for o in operands):
        return None
    source = operands[0].operands[0]
    if (not isinstance(source.shape, TupleShape) or len(source.shape.elements) != len(operands)
            or any(o.operands[0] is not source or o.attrs.index != i
                   for i, o in enumerate(operands))):
        return None
    return ctx.forward(inst, source)


def dynamic_slice_full(inst, ctx):
    x = inst.operands[0]
    if tuple(inst.attrs.dynamic_slice_sizes) == tuple(x.shape.dims):
        return ctx.forward(inst, x)  # start indices are clamped to 0: the whole operand
    return None


def dynamic_slice_constant(inst, ctx):
    x, *indices = inst.operands
    if len(indices) != x.shape.rank:
        return None
    starts = []
    for index, size, n in zip(indices, inst.attrs.dynamic_slice_sizes, x.shape.dims):
        array = _constant_array(index)
        if array is None or array.ndim != 0:
            return None
        starts.append(int(min(max(int(array), 0), n - size)))  # XLA clamps start indices
    dims = tuple(SliceDim(s, s + size, 1) for s, size in zip(starts,
                                                            inst.attrs.dynamic_slice_sizes))
    return make_instruction(inst.name, op_named("slice"), (x,),
                            op_named("slice").make_attrs(slice=dims), inst.shape,
                            sharding=inst.sharding)


_INTEGER_FOLDS: dict[str, Callable] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "maximum": np.maximum, "minimum": np.minimum,
}


def fold_integer_binary(inst, ctx):
    arrays = [_constant_array(o) for o in inst.operands]
    if any(a is None for a in arrays) or not _small_integer(inst, *inst.operands):
        return None
    with np.errstate(over="ignore"):  # integers wrap, as in XLA
        value = _INTEGER_FOLDS[inst.opcode](*arrays).astype(inst.shape.dtype.numpy)
    return _constant(inst.name, value, inst)


def fold_integer_negate(inst, ctx):
    array = _constant_array(inst.operands[0])
    if array is None or not _small_integer(inst):
        return None
    with np.errstate(over="ignore"):
        return _constant(inst.name, np.negative(array), inst)


def fold_constant_reshape(inst, ctx):
    array = _constant_array(inst.operands[0])
    if array is None or inst.shape.num_elements > FOLD_LIMIT:
        return None
    return _constant(inst.name, array.reshape(inst.shape.dims), inst)


def fold_integer_convert(inst, ctx):
    (x,) = inst.operands
    array = _constant_array(x)
    if array is None or not _small_integer(inst, x):
        return None
    return _constant(inst.name, array.astype(inst.shape.dtype.numpy), inst)  # wraps, as XLA


def fold_constant_slice(inst, ctx):
    array = _constant_array(inst.operands[0])
    if array is None or inst.shape.num_elements > FOLD_LIMIT:
        return None
    index = tuple(slice(s.start, s.limit, s.stride) for s in inst.attrs.slice)
    return _constant(inst.name, array[index], inst)


Row = tuple[tuple[str, ...], Callable]

ROWS: tuple[Row, ...] = (
    # x + 0 -> x and 0 + x -> x (all types; a -0.0 input may come out +0.0, as in XLA)
    (("add",), add_zero),
    # x - 0 -> x
    (("subtract",), subtract_zero),
    # x * 1 -> x and 1 * x -> x (exact for every type, NaN included)
    (("multiply",), multiply_one),
    # x * 0 -> 0 for integers only (a float x may be NaN or inf)
    (("multiply",), multiply_zero),
    # -(-x) -> x
    (("negate",), negate_negate),
    # reshape(reshape(x)) -> reshape(x): only the final shape matters
    (("reshape",), reshape_reshape),
    # reshape(x) to x's own shape -> x (tried after folding the chain above)
    (("reshape",), reshape_same),
    # transpose(transpose(x, p), q) -> transpose(x, p∘q)
    (("transpose",), transpose_transpose),
    # transpose(x, identity) -> x
    (("transpose",), transpose_identity),
    # broadcast(scalar constant) -> constant, when the result is small
    (("broadcast",), broadcast_constant),
    # slice covering the whole operand with stride 1 -> operand
    (("slice",), slice_full),
    # convert to the operand's own element type -> operand
    (("convert",), convert_same),
    # select(constant predicate, a, b) -> a or b
    (("select",), select_constant),
    # concatenate of one operand -> that operand
    (("concatenate",), concatenate_one),
    # pad with no low, high or interior padding -> operand
    (("pad",), pad_nothing),
    # copy(x) -> x (values are immutable; layouts are not assigned yet)
    (("copy",), copy_forward),
    # get-tuple-element(tuple(a0, a1, ...), i) -> ai
    (("get-tuple-element",), tuple_element_of_tuple),
    # tuple(gte(t, 0), ..., gte(t, n-1)) of an n-tuple t -> t
    (("tuple",), tuple_of_elements),
    # dynamic-slice taking the operand's full size -> operand (starts clamp to 0)
    (("dynamic-slice",), dynamic_slice_full),
    # dynamic-slice at constant start indices -> slice at the clamped starts
    (("dynamic-slice",), dynamic_slice_constant),
    # small integer constant op constant -> constant (offset arithmetic)
    (tuple(_INTEGER_FOLDS), fold_integer_binary),
    # -(small integer constant) -> constant
    (("negate",), fold_integer_negate),
    # reshape of a small constant -> constant
    (("reshape",), fold_constant_reshape),
    # integer convert of a small integer constant -> constant (wrapping, as XLA)
    (("convert",), fold_integer_convert),
    # slice of a small constant -> constant (offset tables)
    (("slice",), fold_constant_slice),
)


def _row_table(rows) -> dict[str, tuple[Callable, ...]]:
    table: dict[str, list[Callable]] = {}
    for opcodes, fn in rows:
        for opcode in opcodes:
            table.setdefault(opcode, []).append(fn)
    return {k: tuple(v) for k, v in table.items()}


ROW_TABLE = _row_table(ROWS)


def simplify_computation(computation: Computation,
                         respect_shardings: bool = True) -> Computation:
    ctx = _Context(computation, respect_shardings)

    def visit(inst: Instruction, operands: tuple[Instruction, ...]) -> Instruction | None:
        current = inst if operands == inst.operands else inst.replace(operands=operands)
        for _ in range(MAX_ROUNDS):
            rows = ROW_TABLE.get(current.opcode, ())
            for row in rows:
                replacement = row(current, ctx)
                if replacement is not None and replacement is not current:
                    current = replacement
                    if replacement.name != inst.name:
                        return current  # forwarded an existing, already simplified value
                    break
            else:
                break
        return current

    return rewrite(computation, visit)


def simplify(module: Module, respect_shardings: bool = True) -> Module:
    """Apply the rows of `ROWS` to every instruction of every computation.

    With `respect_shardings` (before partitioning, where shardings are annotations), a
    value is only forwarded in place of an instruction with the same sharding; after
    partitioning shardings are informational and `optimize_spmd` turns this off."""
    return transform_module(module, lambda c: simplify_computation(c, respect_shardings))


simplify_pass = Pass("simplify", simplify)
