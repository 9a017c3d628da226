"""`xla_spmd.lax`: thin, exact wrappers over IR ops (no broadcasting, no promotion), as
``jax.lax``. The numpy-like API and the VJP rules are written with these.

>>> import numpy as np
>>> from xla_spmd.frontend import lax
>>> x = np.ones((2, 3), np.float32)
>>> np.asarray(lax.dot_general(x, x.T, (((1,), (0,)), ((), ())))).tolist()
[[3.0, 3.0], [3.0, 3.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np

from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend.dtypes import (
    canonical_array,
    canonicalize,
    python_scalar_dtype,
    to_inexact,
)
from xla_spmd.frontend.pytree import tree_map
from xla_spmd.frontend.sharding_types import takes_out_sharding, with_out_sharding
from xla_spmd.frontend.tracing import (
    Array,
    ArrayLike,
    DTypeLike,
    Value,
    aval_of,
    bind,
    comparator,
    current_trace,
    finish,
    fresh_name,
    is_distributed,
    is_weak,
    reducer,
    trace_computation,
)
from xla_spmd.ir import (
    C64,
    C128,
    F32,
    PRED,
    S32,
    ArrayShape,
    ComparisonDirection,
    Computation,
    ConvDimensionNumbers,
    DType,
    PadDim,
    Shape,
    SliceDim,
    TupleShape,
    Window,
)
from xla_spmd.ir.attributes import (
    FftType,
    Precision,  # noqa: F401 (precision values users pass)
)
from xla_spmd.ir.attributes import RngAlgorithm as RandomAlgorithm
from xla_spmd.ir.erf_inv import ERF_INV_LARGE, ERF_INV_SMALL


def dtype_of(x: ArrayLike) -> DType:
    return aval_of(x).dtype


def shape_of(x: ArrayLike) -> tuple[int, ...]:
    return aval_of(x).dims


def as_dtype(dtype: DTypeLike) -> DType:
    """An IR element type from a numpy dtype, a dtype name or a DType. A requested numpy type
    is canonical (``np.float64`` is f32 unless x64 is on, ``float`` the default float, as in
    JAX); a DType is taken as it is."""
    if isinstance(dtype, DType):
        return dtype
    if dtype is int or dtype is float or dtype is complex:
        return python_scalar_dtype(dtype(0))
    return canonicalize(DType.from_numpy(np.dtype(dtype)))


# ---------------------------------------------------------------------------------------------
# Elementwise


def unary(opcode: str, x: ArrayLike) -> Value:
    return bind(opcode, x, weak_type=getattr(x, "weak_type", False))


def binary(opcode: str, x: ArrayLike, y: ArrayLike) -> Value:
    return bind(opcode, x, y)


def add(x: ArrayLike, y: ArrayLike) -> Value: return bind("add", x, y)
def sub(x: ArrayLike, y: ArrayLike) -> Value: return bind("subtract", x, y)
def mul(x: ArrayLike, y: ArrayLike) -> Value: return bind("multiply", x, y)
def div(x: ArrayLike, y: ArrayLike) -> Value: return bind("divide", x, y)
def neg(x: ArrayLike) -> Value: return bind("negate", x)
def exp(x: ArrayLike) -> Value: return bind("exponential", x)
def log(x: ArrayLike) -> Value: return bind("log", x)
def max(x: ArrayLike, y: ArrayLike) -> Value: return bind("maximum", x, y)  # noqa: A001 (lax.max as in JAX)
def min(x: ArrayLike, y: ArrayLike) -> Value: return bind("minimum", x, y)  # noqa: A001


def _unary_function(opcode: str, name: str):
    def fn(x):
        return unary(opcode, x)
    fn.__name__ = name
    fn.__doc__ = f"The ``{opcode}`` op, elementwise (as ``jax.lax.{name}``)."
    return fn


def _binary_function(opcode: str, name: str):
    def fn(x, y):
        return bind(opcode, x, y)
    fn.__name__ = name
    fn.__doc__ = f"The ``{opcode}`` op, elementwise (as ``jax.lax.{name}``)."
    return fn


# jax.lax's elementwise functions that are one op each (operands of one type, no promotion).
_UNARY_FUNCTIONS = {
    "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "tanh": "tanh", "logistic": "logistic",
    "sin": "sine", "cos": "cosine", "tan": "tan", "abs": "abs", "sign": "sign",
    "floor": "floor", "ceil": "ceil", "is_finite": "is-finite", "expm1": "exponential-minus-one",
    "log1p": "log-plus-one", "erf": "erf", "population_count": "popcnt",
    "clz": "count-leading-zeros", "bitwise_not": "not", "not_": "not", "real": "real",
    "imag": "imag", "round_nearest_even": "round-nearest-even",
}
_BINARY_FUNCTIONS = {
    "pow": "power", "atan2": "atan2", "rem": "remainder", "bitwise_and": "and",
    "bitwise_or": "or", "bitwise_xor": "xor", "shift_left": "shift-left",
    "shift_right_logical": "shift-right-logical",
    "shift_right_arithmetic": "shift-right-arithmetic",
}
globals().update({name: _unary_function(opcode, name)
                  for name, opcode in _UNARY_FUNCTIONS.items()})
globals().update({name: _binary_function(opcode, name)
                  for name, opcode in _BINARY_FUNCTIONS.items()})


def square(x: ArrayLike) -> Value: return bind("multiply", x, x)


def integer_pow(x: ArrayLike, y: int) -> Value:
    """``x ** y`` for a static integer `y`, by repeated multiplication (as ``jax.lax``)."""
    if y == 0:
        return full(shape_of(x), 1, dtype_of(x))
    base = x if y > 0 else bind("divide", full(shape_of(x), 1, dtype_of(x)), x)
    out = base
    for _ in range(-y - 1 if y < 0 else y - 1):
        out = bind("multiply", out, base)
    return out


def clamp(minimum: ArrayLike, x: ArrayLike, maximum: ArrayLike) -> Value:
    """`x` clamped to ``[minimum, maximum]`` (scalars or arrays of x's shape)."""
    return bind("clamp", minimum, x, maximum)


def erf_inv(x: ArrayLike) -> Value:
    """The inverse error function, as ``jax.lax.erf_inv`` and as XLA computes it: Giles'
    single-precision polynomial in ``w = -log((1 - x)(1 + x))`` (one set of coefficients
    below w = 5, one above, `xla_spmd.ir.erf_inv`), +-inf at +-1. Computed in `x`'s type
    (an integer `x` as its inexact type)."""
    if not isinstance(x, Value) and not is_distributed(x):
        x = Array(canonical_array(x), weak_type=is_weak(x))
    dtype, shape = aval_of(x).dtype, shape_of(x)
    if not (dtype.is_float or dtype.is_complex):
        dtype = to_inexact(dtype)
        x = convert(x, dtype)

    def const(value):
        return full(shape, value, dtype)

    one = const(1.0)
    w = neg(log(mul(sub(one, x), add(one, x))))
    small = compare(w, const(5.0), "LT")
    w = select(small, sub(w, const(2.5)), sub(unary("sqrt", w), const(3.0)))
    p = select(small, const(ERF_INV_SMALL[0]), const(ERF_INV_LARGE[0]))
    for a, b in zip(ERF_INV_SMALL[1:], ERF_INV_LARGE[1:]):
        p = add(select(small, const(a), const(b)), mul(p, w))
    result = mul(p, x)
    at_one = compare(unary("abs", x), one, "EQ")
    return select(at_one, mul(x, const(np.inf)), result)


def compare(x: ArrayLike, y: ArrayLike, direction: str) -> Value:
    return bind("compare", x, y, direction=ComparisonDirection(direction))


def select(pred: ArrayLike, on_true: ArrayLike, on_false: ArrayLike) -> Value:
    """Elementwise `pred ? on_true : on_false` (pred is pred-typed, a scalar or same shape)."""
    return bind("select", pred, on_true, on_false)


def convert(x: ArrayLike, dtype: DTypeLike) -> Value:
    dtype = as_dtype(dtype)
    aval = aval_of(x)
    if aval.dtype is dtype:
        return x
    return bind("convert", x, shape=ArrayShape(dtype, aval.dims))


def convert_element_type(x: ArrayLike, dtype: DTypeLike) -> Value:
    return convert(x, dtype)


def bitcast_convert(x: ArrayLike, dtype: DTypeLike, shape: Sequence[int] | None = None) -> Value:
    dtype = as_dtype(dtype)
    dims = shape_of(x) if shape is None else tuple(shape)
    return bind("bitcast-convert", x, shape=ArrayShape(dtype, dims))


def constant(value: ArrayLike, dtype: DTypeLike) -> Value:
    """A scalar constant of `dtype` (a concrete value the trace embeds)."""
    return Array(np.asarray(value, dtype=as_dtype(dtype).numpy))


def full(shape: Sequence[int], value: ArrayLike, dtype: DTypeLike) -> Value:
    return broadcast_in_dim(constant(value, dtype), tuple(shape), ())


def zeros_like(x: ArrayLike) -> Value:
    aval = aval_of(x)
    return full(aval.dims, 0, aval.dtype)


def iota(dtype: DTypeLike, shape: Sequence[int], dimension: int = 0) -> Value:
    return bind("iota", shape=ArrayShape(as_dtype(dtype), tuple(shape)),
                iota_dimension=dimension)


STOP_GRADIENT = "xla_spmd.stop_gradient"
"""Frontend attribute marking a `copy` as a stop_gradient boundary: autodiff gives it a zero
derivative; every other consumer sees a plain copy (XLA removes it)."""


def stop_gradient(x: Any) -> Any:
    """`x` (a pytree), with a zero derivative: the identity in the forward pass, a constant to
    autodiff, as ``jax.lax.stop_gradient``. Inside a trace it is a ``copy`` carrying the
    frontend attribute ``xla_spmd.stop_gradient`` (so the mark survives nested traces, loop
    bodies and re-tracing, with no new op); outside any trace it returns `x`.

    >>> import numpy as np
    >>> import xla_spmd as xs
    >>> float(xs.grad(lambda x: x * stop_gradient(x))(np.float32(3.0)))
    3.0
    """

    def one(v):
        aval = aval_of(v)
        if current_trace() is None or not (aval.dtype.is_float or aval.dtype.is_complex):
            return v
        return bind("copy", v, frontend_attributes=((STOP_GRADIENT, "true"),),
                    weak_type=getattr(v, "weak_type", False))
    return tree_map(one, x)


# ---------------------------------------------------------------------------------------------
# Shapes


def broadcast_in_dim(x: ArrayLike, shape: Sequence[int], broadcast_dimensions: Sequence[int]
                     ) -> Value:
    """Place operand dim i at result dim ``broadcast_dimensions[i]`` of `shape`."""
    aval = aval_of(x)
    shape, dims = tuple(shape), tuple(broadcast_dimensions)
    if aval.dims == shape and dims == tuple(range(len(shape))) and isinstance(x, Value):
        return x
    return bind("broadcast", x, shape=ArrayShape(aval.dtype, shape), dimensions=dims)


@takes_out_sharding
def reshape(x: ArrayLike, shape: Sequence[int]) -> Value:
    aval = aval_of(x)
    shape = tuple(int(d) for d in shape)
    if aval.dims == shape and isinstance(x, Value):
        return x
    return bind("reshape", x, shape=ArrayShape(aval.dtype, shape))


def transpose(x: ArrayLike, permutation: Sequence[int]) -> Value:
    permutation = tuple(permutation)
    if permutation == tuple(range(len(permutation))) and isinstance(x, Value):
        return x
    return bind("transpose", x, dimensions=permutation)


def rev(x: ArrayLike, dimensions: Sequence[int]) -> Value:
    return bind("reverse", x, dimensions=tuple(dimensions))


def slice(x: ArrayLike, start_indices: Sequence[int], limit_indices: Sequence[int],
          strides: Sequence[int] | None = None) -> Value:  # noqa: A001
    strides = strides or (1,) * len(start_indices)
    return bind("slice", x, slice=tuple(SliceDim(int(a), int(b), int(s)) for a, b, s
                                        in zip(start_indices, limit_indices, strides)))


def slice_in_dim(x: ArrayLike, start: int, limit: int, stride: int = 1, axis: int = 0) -> Value:
    dims = shape_of(x)
    starts = [0] * len(dims)
    limits = list(dims)
    strides = [1] * len(dims)
    starts[axis], limits[axis], strides[axis] = start, limit, stride
    return slice(x, starts, limits, strides)


def pad(x: ArrayLike, padding_value: ArrayLike, padding_config: Sequence[tuple[int, int, int]]
        ) -> Value:
    """`padding_config`: one ``(low, high, interior)`` per dim."""
    return bind("pad", x, padding_value,
                padding=tuple(PadDim(int(lo), int(hi), int(i)) for lo, hi, i in padding_config))


def concatenate(operands: Sequence, dimension: int) -> Value:
    if len(operands) == 1:
        return operands[0]
    return bind("concatenate", *operands, dimensions=(dimension,))


def dynamic_slice(x: ArrayLike, start_indices: Sequence, slice_sizes: Sequence[int]) -> Value:
    starts = [convert(i, S32) if isinstance(i, Value) else np.int32(i) for i in start_indices]
    return bind("dynamic-slice", x, *starts, dynamic_slice_sizes=tuple(slice_sizes))


def dynamic_update_slice(x: ArrayLike, update: ArrayLike, start_indices: Sequence) -> Value:
    starts = [convert(i, S32) if isinstance(i, Value) else np.int32(i) for i in start_indices]
    return bind("dynamic-update-slice", x, update, *starts)


def dynamic_slice_in_dim(x: ArrayLike, start: ArrayLike, size: int, axis: int = 0) -> Value:
    dims = shape_of(x)
    starts = [0] * len(dims)
    starts[axis] = start
    sizes = list(dims)
    sizes[axis] = size
    return dynamic_slice(x, starts, sizes)


def dynamic_update_slice_in_dim(x: ArrayLike, update: ArrayLike, start: ArrayLike, axis: int = 0
                                ) -> Value:
    starts = [0] * len(shape_of(x))
    starts[axis] = start
    return dynamic_update_slice(x, update, starts)


def get_tuple_element(t: ArrayLike, index: int) -> Value:
    return bind("get-tuple-element", t, index=index)


def make_tuple(*values: ArrayLike) -> Value:
    return bind("tuple", *values)


def untuple(t: ArrayLike) -> list:
    aval = aval_of(t)
    return [get_tuple_element(t, i) for i in range(len(aval.elements))]


# ---------------------------------------------------------------------------------------------
# Reductions and windows

_IDENTITY = {"add": 0, "mul": 1, "and": True, "or": False}


def reduction_identity(kind: str, dtype: DType) -> bool | int | float:
    if kind in _IDENTITY:
        return _IDENTITY[kind]
    if dtype.is_float:
        return -np.inf if kind == "max" else np.inf
    if dtype.is_pred:
        return kind == "min"
    info = np.iinfo(dtype.numpy)
    return info.min if kind == "max" else info.max


def reduce(x: ArrayLike, kind: str, dimensions: Sequence[int]) -> Value:
    """Reduce `x` over `dimensions` with add, mul, max, min, and, or."""
    dtype = dtype_of(x)
    init = constant(reduction_identity(kind, dtype), dtype)
    return bind("reduce", x, init, dimensions=tuple(sorted(dimensions)),
                to_apply=reducer(kind, dtype))


def reduce_sum(x: ArrayLike, dimensions: Sequence[int]) -> Value:
    return reduce(x, "add", dimensions)


def reduce_max(x: ArrayLike, dimensions: Sequence[int]) -> Value:
    return reduce(x, "max", dimensions)



def window_reduce(x: ArrayLike, kind: str, window_dimensions: Sequence[int],
                  window_strides: Sequence[int] | None = None,
                  padding: str | Sequence[tuple[int, int]] | None = "VALID",
                  base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Value:
    """Reduce sliding windows of `x` with a named reduction (add, max, min, mul) from its
    identity; `padding` is "VALID", "SAME" or one (low, high) per dim."""
    dtype = dtype_of(x)
    init = constant(reduction_identity(kind, dtype), dtype)
    return _reduce_window(x, init, reducer(kind, dtype), window_dimensions, window_strides,
                          padding, base_dilation, window_dilation)


def _reduce_window(x, init, computation, window_dimensions, window_strides, padding,
                   base_dilation, window_dilation) -> Value:
    rank = len(window_dimensions)
    window_strides = tuple(window_strides or (1,) * rank)
    if isinstance(padding, str):  # on undilated shapes, as JAX
        padding = padtype_to_pads(shape_of(x), window_dimensions, window_strides, padding)
    window = Window.make(window_dimensions, window_strides, padding, base_dilation,
                         window_dilation)
    return bind("reduce-window", x, init, window=window, to_apply=computation)


def _scalar_computation(computation, dtype) -> Computation:
    """A binary Python function (lax.add, lax.max, a lambda, ...) traced over scalars."""
    if isinstance(computation, Computation):
        return computation
    if not callable(computation):
        raise XlaSpmdError(f"reduce_window: computation must be a binary function such as "
                           f"lax.add or lax.max, got {computation!r}")
    scalar = ArrayShape(dtype, ())
    trace, outputs = trace_computation(lambda a, b: [computation(a, b)], [scalar, scalar],
                                       fresh_name("region_reduce_window"))
    return finish(trace, outputs, tuple_root=False)


def reduce_window(operand: ArrayLike, init_value: ArrayLike,
                  computation: Callable[..., Any] | Computation, window_dimensions: Sequence[int],
                  window_strides: Sequence[int] | None = None,
                  padding: str | Sequence[tuple[int, int]] = "VALID",
                  base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Value:
    """As ``jax.lax.reduce_window``: reduce sliding windows of `operand` with the binary
    `computation` (lax.add, lax.max, lax.min, lax.mul or any traceable function) starting
    from `init_value`; `padding` is "VALID", "SAME" or one (low, high) per dim.

    >>> import numpy as np
    >>> np.asarray(reduce_window(np.arange(4.0), 0.0, add, (2,), (2,), "VALID")).tolist()
    [1.0, 5.0]
    """
    dtype = dtype_of(operand)
    init = constant(init_value, dtype) if np.ndim(init_value) == 0 and not hasattr(
        init_value, "aval") else convert(init_value, dtype)
    return _reduce_window(operand, init, _scalar_computation(computation, dtype),
                          window_dimensions, window_strides, padding, base_dilation,
                          window_dilation)


def max_pool(x: ArrayLike, window_dimensions: Sequence[int],
             window_strides: Sequence[int] | None = None,
             padding: str | Sequence[tuple[int, int]] = "VALID") -> Value:
    """Max over windows; `padding` is "VALID", "SAME" or one (low, high) per dim."""
    return window_reduce(x, "max", window_dimensions, window_strides, padding)


def avg_pool(x: ArrayLike, window_dimensions: Sequence[int],
             window_strides: Sequence[int] | None = None,
             padding: str | Sequence[tuple[int, int]] = "VALID") -> Value:
    """Mean over windows (padding counts as zeros, as ``flax.linen.avg_pool``)."""
    total = window_reduce(x, "add", window_dimensions, window_strides, padding)
    count = int(np.prod(window_dimensions))
    return div(total, full(shape_of(total), count, dtype_of(total)))


# ---------------------------------------------------------------------------------------------
# Contractions


# ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)), as ``jax.lax.dot_general``.
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]


@takes_out_sharding
def dot_general(lhs: ArrayLike, rhs: ArrayLike,
                dimension_numbers: DotDimensionNumbers,
                precision: Any = None, preferred_element_type: DTypeLike = None) -> Value:
    """``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``,
    as in JAX; the result is batch dims, then lhs free dims, then rhs free dims."""
    (lc, rc), (lb, rb) = dimension_numbers
    shape = None
    if preferred_element_type is not None:
        lhs_aval, rhs_aval = aval_of(lhs), aval_of(rhs)
        dims = ([lhs_aval.dims[d] for d in lb]
                + [n for d, n in enumerate(lhs_aval.dims) if d not in tuple(lb) + tuple(lc)]
                + [n for d, n in enumerate(rhs_aval.dims) if d not in tuple(rb) + tuple(rc)])
        shape = ArrayShape(as_dtype(preferred_element_type), tuple(dims))
    return bind("dot", lhs, rhs, shape=shape, lhs_contracting_dims=tuple(lc),
                rhs_contracting_dims=tuple(rc), lhs_batch_dims=tuple(lb),
                rhs_batch_dims=tuple(rb))


@takes_out_sharding
def dot(lhs: ArrayLike, rhs: ArrayLike, precision: Any = None,
        preferred_element_type: DTypeLike = None) -> Value:
    """Vector/matrix products contracting `lhs`'s last dim with `rhs`'s first (as
    ``jax.lax.dot``; operands of one type)."""
    lhs_rank = len(shape_of(lhs))
    return dot_general(lhs, rhs, (((lhs_rank - 1,), (0,)), ((), ())), precision,
                       preferred_element_type)


def prefix_product(x: ArrayLike, axis: int) -> Value:
    """Inclusive prefix products along `axis`: a Hillis-Steele scan (log2(n) shifted
    multiplies), differentiable through pad, slice and multiply, zeros included."""
    shape = shape_of(x)
    one = constant(1, aval_of(x).dtype)
    shift = 1
    while shift < shape[axis]:
        config = [(0, 0, 0)] * len(shape)
        config[axis] = (shift, -shift, 0)  # shifted right by `shift`, ones shifted in
        x = mul(x, pad(x, one, config))
        shift *= 2
    return x


def _cumulative(kind: str, name: str):
    def fn(operand, axis: int = 0, reverse: bool = False) -> Value:
        rank = len(shape_of(operand))
        axis = axis % rank
        if reverse:
            operand = rev(operand, (axis,))
        n = shape_of(operand)[axis]
        if kind == "mul":
            out = prefix_product(operand, axis)
        else:
            window = [1] * rank
            window[axis] = n
            padding = [(0, 0)] * rank
            padding[axis] = (n - 1, 0)
            out = window_reduce(operand, kind, window, None, padding)
        return rev(out, (axis,)) if reverse else out
    fn.__name__ = name
    fn.__doc__ = f"Inclusive prefix {kind} along `axis` (as ``jax.lax.{name}``)."
    return fn


cumsum = _cumulative("add", "cumsum")
cumprod = _cumulative("mul", "cumprod")
cummax = _cumulative("max", "cummax")
cummin = _cumulative("min", "cummin")


@takes_out_sharding
def conv_general_dilated(lhs: ArrayLike, rhs: ArrayLike, window_strides: Sequence[int],
                         padding: str | Sequence[tuple[int, int]],
                         lhs_dilation: Sequence[int] | None = None,
                         rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: str | ConvDimensionNumbers | Sequence = "NCHW",
                         feature_group_count: int = 1, batch_group_count: int = 1) -> Value:
    """Convolution as ``jax.lax.conv_general_dilated``. `padding` is "SAME", "VALID" or one
    (low, high) per spatial dim; `dimension_numbers` is a ConvDimensionNumbers, HLO
    ``dim_labels`` text (``b01f_01io->b01f``) or a JAX layout triple like
    ``("NHWC", "HWIO", "NHWC")`` (a single "NCHW" means the JAX default triple).
    ``out_sharding=`` gives the result's sharding type (Explicit mesh axes), where the
    operands' types leave it open (a sharded kernel or input feature dim)."""
    dn = conv_dimension_numbers(dimension_numbers)
    spatial = len(dn.input_spatial)
    lhs_dims, rhs_dims = shape_of(lhs), shape_of(rhs)
    window_dims = [rhs_dims[d] for d in dn.kernel_spatial]
    strides = tuple(window_strides or (1,) * spatial)
    lhs_dilation = tuple(lhs_dilation or (1,) * spatial)
    rhs_dilation = tuple(rhs_dilation or (1,) * spatial)
    if isinstance(padding, str):
        in_dims = [lhs_dims[d] for d in dn.input_spatial]
        padding = padtype_to_pads(in_dims, [(w - 1) * r + 1 for w, r in
                                            zip(window_dims, rhs_dilation)], strides, padding)
    window = Window.make(window_dims, strides, padding, lhs_dilation, rhs_dilation)
    return bind("convolution", lhs, rhs, window=window, dim_labels=dn,
                feature_group_count=feature_group_count, batch_group_count=batch_group_count)


# ---------------------------------------------------------------------------------------------
# FFT and the bits of XLA's generator


def fft(x: ArrayLike, fft_type: FftType | str, fft_lengths: Sequence[int]) -> Value:
    """XLA's FFT over the last ``len(fft_lengths)`` dims, as ``jax.lax.fft``: `fft_type`
    is a `FftType` or its name (``"fft"``, ``"ifft"``, ``"rfft"``, ``"irfft"``); the input
    is made complex (real for rfft) first, as JAX does.

    >>> import numpy as np
    >>> np.round(np.asarray(fft(np.array([1.0, 0.0, -1.0, 0.0], np.float32), "fft", (4,))),
    ...          6).tolist()
    [0j, (2+0j), 0j, (2+0j)]
    """
    if isinstance(fft_type, str):
        try:
            kind = FftType[fft_type.upper()]
        except KeyError:
            raise ValueError(f"Unknown FFT type '{fft_type}'") from None
    elif isinstance(fft_type, FftType):
        kind = fft_type
    else:
        raise TypeError(f"Unknown FFT type value '{fft_type}'")
    dtype = dtype_of(x)
    if kind is FftType.RFFT:
        if dtype.is_complex:
            raise ValueError("only real valued inputs supported for rfft")
        x = convert(x, dtype if dtype.is_float and dtype.bits >= 32 else F32)
    elif not dtype.is_complex:
        x = convert(x, C128 if dtype.bits == 64 and dtype.is_float else C64)
    lengths = tuple(int(n) for n in fft_lengths)
    if not lengths:
        return x
    dims = shape_of(x)
    if len(lengths) > len(dims):
        raise ValueError(f"FFT input shape {dims} must have at least as many input "
                         f"dimensions as fft_lengths {lengths}.")
    minor = dims[len(dims) - len(lengths):]
    if kind is FftType.IRFFT:
        if minor[:-1] != lengths[:-1]:
            raise ValueError(f"IRFFT input shape {dims} minor dimensions must be equal to all "
                             f"except the last fft_length, got fft_lengths={lengths}")
    elif minor != lengths:
        raise ValueError(f"{kind.value} input shape {dims} minor dimensions must be equal to "
                         f"fft_lengths {lengths}")
    return bind("fft", x, fft_type=kind, fft_length=lengths)


def rng_bit_generator(key: ArrayLike, shape: Sequence[int], dtype: DTypeLike = np.uint32,
                      algorithm: RandomAlgorithm | str = "RNG_DEFAULT", *,
                      out_sharding: Any = None) -> tuple[Value, Value]:
    """XLA's stateless bit generator, as ``jax.lax.rng_bit_generator``: returns ``(new
    key, bits)``, the bits unsigned (8 to 64 bits) of `shape`. `algorithm` is a
    `RandomAlgorithm` or its name (``RNG_DEFAULT``, ``RNG_THREE_FRY``, ``RNG_PHILOX``).
    Under Explicit mesh axes the new key has the key's type and the bits are replicated,
    or typed `out_sharding` when given (JAX's rule)."""
    dtype = as_dtype(dtype)
    if dtype.kind.name != "UNSIGNED":
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype.numpy.name}")
    if isinstance(algorithm, str):
        name = algorithm.upper().removeprefix("RNG_")
        algorithm = {"DEFAULT": RandomAlgorithm.DEFAULT,
                     "THREE_FRY": RandomAlgorithm.THREE_FRY,
                     "PHILOX": RandomAlgorithm.PHILOX}[name]
    aval = aval_of(key)
    out = TupleShape((aval, ArrayShape(dtype, tuple(int(d) for d in shape))))
    pair = bind("rng-bit-generator", key, shape=out, algorithm=algorithm)
    new_key = bind("get-tuple-element", pair, index=0)
    bits = with_out_sharding(lambda: bind("get-tuple-element", pair, index=1), out_sharding,
                             (key,), "rng_bit_generator")
    return new_key, bits


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int], strides: Sequence[int],
                    padding: str) -> list[tuple[int, int]]:
    if padding.upper() == "VALID":
        return [(0, 0)] * len(in_shape)
    if padding.upper() != "SAME":
        raise XlaSpmdError(f"padding must be 'SAME', 'VALID' or (low, high) pairs, got "
                           f"{padding!r}")
    pads = []
    for n, w, s in zip(in_shape, window_shape, strides):
        out = -(-n // s)
        total = builtins_max(0, (out - 1) * s + w - n)
        pads.append((total // 2, total - total // 2))
    return pads


def builtins_max(a: int, b: int) -> int:
    return a if a > b else b


def conv_dimension_numbers(spec: str | Sequence[str] | ConvDimensionNumbers
                           ) -> ConvDimensionNumbers:
    if isinstance(spec, ConvDimensionNumbers):
        return spec
    if isinstance(spec, str) and "->" in spec:
        return ConvDimensionNumbers.from_labels(spec)
    if isinstance(spec, str):
        spatial = "".join(c for c in spec if c not in "NC")
        spec = (spec, "OI" + spatial, spec)
    lhs, rhs, out = spec
    letters = [c for c in lhs if c not in "NC"]

    def label(text, mapping):
        return "".join(mapping.get(c, str(letters.index(c)) if c in letters else c)
                       for c in text)
    return ConvDimensionNumbers.from_labels(
        f"{label(lhs, {'N': 'b', 'C': 'f'})}_{label(rhs, {'I': 'i', 'O': 'o'})}->"
        f"{label(out, {'N': 'b', 'C': 'f'})}")


# ---------------------------------------------------------------------------------------------
# Sorting and top-k


@overload
def sort(operands: Sequence[ArrayLike], dimension: int = -1, is_stable: bool = True,
         num_keys: int = 1, descending: bool = False) -> list[Value]: ...
@overload
def sort(operands: ArrayLike, dimension: int = -1, is_stable: bool = True, num_keys: int = 1,
         descending: bool = False) -> Value: ...
def sort(operands: ArrayLike, dimension: int = -1, is_stable: bool = True, num_keys: int = 1,
         descending: bool = False) -> Value | list[Value]:
    """Sort `operands` (a value or a sequence) along `dimension` by the first `num_keys`."""
    single = isinstance(operands, Value) or not isinstance(operands, (list, tuple))
    operands = [operands] if single else list(operands)
    rank = len(shape_of(operands[0]))
    dimension = dimension % rank if rank else 0
    dtypes = [dtype_of(o) for o in operands]
    out = bind("sort", *operands, dimensions=(dimension,), is_stable=is_stable,
               to_apply=comparator(dtypes, descending, num_keys))
    return out if single else untuple(out)


def top_k(x: ArrayLike, k: int) -> tuple[Value, Value]:
    """The `k` largest entries along the last dim and their indices (values descending)."""
    out = bind("topk", x, k=k, largest=True)
    return get_tuple_element(out, 0), get_tuple_element(out, 1)


def tuple_shape(*avals: Shape) -> TupleShape:
    return TupleShape(tuple(avals))


__all__ = [
    *_UNARY_FUNCTIONS, *_BINARY_FUNCTIONS, "clamp", "cummax", "cummin", "cumprod", "cumsum",
    "dot", "erf_inv", "integer_pow", "square",
    "FftType", "RandomAlgorithm", "fft", "rng_bit_generator",
    "PRED", "add", "avg_pool", "bitcast_convert", "broadcast_in_dim", "compare", "concatenate",
    "conv_general_dilated", "convert", "convert_element_type", "div", "dot_general",
    "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_slice",
    "dynamic_update_slice_in_dim", "exp", "full", "iota", "log", "max", "max_pool", "min",
    "mul", "neg", "pad", "reduce", "reduce_window", "reshape", "rev", "select", "slice",
    "slice_in_dim", "sort", "stop_gradient", "sub", "top_k", "transpose", "zeros_like",
]
