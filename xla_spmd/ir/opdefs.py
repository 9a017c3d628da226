"""Definitions of every opcode: arity, attributes and shape inference.

Shape rules follow op_semantics.md; each inference function raises `VerifyError` naming the
op and the operand at fault. Ops whose result type is not a function of their operands
(reshape, convert, constant, ...) take the declared shape and check what they can.
"""

from __future__ import annotations

import math
from typing import NoReturn

from xla_spmd.errors import VerifyError
from xla_spmd.ir.attributes import ComparisonType
from xla_spmd.ir.dtypes import C64, C128, F32, F64, PRED, S32, TOKEN, U32
from xla_spmd.ir.ops import REQUIRED, AttrKind, AttrSpec, Family, Trait, define
from xla_spmd.ir.shapes import ArrayShape, TupleShape

K = AttrKind
T = Trait


def A(name: str, kind: AttrKind, default=REQUIRED) -> AttrSpec:
    return AttrSpec(name, kind, default)


def _fail(op: str, message: str) -> NoReturn:
    raise VerifyError(f"'{op}': {message}")


def _array(op: str, shape, what: str = "operand") -> ArrayShape:
    if not isinstance(shape, ArrayShape):
        _fail(op, f"{what} must be an array, got {shape}")
    return shape


def _declared(op: str, declared):
    if declared is None:
        _fail(op, "the result shape must be given")
    return declared


def _same_dims(op: str, shapes, what="operands"):
    dims = {s.dims for s in shapes if s.rank > 0}
    if len(dims) > 1:
        _fail(op, f"{what} must have the same dimensions, got "
                  f"{', '.join(str(s) for s in shapes)}")


# ---------------------------------------------------------------------------------------------
# Leaves

def _infer_declared(name):
    def infer(operands, attrs, declared):
        return _declared(name, declared)
    return infer


define("parameter", Family.LEAF, _infer_declared("parameter"),
       attrs=(A("parameter_number", K.INT),), needs_declared_shape=True, traits=(T.DISTINCT,))
define("constant", Family.LEAF, _infer_declared("constant"),
       attrs=(A("literal", K.LITERAL),), needs_declared_shape=True)


def _infer_iota(operands, attrs, declared):
    shape = _array("iota", _declared("iota", declared), "result")
    if not 0 <= attrs.iota_dimension < max(shape.rank, 1):
        _fail("iota", f"iota_dimension={attrs.iota_dimension} out of range for {shape}")
    return shape


define("iota", Family.LEAF, _infer_iota, attrs=(A("iota_dimension", K.INT),),
       needs_declared_shape=True)
for _name in ("partition-id", "replica-id"):
    define(_name, Family.LEAF, lambda o, a, d: ArrayShape(U32, ()))
define("after-all", Family.LEAF, lambda o, a, d: ArrayShape(TOKEN, ()), operands=(0, None),
       traits=(T.DISTINCT,))

# ---------------------------------------------------------------------------------------------
# Elementwise

UNARY_OPS = ("abs", "negate", "exponential", "exponential-minus-one", "log", "log-plus-one",
             "sqrt", "rsqrt", "cbrt", "tanh", "logistic", "sine", "cosine", "tan", "floor",
             "ceil", "round-nearest-even", "round-nearest-afz", "sign", "not", "is-finite",
             "popcnt", "count-leading-zeros", "real", "imag", "erf", "copy")
BINARY_OPS = ("add", "subtract", "multiply", "divide", "remainder", "power", "maximum",
              "minimum", "and", "or", "xor", "shift-left", "shift-right-arithmetic",
              "shift-right-logical", "atan2", "complex", "compare")


def _infer_unary(name):
    def infer(operands, attrs, declared):
        x = _array(name, operands[0])
        if name in ("abs", "real", "imag"):
            return x.with_dtype(x.dtype.real_type)
        if name == "is-finite":
            return x.with_dtype(PRED)
        return ArrayShape(x.dtype, x.dims)
    return infer


def _infer_binary(name):
    def infer(operands, attrs, declared):
        lhs, rhs = (_array(name, s) for s in operands)
        if lhs.dims != rhs.dims:
            _fail(name, f"operand shapes differ: {lhs} vs {rhs} (broadcast explicitly)")
        if lhs.dtype is not rhs.dtype:
            _fail(name, f"operand element types differ: {lhs} vs {rhs}")
        if name == "compare":
            return lhs.with_dtype(PRED)
        if name == "complex":
            if lhs.dtype not in (F32, F64):
                _fail(name, f"operands must be f32 or f64, got {lhs}")
            return lhs.with_dtype(C64 if lhs.dtype is F32 else C128)
        return ArrayShape(lhs.dtype, lhs.dims)
    return infer


# Linear: a sum of partial results maps to the sum of their images (unreduced values pass
# through). Commutative: operands may be swapped (CSE sorts them).
LINEAR = ("add", "subtract", "negate", "copy", "convert", "real", "imag")
COMMUTATIVE = ("add", "multiply", "maximum", "minimum", "and", "or", "xor")


def _traits(name: str) -> tuple[Trait, ...]:
    return (((T.LINEAR,) if name in LINEAR else ())
            + ((T.COMMUTATIVE,) if name in COMMUTATIVE else ()))


for _name in UNARY_OPS:
    define(_name, Family.UNARY, _infer_unary(_name), operands=1, traits=_traits(_name))
for _name in BINARY_OPS:
    _attrs = ((A("direction", K.DIRECTION), A("type", K.COMPARISON_TYPE, None))
              if _name == "compare" else ())
    define(_name, Family.BINARY, _infer_binary(_name), operands=2, attrs=_attrs,
           traits=_traits(_name))


def default_comparison_type(dtype) -> ComparisonType:
    """The comparison type `compare` uses when none is written (op_semantics §7)."""
    if dtype.is_float or dtype.is_complex:
        return ComparisonType.FLOAT
    return ComparisonType.SIGNED if dtype.is_signed else ComparisonType.UNSIGNED


def _infer_select(operands, attrs, declared):
    pred, on_true, on_false = (_array("select", s) for s in operands)
    if pred.dtype is not PRED:
        _fail("select", f"predicate must be pred, got {pred}")
    if not on_true.same_type(on_false):
        _fail("select", f"branches differ: {on_true} vs {on_false}")
    if pred.rank and pred.dims != on_true.dims:
        _fail("select", f"predicate {pred} must be a scalar or shaped like {on_true}")
    return ArrayShape(on_true.dtype, on_true.dims)


def _infer_clamp(operands, attrs, declared):
    low, x, high = (_array("clamp", s) for s in operands)
    for bound in (low, high):
        if bound.dtype is not x.dtype or (bound.rank and bound.dims != x.dims):
            _fail("clamp", f"bound {bound} must be a scalar or shaped like {x}")
    return ArrayShape(x.dtype, x.dims)


def _infer_convert(name):
    def infer(operands, attrs, declared):
        x = _array(name, operands[0])
        out = _array(name, _declared(name, declared), "result")
        if name == "convert" and out.dims != x.dims:
            _fail(name, f"result {out} must have the dims of {x}")
        if name == "bitcast-convert":
            ratio_ok = (out.dims == x.dims and out.dtype.bits == x.dtype.bits
                        or out.dims == x.dims + (x.dtype.bits // max(out.dtype.bits, 1),)
                        or x.dims == out.dims + (out.dtype.bits // max(x.dtype.bits, 1),))
            if not ratio_ok:
                _fail(name, f"cannot reinterpret {x} as {out}")
        return out
    return infer


_POINTWISE = (T.ELEMENTWISE, T.PASS_THROUGH)
define("select", Family.ELEMENTWISE, _infer_select, operands=3, traits=_POINTWISE)
define("clamp", Family.ELEMENTWISE, _infer_clamp, operands=3, traits=_POINTWISE)
define("convert", Family.ELEMENTWISE, _infer_convert("convert"), operands=1,
       needs_declared_shape=True, traits=(*_POINTWISE, *_traits("convert")))
define("bitcast-convert", Family.ELEMENTWISE, _infer_convert("bitcast-convert"), operands=1,
       needs_declared_shape=True)
define("reduce-precision", Family.UNARY, _infer_unary("reduce-precision"), operands=1,
       attrs=(A("exponent_bits", K.INT), A("mantissa_bits", K.INT)))

# ---------------------------------------------------------------------------------------------
# Shape and data movement


def _check_dims(name, dims, rank, what="dimensions"):
    if any(not 0 <= d < rank for d in dims) or len(set(dims)) != len(dims):
        _fail(name, f"{what}={{{','.join(map(str, dims))}}} is not a set of distinct dims "
                    f"below rank {rank}")


def _infer_broadcast(operands, attrs, declared):
    x = _array("broadcast", operands[0])
    out = _array("broadcast", _declared("broadcast", declared), "result")
    dims = attrs.dimensions
    if len(dims) != x.rank:
        _fail("broadcast", f"dimensions={list(dims)} must list one result dim per operand "
                           f"dim of {x}")
    _check_dims("broadcast", dims, out.rank)
    for i, d in enumerate(dims):
        if x.dims[i] != out.dims[d]:
            _fail("broadcast", f"operand dim {i} (size {x.dims[i]}) must equal result dim "
                               f"{d} (size {out.dims[d]})")
    return out


def _infer_reshape(operands, attrs, declared):
    x = _array("reshape", operands[0])
    out = _array("reshape", _declared("reshape", declared), "result")
    if x.num_elements != out.num_elements or x.dtype is not out.dtype:
        _fail("reshape", f"cannot reshape {x} to {out}")
    return out


def _infer_transpose(operands, attrs, declared):
    x = _array("transpose", operands[0])
    perm = attrs.dimensions
    if sorted(perm) != list(range(x.rank)):
        _fail("transpose", f"dimensions={list(perm)} is not a permutation of {x.rank} dims")
    return ArrayShape(x.dtype, tuple(x.dims[p] for p in perm))


def _infer_reverse(operands, attrs, declared):
    x = _array("reverse", operands[0])
    _check_dims("reverse", attrs.dimensions, x.rank)
    return ArrayShape(x.dtype, x.dims)


def _infer_slice(operands, attrs, declared):
    x = _array("slice", operands[0])
    if len(attrs.slice) != x.rank:
        _fail("slice", f"needs {x.rank} ranges for {x}, got {len(attrs.slice)}")
    for d, s in enumerate(attrs.slice):
        if not (0 <= s.start <= s.limit <= x.dims[d] and s.stride >= 1):
            _fail("slice", f"range [{s.start}:{s.limit}:{s.stride}] invalid for dim {d} of {x}")
    return ArrayShape(x.dtype, tuple(s.output_size() for s in attrs.slice))


def _infer_dynamic_slice(operands, attrs, declared):
    x = _array("dynamic-slice", operands[0])
    sizes = attrs.dynamic_slice_sizes
    indices = operands[1:]
    vector_form = len(indices) == 1 and indices[0].rank == 1 and x.rank != 1
    if not vector_form and len(indices) != x.rank:
        _fail("dynamic-slice", f"needs {x.rank} start indices for {x}, got {len(indices)}")
    if len(sizes) != x.rank or any(not 0 <= s <= n for s, n in zip(sizes, x.dims)):
        _fail("dynamic-slice", f"dynamic_slice_sizes={list(sizes)} invalid for {x}")
    return ArrayShape(x.dtype, tuple(sizes))


def _infer_dynamic_update_slice(operands, attrs, declared):
    x, update = _array("dynamic-update-slice", operands[0]), operands[1]
    if update.rank != x.rank or any(u > n for u, n in zip(update.dims, x.dims)):
        _fail("dynamic-update-slice", f"update {update} does not fit in {x}")
    if update.dtype is not x.dtype:
        _fail("dynamic-update-slice", f"update {update} must have the type of {x}")
    return ArrayShape(x.dtype, x.dims)


def _infer_concatenate(operands, attrs, declared):
    shapes = [_array("concatenate", s) for s in operands]
    (dim,) = attrs.dimensions
    first = shapes[0]
    for s in shapes[1:]:
        if (s.rank != first.rank or s.dtype is not first.dtype
                or any(a != b for i, (a, b) in enumerate(zip(s.dims, first.dims)) if i != dim)):
            _fail("concatenate", f"operands {first} and {s} do not match outside dim {dim}")
    if not 0 <= dim < first.rank:
        _fail("concatenate", f"dimension {dim} out of range for {first}")
    dims = list(first.dims)
    dims[dim] = sum(s.dims[dim] for s in shapes)
    return ArrayShape(first.dtype, tuple(dims))


def _infer_pad(operands, attrs, declared):
    x, value = (_array("pad", s) for s in operands)
    if value.rank != 0 or value.dtype is not x.dtype:
        _fail("pad", f"padding value must be a {x.dtype} scalar, got {value}")
    if len(attrs.padding) != x.rank:
        _fail("pad", f"needs {x.rank} padding entries for {x}, got {len(attrs.padding)}")
    dims = tuple(p.output_size(n) for p, n in zip(attrs.padding, x.dims))
    if any(d < 0 or p.interior < 0 for d, p in zip(dims, attrs.padding)):
        _fail("pad", f"padding gives a negative size for {x}")
    return ArrayShape(x.dtype, dims)


define("broadcast", Family.SHAPE, _infer_broadcast, operands=1,
       attrs=(A("dimensions", K.INT_LIST),), needs_declared_shape=True)
define("reshape", Family.SHAPE, _infer_reshape, operands=1,
       attrs=(A("inferred_dimension", K.INT, None),), needs_declared_shape=True,
       traits=(T.PASS_THROUGH,))
def _infer_bitcast(operands, attrs, declared):
    x = _array("bitcast", operands[0])
    out = _array("bitcast", _declared("bitcast", declared), "result")
    if x.num_elements * x.dtype.bits != out.num_elements * out.dtype.bits:
        _fail("bitcast", f"cannot reinterpret {x} as {out}: sizes differ")
    return out


define("bitcast", Family.SHAPE, _infer_bitcast, operands=1, needs_declared_shape=True,
       traits=(T.PASS_THROUGH,))
define("transpose", Family.SHAPE, _infer_transpose, operands=1,
       attrs=(A("dimensions", K.INT_LIST),), traits=(T.PASS_THROUGH,))
define("reverse", Family.SHAPE, _infer_reverse, operands=1,
       attrs=(A("dimensions", K.INT_LIST),))
define("slice", Family.SHAPE, _infer_slice, operands=1, attrs=(A("slice", K.SLICE),))
define("dynamic-slice", Family.INDEXING, _infer_dynamic_slice, operands=(2, None),
       attrs=(A("dynamic_slice_sizes", K.INT_LIST),), traits=(T.FORWARD_PASS_THROUGH,))
define("dynamic-update-slice", Family.INDEXING, _infer_dynamic_update_slice,
       operands=(3, None), traits=(T.FORWARD_PASS_THROUGH,))
define("concatenate", Family.SHAPE, _infer_concatenate, operands=(1, None),
       attrs=(A("dimensions", K.INT_LIST),))
define("pad", Family.SHAPE, _infer_pad, operands=2, attrs=(A("padding", K.PADDING),))


def _infer_get_dimension_size(operands, attrs, declared):
    return ArrayShape(S32, ())


define("get-dimension-size", Family.SHAPE, _infer_get_dimension_size, operands=1,
       attrs=(A("dimensions", K.INT_LIST),))


def tuple_or_single(shapes) -> ArrayShape | TupleShape:
    shapes = tuple(shapes)
    return shapes[0] if len(shapes) == 1 else TupleShape(shapes)


def shape_numel(shape) -> int:
    return math.prod(shape.dims)
