"""The operators and methods of traced and concrete arrays (`Value`), and the conversion of
scalar types (``xnp.float32(x)``), installed from the numpy
layer as JAX's ``array_methods.py`` does: `tracing` defines `Value` below the numpy modules,
which build on it, so the numpy functions are attached to it here, once, when the frontend
package loads.

>>> import numpy as np
>>> import xla_spmd as xs
>>> float(xs.jit(lambda x: (x * 2 + 1).sum())(np.arange(3.0, dtype=np.float32)))
9.0
"""

from __future__ import annotations

from xla_spmd.frontend import numpy_core as xnp
from xla_spmd.frontend import numpy_index, numpy_reductions, numpy_shape
from xla_spmd.frontend.dtypes import ScalarType
from xla_spmd.frontend.tracing import Value


def _reshape(self, *shape):
    return numpy_shape.reshape(
        self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)


def _binary(function, reflected: bool = False):
    if reflected:
        return lambda self, other: function(other, self)
    return lambda self, other: function(self, other)


# (operator, function, also install the reflected operator)
_BINARY = (
    ("add", xnp.add, True), ("sub", xnp.subtract, True), ("mul", xnp.multiply, True),
    ("truediv", xnp.true_divide, True), ("floordiv", xnp.floor_divide, True),
    ("mod", xnp.remainder, True), ("pow", xnp.power, True), ("matmul", xnp.matmul, True),
    ("and", xnp.bitwise_and, True), ("or", xnp.bitwise_or, True),
    ("xor", xnp.bitwise_xor, True), ("lshift", xnp.left_shift, True),
    ("rshift", xnp.right_shift, True),
    ("lt", xnp.less, False), ("le", xnp.less_equal, False), ("gt", xnp.greater, False),
    ("ge", xnp.greater_equal, False), ("eq", xnp.equal, False), ("ne", xnp.not_equal, False),
)

_METHODS = {
    "__neg__": xnp.negative,
    "__pos__": lambda self: self,
    "__abs__": xnp.abs,
    "__invert__": xnp.invert,
    "__getitem__": numpy_index.getitem,
    "at": property(numpy_index.IndexUpdateHelper),
    "T": property(numpy_shape.transpose),
    "astype": xnp.astype,
    "reshape": _reshape,
    "transpose": lambda self, *axes: numpy_shape.transpose(self, axes or None),
    "sum": lambda self, axis=None, keepdims=False: numpy_reductions.sum(
        self, axis, keepdims=keepdims),
    "mean": lambda self, axis=None, keepdims=False: numpy_reductions.mean(
        self, axis, keepdims=keepdims),
    "max": lambda self, axis=None, keepdims=False: numpy_reductions.max(
        self, axis, keepdims=keepdims),
    "min": lambda self, axis=None, keepdims=False: numpy_reductions.min(
        self, axis, keepdims=keepdims),
    "argmax": lambda self, axis=None: numpy_reductions.argmax(self, axis),
    "argmin": lambda self, axis=None: numpy_reductions.argmin(self, axis),
    "squeeze": lambda self, axis=None: numpy_shape.squeeze(self, axis),
    "swapaxes": numpy_shape.swapaxes,
    "flatten": lambda self: numpy_shape.reshape(self, (-1,)),
    "ravel": lambda self: numpy_shape.reshape(self, (-1,)),
}


def install() -> None:
    """Attach the operators and methods to `Value` (idempotent)."""
    for name, function, reflected in _BINARY:
        setattr(Value, f"__{name}__", _binary(function))
        if reflected:
            setattr(Value, f"__r{name}__", _binary(function, reflected=True))
    for name, method in _METHODS.items():
        setattr(Value, name, method)
    Value.__hash__ = object.__hash__  # type: ignore[method-assign]  (__eq__ is elementwise)
    ScalarType.__call__ = lambda self, value: xnp.asarray(value, self.dtype)  # xnp.float32(x)


install()
