"""Traces and traced values: numpy-like functions `bind` IR ops; the current trace decides
what a bind does.

* Inside `jit`, loop bodies, branches and autodiff, a `Trace` holds a `Builder`: `bind`
  appends an instruction and returns a `Tracer` wrapping it.
* Outside any trace (the "eager" trace), `bind` builds a one-op module and evaluates it on
  the reference backend at once, returning a concrete `Array`.

Invariants: a `Tracer` belongs to one trace; a tracer of an enclosing trace used inside a
nested one becomes an explicit parameter of the nested computation (a *capture*, since HLO
computations cannot close over values); concrete values become constants. Python scalars
are *weakly typed* (as in JAX: ``x * 2.0`` keeps ``x``'s f32).

>>> from xla_spmd.ir import ArrayShape, F32
>>> trace = Trace("f")
>>> with trace:
...     x = trace.new_parameter(ArrayShape(F32, (3,)))
...     y = bind("negate", x)
>>> str(y.aval), y.inst.opcode
('f32[3]', 'negate')
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from xla_spmd.backends.reference import evaluate
from xla_spmd.errors import ShardingError, XlaSpmdError
from xla_spmd.frontend.dtypes import canonical_array
from xla_spmd.ir import (
    PRED,
    ArrayShape,
    Builder,
    ComparisonDirection,
    ComparisonType,
    Computation,
    DType,
    Instruction,
    Module,
    Shape,
    TupleShape,
    op_named,
)
from xla_spmd.ir.module import Sharding, make_instruction
from xla_spmd.ir.reducers import scalar_reducer
from xla_spmd.mesh import Mesh
from xla_spmd.sharding import NamedSharding, PartitionSpec, TensorSharding

# Annotation aliases for the frontend's public functions, as JAX's ``jax.typing``. An
# `ArrayLike` is anything an op takes as an operand: a `Value` (traced or concrete), a NumPy
# array or scalar, a Python number or bool; a `DTypeLike` anything `lax.as_dtype` reads (a
# DType, a NumPy dtype or type, a name, ``int``/``float``); an `AxisName` one mesh axis name
# or a tuple of them. They stay `Any` for the checker: the frontend converts such values at
# run time (`aval_of`, `as_value`), so a union would only move that check into every body.
ArrayLike: TypeAlias = Any
DTypeLike: TypeAlias = Any
AxisName: TypeAlias = Any
_TRACES: list[Trace] = []
# Source locations: the folder of our own code (frames in it are skipped), and the metadata
# of the forward op whose VJP rule is running (its backward ops point at the same line).
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SOURCES: list[str] = []
# Functions ``infer(inst, operands) -> sharding | None`` asked for the sharding type of each
# op bound without a sharding (xla_spmd.frontend.sharding_types installs one).
TYPE_RULES: list = []
# Functions ``capture_type(trace, outer value) -> (sharding | None, known)`` giving the
# parameter a nested trace makes for a captured value its sharding type (sharding_types).
CAPTURE_TYPES: list = []
_NAMES = itertools.count(1)


def fresh_name(base: str) -> str:
    """A computation name unique in this process (so modules never repeat one)."""
    return f"{base}.{next(_NAMES)}"


class TracingError(XlaSpmdError):
    """A traced value used where it cannot be (leaked, or converted to a Python value)."""


# ---------------------------------------------------------------------------------------------
# Values


class Value:
    """What numpy-like functions accept and return: a `Tracer` or a concrete `Array`.

    `aval` is the IR shape (element type and dims); `weak_type` marks values born from Python
    scalars, which adopt the element type of what they meet.
    """

    __slots__ = ()
    __array_priority__ = 100

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.dims

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype.array_dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.dims)

    @property
    def size(self) -> int:
        return int(np.prod(self.aval.dims))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        # Explicit: indexing clamps out-of-range indices (as JAX), so it cannot end a loop.
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    # The operators (+, <, [], .sum(), ...) are installed by the numpy layer:
    # `xla_spmd.frontend.array_methods`.
    __hash__ = object.__hash__

    if TYPE_CHECKING:
        # For type checkers: the subclasses define `aval` and `weak_type`, and
        # `array_methods` installs these operators and methods at import.
        @property
        def aval(self) -> ArrayShape: ...

        weak_type: bool

        def __add__(self, other: Any) -> Value: ...
        def __radd__(self, other: Any) -> Value: ...
        def __sub__(self, other: Any) -> Value: ...
        def __rsub__(self, other: Any) -> Value: ...
        def __mul__(self, other: Any) -> Value: ...
        def __rmul__(self, other: Any) -> Value: ...
        def __truediv__(self, other: Any) -> Value: ...
        def __rtruediv__(self, other: Any) -> Value: ...
        def __floordiv__(self, other: Any) -> Value: ...
        def __rfloordiv__(self, other: Any) -> Value: ...
        def __mod__(self, other: Any) -> Value: ...
        def __rmod__(self, other: Any) -> Value: ...
        def __pow__(self, other: Any) -> Value: ...
        def __rpow__(self, other: Any) -> Value: ...
        def __matmul__(self, other: Any) -> Value: ...
        def __rmatmul__(self, other: Any) -> Value: ...
        def __and__(self, other: Any) -> Value: ...
        def __rand__(self, other: Any) -> Value: ...
        def __or__(self, other: Any) -> Value: ...
        def __ror__(self, other: Any) -> Value: ...
        def __xor__(self, other: Any) -> Value: ...
        def __rxor__(self, other: Any) -> Value: ...
        def __lshift__(self, other: Any) -> Value: ...
        def __rlshift__(self, other: Any) -> Value: ...
        def __rshift__(self, other: Any) -> Value: ...
        def __rrshift__(self, other: Any) -> Value: ...
        def __lt__(self, other: Any) -> Value: ...
        def __le__(self, other: Any) -> Value: ...
        def __gt__(self, other: Any) -> Value: ...
        def __ge__(self, other: Any) -> Value: ...
        def __eq__(self, other: Any) -> Value: ...  # type: ignore[override]
        def __ne__(self, other: Any) -> Value: ...  # type: ignore[override]
        def __neg__(self) -> Value: ...
        def __pos__(self) -> Value: ...
        def __abs__(self) -> Value: ...
        def __invert__(self) -> Value: ...
        def __getitem__(self, index: Any) -> Value: ...
        @property
        def at(self) -> Any: ...
        @property
        def T(self) -> Value: ...
        def astype(self, dtype: Any) -> Value: ...
        def reshape(self, *shape: Any) -> Value: ...
        def transpose(self, *axes: int) -> Value: ...
        def sum(self, axis: Any = None, keepdims: bool = False) -> Value: ...
        def mean(self, axis: Any = None, keepdims: bool = False) -> Value: ...
        def max(self, axis: Any = None, keepdims: bool = False) -> Value: ...
        def min(self, axis: Any = None, keepdims: bool = False) -> Value: ...
        def argmax(self, axis: Any = None) -> Value: ...
        def argmin(self, axis: Any = None) -> Value: ...
        def squeeze(self, axis: Any = None) -> Value: ...
        def swapaxes(self, axis1: int, axis2: int) -> Value: ...
        def flatten(self) -> Value: ...
        def ravel(self) -> Value: ...


class Tracer(Value):
    """A value being traced: it wraps the `Instruction` that computes it in `trace`."""

    __slots__ = ("trace", "inst", "weak_type")

    def __init__(self, trace: Trace, inst: Instruction, weak_type: bool = False):
        self.trace = trace
        self.inst = inst
        self.weak_type = weak_type

    @property
    def aval(self) -> Shape:
        return self.inst.shape

    def __bool__(self):
        raise TracingError(f"a traced value ({self.aval}) has no concrete truth value; use "
                           "xnp.where, lax.cond or lax.while_loop instead of Python control "
                           "flow on traced values")

    def __array__(self, dtype=None, copy=None):
        raise TracingError(f"a traced value ({self.aval}) cannot be converted to a numpy "
                           "array inside a trace; return it from the traced function")

    def __repr__(self) -> str:
        return f"Tracer<{self.aval}>"


class Array(Value):
    """A concrete value (outside any trace): a numpy array, or a tuple of values for tuple
    shapes. Converts to numpy with ``np.asarray``."""

    __slots__ = ("value", "weak_type", "_aval")

    def __init__(self, value, weak_type: bool = False):
        # Evaluators may return numpy scalars; `__array__` must give an ndarray.
        self.value = value if isinstance(value, tuple) else np.asarray(value)
        self.weak_type = weak_type
        self._aval = aval_of_concrete(value)

    @property
    def aval(self) -> Shape:
        return self._aval

    @property
    def sharding(self) -> NamedSharding:
        """The whole value on one device (JAX's ``SingleDeviceSharding``): a `NamedSharding`
        over a mesh of one device, with an empty spec."""
        return NamedSharding(Mesh((), ()), PartitionSpec())

    def _array(self) -> np.ndarray:
        if isinstance(self.value, tuple):
            raise TypeError(f"a tuple value ({self.aval}) is not an array")
        return self.value

    def __array__(self, dtype=None, copy=None):
        return self.value if dtype is None else self._array().astype(dtype)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __float__(self) -> float:
        return float(self._array())

    def __int__(self) -> int:
        return int(self._array())

    def __index__(self) -> int:
        return int(self._array())

    def item(self) -> Any:
        return self._array().item()

    def tolist(self) -> Any:
        return self._array().tolist()

    def __repr__(self) -> str:
        return f"Array({self.value!r})"


def aval_of_concrete(value: ArrayLike) -> Shape:
    if isinstance(value, tuple):
        return TupleShape(tuple(aval_of_concrete(v) for v in value))
    array = np.asarray(value)
    return ArrayShape(DType.from_numpy(array.dtype), array.shape)


def is_weak(x: ArrayLike) -> bool:
    """Whether `x` is weakly typed: a Python int, float or complex (not bool, not a numpy
    scalar, as in JAX), or a value born from one."""
    return type(x) in (int, float, complex) or getattr(x, "weak_type", False)


def aval_of(x: ArrayLike) -> Shape:
    """The IR shape of any array-like: a value's own, else that of its canonical array
    (Python scalars get their default type; without x64, 64-bit types narrow to 32)."""
    if isinstance(x, Value):
        return x.aval
    aval = getattr(x, "aval", None)  # a distributed array: read without gathering
    if aval is not None:
        return aval
    return aval_of_concrete(canonical_array(x))


@dataclass(frozen=True)
class ShapeDtypeStruct:
    """A shape and dtype standing for an array (JAX's ``ShapeDtypeStruct``), for
    `eval_shape` and ``jit(f).lower``/``trace``."""

    shape: tuple
    dtype: np.dtype
    sharding: object = None
    weak_type: bool = False

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def aval(self) -> ArrayShape:
        return ArrayShape(DType.from_numpy(self.dtype), self.shape)


def python_scalar_array(x: ArrayLike) -> np.ndarray:
    """A Python scalar as an array of its default type (s32, f32, c64 or pred; 64-bit with
    x64); anything else as its canonical array."""
    return canonical_array(x)


# ---------------------------------------------------------------------------------------------
# Traces


class Trace:
    """A tracing context: binds append instructions to its `builder`.

    A trace opened inside another is *nested*: tracers of enclosing traces it meets become
    extra parameters (`captures`, in order), which its user passes as explicit operands.
    """

    def __init__(self, name: str, *, manual=None):
        self.name = name
        self.builder = Builder(name)
        self.parent = _TRACES[-1] if _TRACES else None
        self.captures: list[Tracer] = []          # outer values, one per capture parameter
        self._captured: dict[int, Instruction] = {}
        self.parameters: list[Instruction] = []
        # The manual (shard_map) region this trace is in: its mesh and manual axes.
        self.manual = manual if manual is not None else (self.parent.manual if self.parent
                                                          else None)
        # The named meshes the sharding text of this (outermost) trace refers to (`@mesh`):
        # what becomes the module's ``xla.sdy.meshes`` (see `declare_mesh`).
        self.meshes: dict[str, Mesh] = {}

    def __enter__(self):
        _TRACES.append(self)
        return self

    def __exit__(self, *exc):
        popped = _TRACES.pop()
        assert popped is self

    def new_parameter(self, aval: Shape, name: str | None = None,
                      sharding: TensorSharding | None = None) -> Tracer:
        inst = self.builder.parameter(aval, name or f"Arg_{len(self.parameters)}",
                                      sharding=sharding)
        self.parameters.append(inst)
        return Tracer(self, inst)

    def _is_ancestor(self, trace: Trace) -> bool:
        t = self.parent
        while t is not None:
            if t is trace:
                return True
            t = t.parent
        return False

    def to_inst(self, x: ArrayLike, dtype: DType | None = None) -> Instruction:
        """The instruction of `x` in this trace: its own, a capture, or a new constant."""
        if isinstance(x, Tracer):
            if x.trace is self:
                return x.inst
            if not self._is_ancestor(x.trace):
                raise TracingError(f"a traced value {x.aval} escaped the trace that made it "
                                   "(stored outside the function, or used after it returned)")
            key = id(x.inst)
            if key not in self._captured:
                number = len(self.parameters)
                typed, known = None, False
                for rule in CAPTURE_TYPES:
                    typed, known = rule(self, x)
                param = self.builder.parameter(x.aval, f"capture.{number}", sharding=typed)
                if known:
                    self.__dict__.setdefault("_known_params", set()).add(id(param))
                self.parameters.append(param)
                self.captures.append(x)
                self._captured[key] = param
            return self._captured[key]
        value = x.value if isinstance(x, Array) else x
        if isinstance(value, tuple):
            return self.builder.tuple(*[self.to_inst(Array(v)) for v in value])
        array = canonical_array(value)
        if dtype is not None:
            array = array.astype(dtype.numpy)
        return self.builder.constant(array)

    def bind(self, opcode: str, operands: Sequence[Any], shape: Shape | None, attrs: dict,
             extra: dict) -> Tracer:
        insts = [self.to_inst(o) for o in operands]
        inst = self.builder.op(opcode, *insts, shape=shape, **attrs)
        extras = extra.get("extras", ())
        if not any(key == "metadata" for key, _ in extras):
            metadata = source_metadata()
            if metadata is not None:
                extra = {**extra, "extras": (*extras, ("metadata", metadata))}
        if "sharding" not in extra:
            for rule in TYPE_RULES:
                typed = rule(inst, operands)
                if typed is not None:
                    extra = {**extra, "sharding": typed}
                    break
        if extra:
            inst = inst.replace(**extra)
            self.builder.instructions[-1] = inst
        return Tracer(self, inst)


def source_metadata() -> str | None:
    """XLA's ``metadata={source_file=... source_line=...}`` text for the user's line that
    is binding an op: the innermost frame outside xla_spmd (as JAX records it)."""
    if _SOURCES:
        return _SOURCES[-1]
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        return None
    file = frame.f_code.co_filename.replace("\\", "/").replace('"', "'")
    return f'{{source_file="{file}" source_line={frame.f_lineno}}}'


@contextlib.contextmanager
def source_of(inst: Instruction) -> Iterator[None]:
    """Ops bound inside the block carry `inst`'s source location (autodiff: the backward
    ops of a forward op point at the user's line of the forward op)."""
    metadata = next((value for key, value in inst.extras if key == "metadata"), None)
    if metadata is None:
        yield
        return
    _SOURCES.append(metadata)
    try:
        yield
    finally:
        _SOURCES.pop()


def current_trace() -> Trace | None:
    return _TRACES[-1] if _TRACES else None


def is_distributed(x: ArrayLike) -> bool:
    """Whether `x` is an array of the runtime, held as shards on the devices (eager ops here
    read its gathered value; ``xs.Array``'s operators run on its devices)."""
    return hasattr(x, "addressable_shards") and not isinstance(x, Value)


# Meshes of traces that have finished but whose program is still being differentiated
# (`mesh_scope`); innermost last.
_MESH_SCOPES: list[Mapping[str, Mesh]] = []


def declare_mesh(name: str, mesh: Mesh) -> None:
    """Record, on the outermost trace, that sharding text written in this program names
    `mesh` as ``@name`` (jit writes them as the module's ``xla.sdy.meshes``)."""
    if not _TRACES:
        return
    meshes = _TRACES[0].meshes
    known = meshes.get(name)
    if known is not None and known != mesh:
        raise ShardingError(f"two meshes named {name!r} in one program: {known!r} and "
                            f"{mesh!r}; give each mesh of a program its own name")
    meshes[name] = mesh


def declared_meshes() -> dict[str, Mesh]:
    """The named meshes of the programs being traced or differentiated now."""
    found: dict[str, Mesh] = {}
    for meshes in [*_MESH_SCOPES, *(t.meshes for t in _TRACES)]:
        found.update(meshes)
    return found


@contextlib.contextmanager
def mesh_scope(meshes: Mapping[str, Mesh]) -> Iterator[None]:
    """Keep a finished trace's `meshes` declared while its program is differentiated."""
    _MESH_SCOPES.append(meshes)
    try:
        yield
    finally:
        _MESH_SCOPES.pop()


def _eager_bind(opcode: str, operands, shape, attrs: dict, extra: dict) -> Array:

    builder = Builder("eager")
    args, params = [], []
    for x in operands:
        if isinstance(x, Tracer):
            raise TracingError(f"a traced value {x.aval} escaped its trace")
        value = x.value if isinstance(x, Array) else canonical_array(x)
        args.append(value)
        params.append(builder.parameter(aval_of_concrete(value)))
    inst = builder.op(opcode, *params, shape=shape, **attrs)
    if extra:
        inst = inst.replace(**extra)
        builder.instructions[-1] = inst
    module = Module.from_entry(f"eager_{opcode}", builder.build(inst))
    return Array(evaluate(module, args))


def bind(opcode: str, *operands: Any, shape: Shape | None = None, weak_type: bool = False,
         frontend_attributes: Iterable[tuple[str, str]] = (),
         extras: Iterable[tuple[str, str]] = (), sharding: Sharding | None = None,
         **attrs: Any) -> Value:
    """Apply IR op `opcode` to `operands` in the current trace (or evaluate it eagerly).

    Operands must already have the types the op requires; attributes are named as in HLO text.
    """
    extra = {}
    if frontend_attributes:
        extra["frontend_attributes"] = tuple(frontend_attributes)
    if extras:
        extra["extras"] = tuple(extras)
    if sharding is not None:
        extra["sharding"] = sharding
    trace = current_trace()
    if trace is None:
        out = _eager_bind(opcode, operands, shape, attrs, extra)
    else:
        out = trace.bind(opcode, operands, shape, attrs, extra)
    out.weak_type = weak_type
    return out


def attrs_dict(inst: Instruction) -> dict:
    """An instruction's attributes as keyword arguments for `bind` / `Builder.op`."""
    return {spec.name: getattr(inst.attrs, f.name)
            for spec, f in zip(inst.op.attrs, fields(inst.attrs))}


def rebind(inst: Instruction, operands: Sequence[ArrayLike]) -> Value:
    """Bind `inst`'s op again, with its attributes, on new operands."""
    shape = inst.shape if inst.op.needs_declared_shape else None
    return bind(inst.opcode, *operands, shape=shape, frontend_attributes=inst.frontend_attributes,
                extras=inst.extras, sharding=inst.sharding, **attrs_dict(inst))


# ---------------------------------------------------------------------------------------------
# Nested traces: functions to computations


def trace_computation(fn: Callable[..., Any], in_avals: Sequence[Shape], name: str, *,
                      manual: Any = None, shardings: Sequence[TensorSharding | None] | None = None,
                      known: Sequence[bool] | None = None) -> tuple[Trace, list[Instruction]]:
    """Trace `fn(*tracers)` (returning a flat list of values) into a new trace; `shardings`
    (one per input, or None) are its parameters' shardings (the sharding types of the values
    a transform passes in), `known` (one flag per input) which untyped ones count as
    replicated (see `xla_spmd.frontend.sharding_types.known`).

    Returns ``(trace, outputs)``: `trace.parameters` are the explicit parameters followed by
    one per capture (`trace.captures` holds the outer values to pass for them); `outputs`
    are the instructions of the results.
    """
    trace = Trace(name, manual=manual)
    with trace:
        given = shardings if shardings is not None else [None] * len(in_avals)
        args = [trace.new_parameter(aval, f"Arg_{i}", sharding=sharding)
                for i, (aval, sharding) in enumerate(zip(in_avals, given))]
        if known is not None:
            trace.__dict__.setdefault("_known_params", set()).update(
                id(a.inst) for a, flag in zip(args, known) if flag)
        outs = fn(*args)
        out_insts = [trace.to_inst(o) for o in outs]
    return trace, out_insts


def finish(trace: Trace, outputs: Sequence[Instruction], *, tuple_root: bool) -> Computation:
    """The computation of a finished nested trace with its outputs as root."""
    b = trace.builder
    if tuple_root or len(outputs) != 1:
        root = b.tuple(*outputs)
    else:
        root = outputs[0]
    return b.build(root, trace.name)


def repack(trace: Trace, outputs: Sequence[Instruction], positions: Sequence[int],
           tuple_shapes: Iterable[Shape], extra_outputs: Iterable[int] = (),
           name: str | None = None, tuple_root: bool = True) -> Computation:
    """Rebuild a traced computation so it takes one tuple parameter of `tuple_shapes`:
    its parameter k reads element `positions[k]`. The root is a tuple of `outputs` followed
    by the tuple elements at `extra_outputs` (pass-through state of loops)."""
    b = Builder(name or trace.name)
    param = b.parameter(TupleShape(tuple(tuple_shapes)), "arg_tuple")
    elements: dict[int, Instruction] = {}

    def element(i):
        if i not in elements:
            elements[i] = b.get_tuple_element(param, index=i)
        return elements[i]

    mapping = {id(p): element(positions[k]) for k, p in enumerate(trace.parameters)}
    for inst in trace.builder.instructions:
        if inst.opcode == "parameter":
            continue
        operands = [mapping[id(o)] for o in inst.operands]
        shape = inst.shape if inst.op.needs_declared_shape else None
        new = make_instruction(b.fresh_name(inst.opcode), inst.op, operands, inst.attrs, shape,
                               sharding=inst.sharding,
                               frontend_attributes=inst.frontend_attributes,
                               extras=inst.extras)
        b.instructions.append(new)
        mapping[id(inst)] = new
    roots = [mapping[id(o)] for o in outputs] + [element(i) for i in extra_outputs]
    root = b.tuple(*roots) if tuple_root or len(roots) != 1 else roots[0]
    return b.build(root)


# ---------------------------------------------------------------------------------------------
# Reducers and comparators: small computations built once per (kind, dtype)

_REDUCERS: dict[tuple, Computation] = {}


def reducer(kind: str, dtype: DType) -> Computation:
    """The scalar computation ``(a, b) -> a <kind> b`` (kind: add, max, min, mul, and, or;
    `set` returns b, for scatter with replacement)."""
    key = (kind, dtype.name)
    if key not in _REDUCERS:
        _REDUCERS[key] = scalar_reducer(kind, dtype, fresh_name(f"region_{kind}_{dtype.name}"))
    return _REDUCERS[key]


def comparator(dtypes: Sequence[DType], descending: bool = False, num_keys: int = 1) -> Computation:
    """A sort comparator over operands of `dtypes` comparing the first `num_keys` (lexicographic,
    total order for floats so NaNs sort last)."""
    key = ("sort", tuple(d.name for d in dtypes), descending, num_keys)
    if key not in _REDUCERS:
        b = Builder("compare")
        params = []
        for i, dtype in enumerate(dtypes):
            params.append(b.parameter(ArrayShape(dtype, ()), f"lhs.{i}"))
            params.append(b.parameter(ArrayShape(dtype, ()), f"rhs.{i}"))
        direction = "GT" if descending else "LT"
        result = None
        for k in reversed(range(num_keys)):
            lhs, rhs = params[2 * k], params[2 * k + 1]
            ctype = "TOTALORDER" if dtypes[k].is_float else None
            less = _compare(b, lhs, rhs, direction, ctype)
            if result is None:
                result = less
            else:
                equal = _compare(b, lhs, rhs, "EQ", ctype)
                result = b.op("or", less, b.op("and", equal, result))
        assert result is not None  # a comparator compares at least one pair
        _REDUCERS[key] = b.build(result, fresh_name("region_compare"))
    return _REDUCERS[key]


def _compare(b: Builder, lhs, rhs, direction: str, ctype):
    return b.op("compare", lhs, rhs, direction=ComparisonDirection(direction),
                type=None if ctype is None else ComparisonType(ctype))


def is_float(x: ArrayLike) -> bool:
    aval = aval_of(x)
    return isinstance(aval, ArrayShape) and (aval.dtype.is_float or aval.dtype.is_complex)


def check_opcode(name: str) -> None:
    op_named(name)


__all__ = ["Array", "PRED", "Trace", "Tracer", "TracingError", "Value", "aval_of", "bind",
           "current_trace", "finish", "fresh_name", "rebind", "repack", "reducer",
           "trace_computation"]
