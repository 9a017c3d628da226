"""numpy's array interface for `ShardedArray`, so that results of `xs.jit` read as JAX arrays.

Eager math on a runtime ShardedArray (``loss < 2``, ``w - 0.1 * w``, ``w[0]``, ``w.sum()``,
``f"{loss:.3f}"``, ``print(w)``) gathers the global array and computes with numpy: the results
are numpy arrays (or Python scalars), Python scalars typed weakly (f32 + 1.0 is f32). The
arrays users get from ``xs.jit`` and ``xs.device_put`` are `xla_spmd.api.Array`s, whose
operators and math methods run on the devices instead and return sharded arrays, as JAX's.
Inside `xs.jit` nothing is gathered: a traced argument is a tracer, not a ShardedArray.

Under MPI, gathering an array that this rank does not hold whole is a collective: every rank
must do the same eager operations on it, in the same order (an array this rank holds whole,
such as a replicated loss, is read without communication).

>>> import numpy as np, xla_spmd as xs
>>> from xla_spmd.runtime import device_put
>>> xs.set_num_devices(2)
>>> mesh = xs.make_mesh({"x": 2})
>>> w = device_put(np.arange(4.0, dtype=np.float32), xs.NamedSharding(mesh, xs.P("x")))
>>> print(w)
[0. 1. 2. 3.]
>>> f"{w.sum():.1f}", float((w * 2)[1]), len(w), w.reshape(2, 2).T.tolist(), (w + 1.0).dtype
('6.0', 2.0, 4, [[0.0, 2.0], [1.0, 3.0]], dtype('float32'))
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import numpy as np

# Binary operators: (dunder name, function); each also gets its reflected form.
_BINARY = (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
           ("truediv", operator.truediv), ("floordiv", operator.floordiv),
           ("mod", operator.mod), ("pow", operator.pow), ("matmul", operator.matmul),
           ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
           ("lshift", operator.lshift), ("rshift", operator.rshift), ("divmod", divmod))
_COMPARISONS = (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
                ("ge", operator.ge), ("eq", operator.eq), ("ne", operator.ne))
_UNARY = (("neg", operator.neg), ("pos", operator.pos), ("abs", operator.abs),
          ("invert", operator.invert))
# ndarray methods that read the values; they return numpy arrays or scalars.
_METHODS = ("sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin", "any",
            "all", "cumsum", "cumprod", "reshape", "astype", "transpose", "ravel", "flatten",
            "squeeze", "tolist", "copy", "clip", "round", "dot", "conj", "nonzero", "swapaxes",
            "take", "repeat", "sort", "argsort", "trace", "diagonal")


def _operand(other):
    # Python scalars stay scalars, which numpy types weakly (f32 + 1.0 stays f32, as in JAX)
    return other if type(other) in (bool, int, float, complex) else np.asarray(other)


def _binary(function, reflected: bool):
    if reflected:
        def method(self, other):
            return function(_operand(other), self.gather())
    else:
        def method(self, other):
            return function(self.gather(), _operand(other))
    return method


def _unary(function):
    def method(self):
        return function(self.gather())
    return method


def _method(name: str):
    def method(self, *args, **kwargs):
        return getattr(self.gather(), name)(*args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"``numpy.ndarray.{name}`` of the gathered array."
    return method


class ArrayInterface:
    """Operators, indexing, formatting and ndarray methods on the gathered value.

    A subclass provides `gather()` (the global numpy array), `shape` and `dtype`.
    """

    __slots__ = ()
    # as JAX arrays (== is elementwise); None is how Python marks a class unhashable
    __hash__ = None  # pyright: ignore[reportAssignmentType]

    if TYPE_CHECKING:  # provided by the subclass
        shape: tuple[int, ...]
        dtype: np.dtype

    def gather(self) -> np.ndarray:
        raise NotImplementedError

    def __getitem__(self, index):
        return self.gather()[index]

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
    def T(self) -> np.ndarray:  # noqa: N802 (numpy's name)
        return self.gather().T

    @property
    def real(self) -> np.ndarray:
        return np.real(self.gather())

    @property
    def imag(self) -> np.ndarray:
        return np.imag(self.gather())

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    def block_until_ready(self):
        """Wait for the values (they are computed when the call returns): returns self."""
        return self


for _name, _function in _BINARY:
    setattr(ArrayInterface, f"__{_name}__", _binary(_function, reflected=False))
    setattr(ArrayInterface, f"__r{_name}__", _binary(_function, reflected=True))
for _name, _function in _COMPARISONS:
    setattr(ArrayInterface, f"__{_name}__", _binary(_function, reflected=False))
for _name, _function in _UNARY:
    setattr(ArrayInterface, f"__{_name}__", _unary(_function))
for _name in _METHODS:
    setattr(ArrayInterface, _name, _method(_name))
