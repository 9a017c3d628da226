"""Interpreter values as ``stablehlo-translate --interpret`` prints them.

Two formats. The interpreter's own (``Tensor::print``): the type, then the elements nested one
bracket per dimension, a dimension's sub-arrays on lines of their own indented two spaces per
level, the innermost dimension on one line; a scalar sits inside the braces. And, with
``--interpreter-print-dense``, the value as a ``dense<...> : type`` attribute, as MLIR prints
it (splats collapsed, ``dense<>`` when empty). Elements are written as MLIR writes attributes:
``true``/``false``, integers signed or unsigned by type, floats by `format_float`, complex
numbers as ``[re, im]`` (interpreter format) or ``(re,im)`` (dense).

>>> import numpy as np
>>> from xla_spmd.ir import ArrayShape, DType
>>> print(print_value(np.array([[1, 2], [3, 4]], np.int8), ArrayShape(DType.named("s8"), (2, 2))))
tensor<2x2xi8> {
  [
    [1, 2],
    [3, 4]
  ]
}
>>> print_value(np.uint8(1), ArrayShape(DType.named("u8"), ()))
'tensor<ui8> {1}'
>>> print_value_dense(np.array([[1, 2], [3, 4]], np.int8), ArrayShape(DType.named("s8"), (2, 2)))
'dense<[[1, 2], [3, 4]]> : tensor<2x2xi8>'
"""

from __future__ import annotations

import numpy as np

from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import TupleShape
from xla_spmd.stablehlo.float_text import format_float
from xla_spmd.stablehlo.types import print_dense, print_type


def format_element(value, dtype) -> str:
    """One element in the interpreter's format (complex as ``[re, im]``)."""
    if dtype.is_pred:
        return "true" if value else "false"
    if dtype.is_complex:
        real = dtype.real_type
        return f"[{format_float(value.real, real)}, {format_float(value.imag, real)}]"
    if dtype.is_float:
        return format_float(value, dtype)
    return str(int(value))


def print_value(value, shape) -> str:
    """`value` (an array, a token or a tuple of values) of type `shape` in the interpreter's
    format."""
    if isinstance(shape, TupleShape):
        parts = [print_value(v, s) for v, s in zip(value, shape.elements)]
        return print_type(shape) + " (\n" + "".join(p + ("," if i < len(parts) - 1 else "")
                                                     + "\n" for i, p in enumerate(parts)) + ")"
    if shape.is_token:
        return print_type(shape)
    array = np.asarray(value, shape.dtype.numpy).reshape(shape.dims)
    out = [print_type(shape), " {"]
    _nest(out, array, shape.dtype, (), 1)
    out.append("}")
    return "".join(out)


def _nest(out: list[str], array: np.ndarray, dtype, index: tuple, indent: int) -> None:
    """The interpreter's ``printHelper``: at a full index the element, else one bracketed
    dimension; `index` is the position so far."""
    dims = array.shape
    last = not index or index[-1] == dims[len(index) - 1] - 1
    if len(index) == len(dims):
        out.append(format_element(array[index], dtype))
        if not last:
            out.append(", ")
        return
    out.append("\n" + "  " * indent + "[")
    for i in range(dims[len(index)]):
        _nest(out, array, dtype, index + (i,), indent + 1)
    out.append("]")
    out.append("," if not last else "\n" + "  " * (indent - 1))


def print_value_dense(value, shape) -> str:
    """`value` of array type `shape` as the attribute ``dense<...> : tensor<...>``."""
    if isinstance(shape, TupleShape) or shape.is_token:
        raise XlaSpmdError(f"only arrays print as dense<...> attributes, not "
                           f"{print_type(shape)}")
    array = np.asarray(value, shape.dtype.numpy).reshape(shape.dims)
    return f"{print_dense(array)} : {print_type(shape)}"
