"""numpy's array interface for `ShardedArray`, so that results of `xs.jit` read as JAX arrays.

Eager math on a ShardedArray (``w - 0.1 * w``, ``loss < 2``, ``w[0]``, ``w.sum()``,
``w.astype(...)``) runs on the devices as JAX's does, through the numpy-like API: each
operation is a one-op jitted program (traced and compiled once per signature), and its result
is a ShardedArray sharded as propagation gives it, with JAX's dtype (``y + 1.0`` on a f32
``y`` is f32). Formatting, printing, ``float()``, ``len()``, iteration, ``tolist()`` and the
other ndarray methods read the gathered value and give numpy values or Python scalars.
Inside `xs.jit` nothing of this runs: a traced argument is a tracer, not a ShardedArray.

Under MPI, an eager operation is a collective (every rank must do the same ones, in the same
order), and so is gathering an array that this rank does not hold whole (an array this rank
holds whole, such as a replicated loss, is read without communication).

>>> import numpy as np, xla_spmd as xs
>>> xs.set_num_devices(2)
>>> mesh = xs.make_mesh({"x": 2})
>>> w = xs.device_put(np.arange(4.0), xs.NamedSharding(mesh, xs.P("x")))
>>> print(w)
[0. 1. 2. 3.]
>>> type(w * 2).__name__, (w * 2).dtype, (w * 2).sharding.dim_axes(0) == w.sharding.dim_axes(0)
('ShardedArray', dtype('float32'), True)
>>> f"{w.sum():.1f}", float((w * 2)[1]), len(w), w.reshape(2, 2).T.tolist()
('6.0', 2.0, 4, [[0.0, 2.0], [1.0, 3.0]])
"""

from __future__ import annotations

import operator

import numpy as np

# Operators computed on the devices by the numpy-like API: (dunder name, its function's
# name); each binary one also gets its reflected form.
_DEVICE_BINARY = (("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                  ("truediv", "true_divide"), ("floordiv", "floor_divide"),
                  ("mod", "remainder"), ("pow", "power"), ("matmul", "matmul"),
                  ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                  ("lshift", "left_shift"), ("rshift", "right_shift"))
_DEVICE_COMPARISONS = (("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                       ("ge", "greater_equal"), ("eq", "equal"), ("ne", "not_equal"))
_DEVICE_UNARY = (("neg", "negative"), ("abs", "abs"), ("invert", "invert"))
# ndarray methods computed on the devices (same signatures in the numpy-like API).
_DEVICE_METHODS = ("sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin",
                   "any", "all", "cumsum", "cumprod", "astype", "transpose", "ravel",
                   "squeeze", "swapaxes", "clip")
# Operators and methods that read the gathered values (numpy results).
_BINARY = (("divmod", divmod),)
_METHODS = ("tolist", "copy", "round", "dot", "conj", "nonzero", "take", "repeat", "sort",
            "argsort", "trace", "diagonal")


def _xnp():
    from xla_spmd.frontend import numpy_api
    return numpy_api


def _device_binary(name: str, reflected: bool):
    if reflected:
        def method(self, other):
            return getattr(_xnp(), name)(other, self)
    else:
        def method(self, other):
            return getattr(_xnp(), name)(self, other)
    return method


def _device_function(name: str):
    def method(self, *args, **kwargs):
        return getattr(_xnp(), name)(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"``xla_spmd.numpy.{name}`` of this array, computed on the devices."
    return method


def _binary(function, reflected: bool):
    if reflected:
        def method(self, other):
            return function(np.asarray(other), self.gather())
    else:
        def method(self, other):
            return function(self.gather(), np.asarray(other))
    return method


def _method(name: str):
    def method(self, *args, **kwargs):
        return getattr(self.gather(), name)(*args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"``numpy.ndarray.{name}`` of the gathered array."
    return method


class ArrayInterface:
    """Operators, indexing and ndarray methods on the devices; formatting and conversions on
    the gathered value.

    A subclass provides `gather()` (the global numpy array), `shape`, `dtype` and `aval`.
    """

    __slots__ = ()
    __hash__ = None  # as JAX arrays (== is elementwise)

    def gather(self) -> np.ndarray:
        raise NotImplementedError

    def __getitem__(self, index):
        return _xnp().getitem(self, index)

    def __setitem__(self, index, value):
        raise TypeError(f"{type(self).__name__} is immutable (as JAX arrays are); compute "
                        "a new array instead, e.g. np.asarray(a).copy() and assign into it")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return iter(self.gather())

    def __format__(self, spec: str) -> str:
        if not self.shape:
            return format(self.gather().item(), spec)
        return format(self.gather(), spec) if spec else str(self)

    def __str__(self) -> str:
        return str(self.gather())

    def __complex__(self) -> complex:
        return complex(self.gather())

    def __index__(self) -> int:
        return operator.index(self.gather().item())

    def __round__(self, ndigits=None):
        return round(self.gather().item(), ndigits) if not self.shape else \
            np.round(self.gather(), ndigits or 0)

    @property
    def T(self):  # noqa: N802 (numpy's name)
        return _xnp().transpose(self)

    def reshape(self, *shape):
        """``xla_spmd.numpy.reshape``, computed on the devices (``a.reshape(2, 3)`` too)."""
        return _xnp().reshape(self, shape[0] if len(shape) == 1 and not isinstance(
            shape[0], int) else shape)

    def flatten(self):
        return _xnp().reshape(self, (-1,))

    def __pos__(self):
        return self

    @property
    def real(self) -> np.ndarray:
        return self.gather().real

    @property
    def imag(self) -> np.ndarray:
        return self.gather().imag

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    def block_until_ready(self):
        """Wait for the values (they are computed when the call returns): returns self."""
        return self


for _name, _function_name in _DEVICE_BINARY:
    setattr(ArrayInterface, f"__{_name}__", _device_binary(_function_name, reflected=False))
    setattr(ArrayInterface, f"__r{_name}__", _device_binary(_function_name, reflected=True))
for _name, _function_name in _DEVICE_COMPARISONS:
    setattr(ArrayInterface, f"__{_name}__", _device_binary(_function_name, reflected=False))
for _name, _function_name in _DEVICE_UNARY:
    setattr(ArrayInterface, f"__{_name}__", _device_function(_function_name))
for _name in _DEVICE_METHODS:
    setattr(ArrayInterface, _name, _device_function(_name))
for _name, _function in _BINARY:
    setattr(ArrayInterface, f"__{_name}__", _binary(_function, reflected=False))
    setattr(ArrayInterface, f"__r{_name}__", _binary(_function, reflected=True))
for _name in _METHODS:
    setattr(ArrayInterface, _name, _method(_name))
