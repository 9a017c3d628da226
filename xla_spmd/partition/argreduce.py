"""argmax / argmin across shards as one all-reduce of packed (value, index) pairs.

A variadic reduce whose reducer is JAX's argmax or argmin (``jnp.argmax``: pick the larger
value, NaN first, the lower index on ties) reduces each shard locally; the partial pairs
are then combined with ONE all-reduce instead of an all-gather of every device's pairs and a
second reduce (XLA's way, (n-1) x the pairs received). The pair is packed into an s64 whose
integer order is the reducer's order::

    key = ordered(value) << 32 | (2^31 - 1 - index)     argmax: all-reduce maximum
    key = ordered(value) << 32 | index                  argmin: all-reduce minimum

``ordered`` maps the value to an s32 of the same order: floats (f32, and f16/bf16 widened to
f32 exactly) by their bits with the magnitude of negatives flipped, NaN to the extreme that
wins (as the reducer prefers NaN), -0.0 to +0.0 (equal under the reducer's compare, so the
index decides); signed and narrow unsigned integers as themselves. The unpacked value is the
winning value itself, except that a winning -0.0 comes back as +0.0 and a winning NaN as the
canonical NaN of its sign (so the partitioner packs only where those values are unused or integers,
as in ``jnp.argmax``). Other reducers or types (f64, s64 or u32 values, s64 indices)
return None and keep the all-gather.

>>> from xla_spmd.ir import F32, S32, ArrayShape, Builder
>>> b = Builder("first")
>>> ps = [b.parameter(ArrayShape(t, ()), f"p{k}") for k, t in enumerate([F32, S32] * 2)]
>>> arg_kind(b.build(b.op("tuple", ps[0], ps[1])))  # not an arg reducer
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xla_spmd.ir import (
    BF16,
    F16,
    F32,
    PRED,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    ArrayShape,
    ComparisonDirection,
    Computation,
    Instruction,
    TupleShape,
)

if TYPE_CHECKING:
    from xla_spmd.mesh import AxisRef
    from xla_spmd.partition.emit import Emitter

_FLOATS = (F32, F16, BF16)
FLOAT_ARG_VALUES = _FLOATS  # value types whose -0.0 and NaN the packing canonicalises
_INTS = (S8, S16, S32, U8, U16)
_S32_MAX = 2**31 - 1
_SWAP = {"GT": "LT", "GE": "LE"}


def _expr(inst: Instruction, params: dict[int, int]):
    """`inst` as a canonical tree: parameters by number, GT/GE turned into LT/LE, the
    operands of EQ, NE, and, or as sets."""
    if id(inst) in params:
        return ("p", params[id(inst)])
    args = tuple(_expr(o, params) for o in inst.operands)
    if inst.opcode == "compare":
        direction = inst.attrs.direction.value
        if direction in _SWAP:
            return ("cmp", _SWAP[direction], args[1], args[0])
        if direction in ("EQ", "NE"):
            return ("cmp", direction, frozenset(args))
        return ("cmp", direction, *args)
    if inst.opcode in ("and", "or"):
        return (inst.opcode, frozenset(args))
    return (inst.opcode, *args)


def _expected(kind: str, nan: bool = True):
    """The tree of JAX's argmax (kind 'max') or argmin ('min') reducer, outputs in order
    (without the NaN test when not `nan`: integer values)."""
    v, i, w, j = (("p", k) for k in range(4))
    better = ("cmp", "LT", w, v) if kind == "max" else ("cmp", "LT", v, w)
    pick_value = ("or", frozenset([better, ("cmp", "NE", frozenset([v]))])) if nan else better
    tie = ("and", frozenset([("cmp", "EQ", frozenset([v, w])), ("cmp", "LT", i, j)]))
    pick_index = ("or", frozenset([pick_value, tie]))
    return (("select", pick_value, v, w), ("select", pick_index, i, j))


def arg_kind(computation: Computation) -> str | None:
    """'argmax' or 'argmin' when `computation` is JAX's reducer of (value, index) pairs
    (for integer values also without its NaN test) with a value type `ordered` can pack and
    s32 indices; else None."""
    params = computation.parameters
    root = computation.root
    if len(params) != 4 or root.opcode != "tuple" or len(root.operands) != 2:
        return None
    value, index = params[0].shape, params[1].shape
    if not all(isinstance(p.shape, ArrayShape) and p.shape.rank == 0 for p in params):
        return None
    if (value.dtype not in _FLOATS + _INTS or index.dtype is not S32
            or params[2].shape.dtype is not value.dtype or params[3].shape.dtype is not S32):
        return None
    numbers = {id(p): p.attrs.parameter_number for p in params}
    got = tuple(_expr(o, numbers) for o in root.operands)
    for kind in ("max", "min"):
        if got == _expected(kind) or (value.dtype in _INTS and got == _expected(kind, False)):
            return "arg" + kind
    return None


def combine_arg_partials(em: Emitter, local: Instruction, axes: Sequence[AxisRef], kind: str
                         ) -> Instruction:
    """The tuple of (value, index) partial results `local` finished across the devices of
    `axes`: packed, all-reduced once with maximum (argmax) or minimum (argmin), unpacked."""
    value_shape, index_shape = local.shape.elements
    dims = value_shape.dims
    value = em.op("get-tuple-element", local, index=0)
    index = em.op("get-tuple-element", local, index=1)

    def full(number, dtype):
        return em.broadcast_scalar(em.scalar(number, dtype), dims)

    def binary(opcode, a, b, dtype=None):
        shape = ArrayShape(dtype or a.shape.dtype, dims)
        return em.op(opcode, a, b, shape=shape)

    def compare(a, b, direction):
        return em.op("compare", a, b, shape=ArrayShape(PRED, dims),
                     direction=ComparisonDirection(direction))

    def convert(x, dtype, opcode="convert"):
        return em.op(opcode, x, shape=ArrayShape(dtype, dims))

    maximum = kind == "argmax"
    source = value_shape.dtype
    if source in _FLOATS:
        wide = value if source is F32 else convert(value, F32)
        zero = full(0.0, F32)
        wide = em.op("select", compare(wide, zero, "EQ"), zero, wide,
                     shape=ArrayShape(F32, dims))
        bits = convert(wide, S32, "bitcast-convert")
        flipped = binary("xor", bits, full(_S32_MAX, S32))
        ordered = em.op("select", compare(bits, full(0, S32), "LT"), flipped, bits,
                        shape=ArrayShape(S32, dims))
        nan_key = full(_S32_MAX if maximum else -_S32_MAX - 1, S32)
        ordered = em.op("select", compare(wide, wide, "NE"), nan_key, ordered,
                        shape=ArrayShape(S32, dims))
    else:
        ordered = value if source is S32 else convert(value, S32)
    low = binary("subtract", full(_S32_MAX, S32), index) if maximum else index
    key = binary("or", binary("shift-left", convert(ordered, S64), full(32, S64)),
                 convert(low, S64))
    key = em.all_reduce(key, axes, em.state.reducer(S64, "maximum" if maximum else "minimum"))
    high = convert(binary("shift-right-arithmetic", key, full(32, S64)), S32)
    low = convert(binary("and", key, full(0xFFFFFFFF, S64)), S32)
    index = binary("subtract", full(_S32_MAX, S32), low) if maximum else low
    if source in _FLOATS:
        flipped = binary("xor", high, full(_S32_MAX, S32))
        bits = em.op("select", compare(high, full(0, S32), "LT"), flipped, high,
                     shape=ArrayShape(S32, dims))
        value = convert(bits, F32, "bitcast-convert")
        if source is not F32:
            value = convert(value, source)
    else:
        value = high if source is S32 else convert(high, source)
    return em.op("tuple", value, index, shape=TupleShape((value.shape, index.shape)))

