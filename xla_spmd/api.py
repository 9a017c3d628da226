"""``xs.jit`` and ``xs.shard_map``: frontend tracing joined with `xla_spmd.pipeline` and the
runtime, at the top of the layers.

A jitted function is traced once per input signature (`xla_spmd.frontend.jit`). A program
that carries shardings (``in_shardings`` / ``out_shardings``, sharded arguments,
``with_sharding_constraint``, ``shard_map``) is compiled once by `pipeline.compile` for this
process's devices, and each call runs it there (`xla_spmd.runtime.jit_runtime.Runner`),
returning `ShardedArray`s. A program without a sharding is evaluated on one device.

>>> import numpy as np, xla_spmd as xs
>>> xs.set_num_devices(4)
>>> mesh = xs.make_mesh({"x": 4})
>>> f = xs.jit(lambda a: (a * 2).sum(0), in_shardings=xs.NamedSharding(mesh, xs.P("x")))
>>> np.asarray(f(np.arange(8.0).reshape(4, 2)))
array([24., 32.], dtype=float32)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import overload

import numpy as np

import xla_spmd.cost as cost
import xla_spmd.numpy as xnp
import xla_spmd.pipeline as pipeline
from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend import constraints, sharding_types
from xla_spmd.frontend import jit as frontend_jit
from xla_spmd.frontend import shard_map as frontend_shard_map
from xla_spmd.frontend.pytree import tree_flatten, tree_leaves, tree_map, tree_unflatten
from xla_spmd.frontend.tracing import current_trace
from xla_spmd.ir import Module
from xla_spmd.runtime import sharded_array
from xla_spmd.runtime.devices import local_devices, topology
from xla_spmd.runtime.jit_runtime import Runner
from xla_spmd.runtime.sharded_array import ShardedArray
from xla_spmd.runtime.sharded_array import device_put as runtime_device_put


@dataclass(frozen=True)
class DeviceProgram:
    """A traced program compiled for the job's devices: the pipeline's `program` and the
    `runner` that calls it on sharded arguments."""

    program: pipeline.Program
    runner: Runner


def compile_for_devices(module: Module) -> DeviceProgram | None:
    """`module` through the pipeline, compiled for this process's devices; None when it
    has no sharding (one device is all it needs)."""
    mesh = pipeline.program_mesh(module)
    num_devices = topology().num_devices
    if mesh is None or mesh.size == 1 < num_devices:
        return None
    program = pipeline.compile(module, mesh=mesh,
                               devices=[d.id for d in local_devices() if d.id < mesh.size])
    assert program.executable is not None  # compile() compiled it for the devices
    return DeviceProgram(program, Runner(program.module, program.executable))


class Jitted(frontend_jit.Jitted):
    """A jitted function whose sharded programs run on the devices (see the module
    docstring); each traced signature is compiled once."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._compiled: dict = {}  # trace cache key -> DeviceProgram or None

    def device_program(self, lowered: frontend_jit.Lowered) -> DeviceProgram | None:
        """`lowered` compiled for the devices, once (None when it has no sharding)."""
        key = lowered._key
        if key not in self._compiled:
            self._compiled[key] = compile_for_devices(lowered.module)
        return self._compiled[key]

    def run(self, lowered: frontend_jit.Lowered, leaves: list):
        compiled = self.device_program(lowered)
        if compiled is None:
            return super().run(lowered, leaves)
        results = [Array.of(r) for r in compiled.runner(leaves)]
        for result, weak in zip(results, getattr(lowered, "out_weak_types", ())):
            result.weak_type = weak  # a weakly typed result stays weak, as JAX's
        return tree_unflatten(lowered.out_tree, results)

    def spmd_module(self, lowered: frontend_jit.Lowered) -> Module | None:
        compiled = self.device_program(lowered)
        return None if compiled is None else compiled.program.spmd_module

    def propagated_module(self, lowered: frontend_jit.Lowered) -> Module | None:
        compiled = self.device_program(lowered)
        return None if compiled is None else compiled.program.module

    @staticmethod
    def cost_analysis(module: Module) -> dict:
        """FLOPs and bytes accessed of one device running `module` (see `Compiled`)."""
        return cost.totals(module)

    @staticmethod
    def memory_analysis(module: Module):
        """Per-device memory of `module` (see `Compiled`)."""
        return cost.memory_stats(module)


@overload
def jit(fn: Callable, *, in_shardings=None, out_shardings=None, static_argnums=(),
        static_argnames=(), donate_argnums=()) -> Jitted: ...


@overload
def jit(fn: None = None, *, in_shardings=None, out_shardings=None, static_argnums=(),
        static_argnames=(), donate_argnums=()) -> Callable[[Callable], Jitted]: ...


def jit(fn: Callable | None = None, *, in_shardings=None, out_shardings=None,
        static_argnums=(), static_argnames=(), donate_argnums=()
        ) -> Jitted | Callable[[Callable], Jitted]:
    """Trace `fn` once per input signature and run it, partitioned over the devices when it
    is sharded; ``jit(f)``, ``@jit`` or ``@jit(...)`` (arguments as
    `xla_spmd.frontend.jit.jit`)."""
    def wrap(f):
        return Jitted(f, in_shardings, out_shardings, static_argnums, donate_argnums,
                      static_argnames)
    return wrap if fn is None else wrap(fn)


def shard_map(fn: Callable | None = None, mesh=None, in_specs=None, out_specs=None,
              axis_names=None, check_vma: bool = True):
    """`xla_spmd.frontend.shard_map.shard_map`; called outside a trace, it runs through
    `jit` on the mesh's devices. Without `fn` it is a decorator factory, as JAX's
    (``@shard_map(mesh=mesh, in_specs=P("x"), out_specs=P())``).

    >>> import numpy as np, xla_spmd as xs, xla_spmd.lax as lax
    >>> xs.set_num_devices(4)
    >>> @xs.shard_map(mesh=xs.make_mesh({"x": 4}), in_specs=xs.P("x"), out_specs=xs.P())
    ... def total(block):
    ...     return lax.psum(block.sum(), "x")
    >>> float(total(np.arange(8.0)))
    28.0
    """
    if fn is None:
        return functools.partial(shard_map, mesh=mesh, in_specs=in_specs,
                                 out_specs=out_specs, axis_names=axis_names,
                                 check_vma=check_vma)
    if mesh is None or in_specs is None or out_specs is None:
        raise TypeError("shard_map needs mesh=, in_specs= and out_specs=")
    body = frontend_shard_map.shard_map(fn, mesh, in_specs, out_specs, axis_names, check_vma)
    jitted = jit(body)

    @functools.wraps(fn)
    def wrapped(*args):
        return body(*args) if current_trace() is not None else jitted(*args)
    return wrapped


# ---------------------------------------------------------------------------------------------
# Arrays whose eager math runs on their devices


class Array(ShardedArray):
    """What ``xs.jit`` and ``xs.device_put`` return: a `ShardedArray` whose operators and
    math methods run on its devices, as ``jax.Array``'s do. Each is a jitted program of one
    numpy-like function (traced and compiled once per signature); its result is an Array
    sharded as propagation gives it (``y + 1.0`` keeps ``y``'s sharding), with JAX's dtype
    (``y + 1.0`` on a float32 ``y`` is float32). Formatting, ``float()``, ``len()``,
    iteration and ``tolist()`` read the gathered value. Under MPI every rank must do the same
    eager operations, in the same order.

    >>> import numpy as np, xla_spmd as xs
    >>> xs.set_num_devices(2)
    >>> y = xs.device_put(np.ones((2, 4), np.float32),
    ...                   xs.NamedSharding(xs.make_mesh({"x": 2}), xs.P("x")))
    >>> z = y * 2 + 1.0
    >>> type(z).__name__, z.dtype, z.sharding == y.sharding
    ('Array', dtype('float32'), True)
    >>> float(z.sum())
    24.0
    """

    @classmethod
    def of(cls, array):
        """`array` as an Array (a runtime ShardedArray shares its shards; others pass)."""
        if isinstance(array, cls) or not isinstance(array, ShardedArray):
            return array
        out = cls(array.shape, array.dtype, array.tensor_sharding, array._shards)
        out.weak_type = array.weak_type
        return out

    def __getitem__(self, index):
        static, dynamic = _split_index(index)
        if static is None or dynamic is None:  # boolean masks: a data-dependent shape,
            # read from the values
            return super().__getitem__(index)
        return _eager("getitem", static)(self, *dynamic)

    @property
    def T(self):  # noqa: N802 (numpy's name)
        return _eager("transpose")(self)

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return _eager("reshape", tuple(shape))(self)

    def flatten(self):
        return _eager("reshape", (-1,))(self)

    def __pos__(self):
        return self

    @property
    def at(self):
        """Out-of-place updates run on the devices, as ``jax.Array.at``:
        ``x.at[i].set(v)``, ``.add``, ``.multiply``, ``.min``, ``.max``, ``.get()``."""
        return _AtHelper(self)


class _AtHelper:
    def __init__(self, array: Array):
        self.array = array

    def __getitem__(self, index):
        return _AtRef(self.array, index)


class _AtRef:
    """``x.at[index]`` of a device array; each method takes JAX's ``out_sharding=``."""

    def __init__(self, array: Array, index):
        self.array, self.index = array, index

    def _update(self, method: str, values, out_sharding=None):
        static, dynamic = _split_index(self.index)
        if static is None or dynamic is None:
            raise TypeError("x.at[mask] with a boolean mask has a data-dependent shape; use "
                            "xnp.where")
        return _eager("at", static, method, out_sharding)(self.array, values, *dynamic)

    def get(self, *, out_sharding=None):
        if out_sharding is None:
            return self.array[self.index]
        return self._update("get", None, out_sharding)

    def set(self, values, *, out_sharding=None):
        return self._update("set", values, out_sharding)

    def add(self, values, *, out_sharding=None):
        return self._update("add", values, out_sharding)

    def multiply(self, values, *, out_sharding=None):
        return self._update("multiply", values, out_sharding)

    def min(self, values, *, out_sharding=None):  # noqa: A003 (JAX's name)
        return self._update("min", values, out_sharding)

    def max(self, values, *, out_sharding=None):  # noqa: A003
        return self._update("max", values, out_sharding)


_EAGER: dict = {}  # (function name, static arguments) -> its jitted program (a few hundred)


def _eager(name: str, *static):
    """The jitted ``xla_spmd.numpy.<name>(array, *dynamic, *static)`` (static arguments are
    part of the program), made once per (name, static)."""
    key = (name, static)
    if key not in _EAGER:
        if len(_EAGER) >= 256:  # many distinct static arguments: start over
            _EAGER.clear()
        function = getattr(xnp, name, None)
        if name == "at":
            index, method, out_sharding = static

            # The index's integers arrive as arrays (one program for every index): the
            # gather they make is an artefact, so its sharding is left to propagation, not
            # typed (the user wrote a static index).
            def update(x, values, *arrays):
                with sharding_types.suspended():
                    ref = xnp.asarray(x).at[_join_index(index, arrays)]
                    if method == "get":
                        return ref.get(out_sharding=out_sharding)
                    return getattr(ref, method)(values, out_sharding=out_sharding)
            _EAGER[key] = jit(update)
        elif function is None:
            raise XlaSpmdError(f"no numpy function {name!r} to run on the devices")
        elif name == "getitem":
            def getitem(x, *arrays):
                with sharding_types.suspended():
                    return function(x, _join_index(static[0], arrays))
            _EAGER[key] = jit(getitem)
        else:
            _EAGER[key] = jit(lambda *args: function(*args, *static))
    return _EAGER[key]


def _split_index(index) -> tuple[tuple, list] | tuple[None, None]:
    """An index as a hashable structure and its array entries (None for boolean masks)."""
    entries = index if isinstance(index, tuple) else (index,)
    static, dynamic = [], []
    for entry in entries:
        if isinstance(entry, slice):
            static.append(("slice", entry.start, entry.stop, entry.step))
        elif entry is None or entry is Ellipsis:
            static.append(("value", entry))
        else:  # integers too: one program serves every index (out-of-range ones clamp)
            array = entry if hasattr(entry, "dtype") else np.asarray(entry)
            if np.dtype(array.dtype) == np.bool_:
                return None, None
            static.append(("array", len(dynamic)))
            dynamic.append(array)
    return (tuple(static), isinstance(index, tuple)), dynamic


def _join_index(static, arrays):
    entries, is_tuple = static
    index = []
    for kind, *rest in entries:
        if kind == "slice":
            index.append(slice(*rest))
        elif kind == "value":
            index.append(rest[0])
        else:
            index.append(arrays[rest[0]])
    return tuple(index) if is_tuple else index[0]


def _device_binary(name: str, reflected: bool):
    if reflected:
        def method(self, other):
            return _eager(name)(other, self)
    else:
        def method(self, other):
            return _eager(name)(self, other)
    return method


def _device_method(name: str):
    names, defaults = _KEYWORDS[name], _DEFAULTS[name]

    def method(self, *args, **kwargs):
        unknown = set(kwargs) - set(names)
        if unknown or len(args) > len(names):
            raise TypeError(f"Array.{name}() takes {', '.join(names) or 'no arguments'}; "
                            f"got {len(args)} positional and {sorted(kwargs)}")
        values = dict(zip(names, args))
        values.update(kwargs)
        static = tuple(_hashable(values.get(k, d)) for k, d in zip(names, defaults))
        try:
            hash(static)
        except TypeError:  # array arguments (clip bounds): computed on the gathered values
            return getattr(ShardedArray, name)(self, *args, **kwargs)
        return _eager(name, *static)(self)
    method.__name__ = name
    method.__doc__ = f"``xla_spmd.numpy.{name}`` of this array, computed on its devices."
    return method


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


# Operators: (dunder name, numpy-like function); binary ones also get their reflected form.
_BINARY = (("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"),
           ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "power"),
           ("matmul", "matmul"), ("and", "bitwise_and"), ("or", "bitwise_or"),
           ("xor", "bitwise_xor"), ("lshift", "left_shift"), ("rshift", "right_shift"))
_COMPARISONS = (("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                ("ge", "greater_equal"), ("eq", "equal"), ("ne", "not_equal"))
_UNARY = (("neg", "negative"), ("abs", "abs"), ("invert", "invert"))
# Methods and their arguments (all static: axes, flags, types), with numpy's defaults.
_SIGNATURES = {
    "sum": (("axis", None), ("keepdims", False)),
    "mean": (("axis", None), ("keepdims", False)),
    "max": (("axis", None), ("keepdims", False)),
    "min": (("axis", None), ("keepdims", False)),
    "prod": (("axis", None), ("keepdims", False)),
    "std": (("axis", None), ("keepdims", False)),
    "var": (("axis", None), ("keepdims", False)),
    "any": (("axis", None), ("keepdims", False)),
    "all": (("axis", None), ("keepdims", False)),
    "argmax": (("axis", None), ("keepdims", False)),
    "argmin": (("axis", None), ("keepdims", False)),
    "cumsum": (("axis", None), ("dtype", None)),
    "cumprod": (("axis", None), ("dtype", None)),
    "astype": (("dtype", None),),
    "squeeze": (("axis", None),),
    "swapaxes": (("axis1", 0), ("axis2", 1)),
    "clip": (("a_min", None), ("a_max", None)),
    "ravel": (),
}
_KEYWORDS = {name: tuple(k for k, _ in args) for name, args in _SIGNATURES.items()}
_DEFAULTS = {name: tuple(d for _, d in args) for name, args in _SIGNATURES.items()}


def _transpose(self, *axes):
    axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
    return _eager("transpose", tuple(axes) if axes else None)(self)


for _name, _function in _BINARY:
    setattr(Array, f"__{_name}__", _device_binary(_function, reflected=False))
    setattr(Array, f"__r{_name}__", _device_binary(_function, reflected=True))
for _name, _function in _COMPARISONS:
    setattr(Array, f"__{_name}__", _device_binary(_function, reflected=False))
for _name, _function in _UNARY:
    setattr(Array, f"__{_name}__", lambda self, _f=_function: _eager(_f)(self))
for _name in _SIGNATURES:
    setattr(Array, _name, _device_method(_name))
Array.transpose = _transpose  # pyright: ignore[reportAttributeAccessIssue]  (installed)
Array.__hash__ = None  # pyright: ignore[reportAttributeAccessIssue]  (== is elementwise)


def device_put(value, sharding):
    """`xla_spmd.runtime.device_put`, returning `Array`s (whose math runs on the devices)."""
    return tree_map(Array.of, runtime_device_put(value, sharding))


def device_get(tree):
    """The values of a pytree of arrays as numpy arrays on the host (JAX's ``device_get``);
    leaves that are not arrays are returned as they are."""
    def get(x):
        if isinstance(x, ShardedArray) or hasattr(x, "__array__"):
            return np.asarray(x)
        return x
    return tree_map(get, tree)


def block_until_ready(tree):
    """Wait until every array of `tree` is computed, and return `tree` (JAX's
    ``block_until_ready``)."""
    for leaf in tree_leaves(tree):
        wait = getattr(leaf, "block_until_ready", None)
        if wait is not None:
            wait()
    return tree


def make_array_from_callback(shape, sharding, data_callback, dtype=None) -> Array:
    """`xla_spmd.runtime.make_array_from_callback`, as an `Array`."""
    return Array.of(sharded_array.make_array_from_callback(shape, sharding, data_callback,
                                                           dtype))


def make_array_from_single_device_arrays(shape, sharding, arrays) -> Array:
    """`xla_spmd.runtime.make_array_from_single_device_arrays`, as an `Array`."""
    return Array.of(sharded_array.make_array_from_single_device_arrays(shape, sharding, arrays))


def make_array_from_process_local_data(sharding, local_data, global_shape=None) -> Array:
    """`xla_spmd.runtime.make_array_from_process_local_data`, as an `Array`."""
    return Array.of(sharded_array.make_array_from_process_local_data(sharding, local_data,
                                                                     global_shape))


# ---------------------------------------------------------------------------------------------
# Sharding in types (the current mesh: frontend.constraints; typeof: frontend.jit; the op-by-op
# rules of Explicit axes: frontend.sharding_types)


def reshard(x, out_shardings):
    """`x` (a pytree) resharded to `out_shardings` (a sharding or PartitionSpec, or a pytree
    prefix of them), as JAX's ``reshard``: inside a traced function a hard sharding
    constraint, outside it a transfer to the devices (`device_put`)."""
    leaves, tree = tree_flatten(x)
    named = frontend_jit.shardings_for(out_shardings, x, "reshard")
    if current_trace() is not None:
        return tree_unflatten(tree, [constraints.with_sharding_constraint(v, s)
                                     for v, s in zip(leaves, named)])
    return tree_unflatten(tree, [device_put(v, s) for v, s in zip(leaves, named)])


def _axes_tuple(axes, mesh, what: str) -> tuple[str, ...]:
    if axes is None:
        return tuple(mesh.axis_names)
    axes = (axes,) if isinstance(axes, str) else tuple(axes)
    unknown = [a for a in axes if a not in mesh.axis_names]
    if unknown:
        raise ValueError(f"{what}: axes {unknown} are not axes of the mesh {mesh!r}")
    return axes


def _mesh_for(what: str, shardings, args):
    """The mesh `auto_axes`/`explicit_axes` change, as JAX's ``_get_new_mesh`` finds it:
    the shardings' mesh (they must name one), which must be the `use_mesh` mesh if there is
    one; else the `use_mesh` mesh; else (here) the mesh of the typed arguments (of the
    arrays on an Explicit mesh, eagerly)."""
    named = {id(s.mesh): s.mesh for s in _leaves(shardings) if hasattr(s, "mesh")}
    if len(named) > 1:
        raise ValueError(f"Shardings passed to {what} should have the same mesh. Got "
                         f"{' and '.join(map(repr, named.values()))}")
    current = constraints.current_mesh()
    mesh = next(iter(named.values()), None)
    if mesh is not None and current is not None and mesh != current:
        raise ValueError(f"Context mesh {current!r} must match the mesh passed to shardings "
                         f"{mesh!r}. Recommended approach is to use `xs.set_mesh` context "
                         "manager.")
    if mesh is None:
        mesh = current
    if mesh is None:
        typed = [t.mesh for t in map(sharding_types.type_of, _leaves(args)) if t]
        meshes = [getattr(a.sharding, "mesh", None) for a in _leaves(args)
                  if isinstance(a, ShardedArray)]  # eagerly: the arrays' Explicit meshes
        typed += [m for m in meshes if m is not None and sharding_types.explicit_axes_of(m)]
        mesh = typed[0] if typed else None
    return mesh


def auto_axes(f: Callable | None = None, /, *, axes=None, out_sharding=None):
    """JAX's ``auto_axes``: `f` runs with the mesh axes `axes` (a name or names; default:
    every axis) Auto, so they leave the sharding types (propagation places the values over
    them) while the mesh's other Explicit axes stay typed: the arguments are resharded to
    their specs without those axes (dims open to them; eagerly, the arrays move), and the
    result is resharded to `out_sharding` (given here or as a keyword argument of the
    call). The mesh is
    `out_sharding`'s, else the `use_mesh` mesh, else the arguments'. When `axes` are
    already all of the Auto axes, `f` just runs (no reshard), as in JAX.

    >>> import numpy as np
    >>> import xla_spmd as xs
    >>> mesh = xs.make_mesh({"a": 2}, axis_types=xs.AxisType.Explicit)
    >>> x = xs.device_put(np.ones((4, 4), np.float32), xs.NamedSharding(mesh, xs.P("a")))
    >>> y = xs.jit(lambda v: xs.sharding.auto_axes(lambda u: u @ u.T,
    ...                                            out_sharding=xs.P(None, "a"))(v))(x)
    >>> y.sharding.spec, float(y[0, 0])
    (P(None, 'a'), 4.0)
    """
    if f is None:
        return functools.partial(auto_axes, axes=axes, out_sharding=out_sharding)

    @functools.wraps(f)
    def run(*args, **kwargs):
        target = out_sharding if out_sharding is not None else kwargs.pop("out_sharding", None)
        if target is None:
            raise TypeError("auto_axes: missing required keyword argument 'out_sharding'")
        mesh = _mesh_for("auto_axes", target, args)
        if mesh is None:
            return f(*args, **kwargs)
        chosen = _axes_tuple(axes, mesh, "auto_axes")
        explicit = sharding_types.explicit_axes_of(mesh)
        if {a for a in mesh.axis_names if a not in explicit} == set(chosen):
            return f(*args, **kwargs)
        with sharding_types.axis_types(mesh, auto=chosen):
            args = _retyped(args, mesh)
            out = f(*args, **kwargs)
        with constraints.use_mesh(mesh):
            return reshard(out, target)
    return run


def _retyped(tree, mesh):
    """JAX's reshard of the arguments of `auto_axes` (the results of `explicit_axes`) to
    their specs over the axes of `mesh` Explicit here (`sharding_types.retyped`): traced
    values get the constraint, arrays on `mesh` move to the new spec."""
    NamedSharding, PartitionSpec = frontend_jit.NamedSharding, frontend_jit.PartitionSpec

    def one(value):
        if current_trace() is not None or not isinstance(value, ShardedArray):
            return sharding_types.retyped(value, mesh)
        named = value.sharding
        if not isinstance(named, NamedSharding) or named.mesh != mesh:
            return value
        spec = PartitionSpec(*sharding_types.explicit_spec(named.spec, mesh))
        return value if spec == named.spec else device_put(value, NamedSharding(mesh, spec))

    leaves, structure = tree_flatten(tree)
    return tree_unflatten(structure, [one(v) for v in leaves])


def explicit_axes(f: Callable | None = None, /, *, axes=None, in_sharding=None):
    """JAX's ``explicit_axes``: the arguments are resharded to `in_sharding` (given here or as
    a keyword argument of the call) and `f` runs with the mesh axes `axes` (default: every
    axis) Explicit (its values get sharding types over them op by op; the mesh's other
    axes keep their types); its results are resharded to their specs over the axes
    Explicit outside (the others open again), as JAX's. The mesh is the `use_mesh` mesh,
    else `in_sharding`'s."""
    if f is None:
        return functools.partial(explicit_axes, axes=axes, in_sharding=in_sharding)

    @functools.wraps(f)
    def run(*args, **kwargs):
        target = in_sharding if in_sharding is not None else kwargs.pop("in_sharding", None)
        if target is None:
            raise TypeError("explicit_axes: missing required keyword argument 'in_sharding'")
        mesh = _mesh_for("explicit_axes", target, ())
        if mesh is None:
            raise ValueError("Context mesh cannot be empty. Please use `xs.set_mesh` API to "
                             "enter into a mesh context when using `explicit_axes` API.")
        chosen = _axes_tuple(axes, mesh, "explicit_axes")
        with sharding_types.axis_types(mesh, explicit=chosen), constraints.use_mesh(mesh):
            out = f(*reshard(args, target), **kwargs)
        return _retyped(out, mesh)
    return run


def _leaves(tree) -> list:
    return tree_flatten(tree)[0]
