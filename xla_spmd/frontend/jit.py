"""`jit`: trace a Python function once per input signature into a `Module`, with the user's
shardings on its parameters and results; `with_sharding_constraint`.

This is the tracing side of jit: `Jitted` evaluates a lowered program on one device with the
reference backend. ``xs.jit`` (`xla_spmd.api`) extends it: a program that carries shardings
(given as `in_shardings` / `out_shardings`, taken from sharded arguments,
`with_sharding_constraint` or `shard_map`) goes through `xla_spmd.pipeline` and runs on the
devices.

>>> import numpy as np
>>> import xla_spmd.numpy as xnp
>>> f = jit(lambda x, y: xnp.tanh(x @ y))
>>> print(f.lower(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)).module.entry.root)
<tanh.2 = f32[2,4] tanh>
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from xla_spmd.backends.reference import evaluate
from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend.constraints import (
    current_mesh,
    is_sharding_leaf,
    shardings_per_leaf,
    to_tensor_sharding,
)
from xla_spmd.frontend.dtypes import canonical_array, x64_enabled
from xla_spmd.frontend.pytree import broadcast_prefix, tree_flatten, tree_unflatten
from xla_spmd.frontend.sharding_types import as_typed
from xla_spmd.frontend.tracing import (
    Array,
    ArrayLike,
    ShapeDtypeStruct,
    Trace,
    Tracer,
    Value,
    aval_of,
    current_trace,
    is_distributed,
    is_weak,
)
from xla_spmd.ir import OPS, Module
from xla_spmd.ir.custom_calls import MANUAL_BOUNDARIES
from xla_spmd.ir.hlo_printer import print_module
from xla_spmd.ir.module import make_instruction, rewrite
from xla_spmd.mesh import Mesh, print_mesh
from xla_spmd.sharding import NamedSharding, PartitionSpec, TensorSharding, meshes_of, user_sharding
from xla_spmd.sharding.manual import manual_region


def _canonical(leaf):
    """A concrete argument as an array of its canonical type (Python scalars weakly typed;
    64-bit types narrowed unless x64 is on, as JAX does). Distributed arrays of the runtime
    (they have `addressable_shards`) stay as they are, shards in place."""
    # (the type's attribute first: reading a runtime array's `addressable_shards` computes
    # every shard's slices, which costs more than a small step)
    if isinstance(leaf, Value) or hasattr(type(leaf), "addressable_shards") or hasattr(
            leaf, "addressable_shards"):
        return leaf
    return Array(canonical_array(leaf), weak_type=is_weak(leaf))


class Lowered:
    """A traced program: `module` (global shapes, user shardings attached), printable.

    >>> import numpy as np
    >>> lowered = jit(lambda x: x * 2.0).lower(np.ones(3, np.float32))
    >>> lowered.in_shardings, lowered.out_shardings
    (((None,), {}), None)
    """

    # Set by jit when it traces: (static args by position, static kwargs, argument count),
    # and which results are weakly typed (unset on a bare module: read with getattr).
    _call_info: tuple[dict, dict, int]
    out_weak_types: list[bool]

    def __init__(self, module: Module, in_tree, out_tree, donate_argnums=(), jitted=None,
                 key=None):
        self.module = module
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.donate_argnums = tuple(donate_argnums)
        self._jitted = jitted  # how `compile()` takes arguments (None: a bare module)
        self._key = key

    def compile(self) -> Compiled:
        """The program compiled for the job's devices (partitioned when it is sharded), as
        ``jax.jit(f).lower(...).compile()``: call it like the jitted function (static
        arguments may be left out) and read the per-device program with `as_text()`."""
        compiled = Compiled(self)
        compiled.as_text()  # compile now, so that errors surface here as in JAX
        return compiled

    def as_text(self, dialect: str = "stablehlo") -> str:
        """The program as StableHLO MLIR with Shardy attributes, as
        ``jax.jit(f).lower(...).as_text()`` prints it, or (``dialect="hlo"``) as HLO text."""
        if dialect == "hlo":
            return print_module(self.module)
        if dialect == "stablehlo":
            # xla_spmd.stablehlo is a sibling layer of the frontend (it never imports it):
            # imported lazily, only here, so `import xla_spmd.frontend` stays light.
            from xla_spmd.stablehlo import export_stablehlo
            return export_stablehlo(_with_mesh_declarations(self.module))
        raise XlaSpmdError(f"as_text: unknown dialect {dialect!r}; expected 'hlo' or "
                           "'stablehlo'")

    def __str__(self) -> str:
        return self.as_text()

    def compiler_ir(self, dialect: str = "stablehlo") -> str | Module:
        """The program in the compiler's IR: StableHLO text (the default, as JAX's MLIR
        module prints), or with ``dialect="hlo"`` the HLO `Module` itself."""
        if dialect == "hlo":
            return self.module
        return self.as_text(dialect)

    @property
    def in_shardings(self) -> Any:
        """The parameters' shardings (NamedSharding or None) in the structure of the
        arguments, as JAX's ``(args, kwargs)`` pair."""
        return self.parameter_shardings(self.module)

    @property
    def out_shardings(self) -> Any:
        """The results' shardings (NamedSharding or None) in the structure of the output."""
        return self.result_shardings(self.module)

    def parameter_shardings(self, module: Module) -> Any:
        """The shardings of `module`'s parameters (this program, or the propagated one) in
        the structure of the arguments."""
        leaves = [_shown(p.sharding) for p in module.entry.parameters]
        args, kwargs = tree_unflatten(self.in_tree, leaves)
        return tuple(args), kwargs

    def result_shardings(self, module: Module) -> Any:
        """The shardings of `module`'s results in the structure of the output."""
        root = module.entry.root
        if self.out_tree.num_leaves == 1 and root.opcode != "tuple":
            leaves = [root.sharding]
        elif isinstance(root.sharding, tuple):
            leaves = list(root.sharding)
        else:
            leaves = [None] * self.out_tree.num_leaves
        return tree_unflatten(self.out_tree, [_shown(s) for s in leaves])


class Traced:
    """A traced program (``jax.jit(f).trace(...)``): the `module`, the result shapes and
    dtypes (`out_info`), and `lower()`."""

    def __init__(self, lowered: Lowered):
        self._lowered = lowered

    @property
    def module(self) -> Module:
        return self._lowered.module

    @property
    def out_info(self) -> Any:
        """`ShapeDtypeStruct`s of the results, in the structure of the output."""
        root = self.module.entry.root
        shapes = ([root.shape] if self._lowered.out_tree.num_leaves == 1 and
                  root.opcode != "tuple" else [o.shape for o in root.operands])
        return tree_unflatten(self._lowered.out_tree, [
            ShapeDtypeStruct(s.dims, s.dtype.array_dtype) for s in shapes])

    def lower(self) -> Lowered:
        return self._lowered


def _shown(sharding):
    """A sharding as users read it (`NamedSharding` where a PartitionSpec can say it)."""
    return None if sharding is None else user_sharding(sharding)


def _with_mesh_declarations(module: Module, declared=None) -> Module:
    """`module` with XLA's ``xla.sdy.meshes`` header entry declaring the meshes its shardings
    name and the `declared` ones (what becomes StableHLO's ``sdy.mesh`` ops; the HLO printer
    adds the former by itself)."""
    meshes = dict(declared or {})
    for computation in module.computations:
        for inst in computation.instructions:
            shardings = inst.sharding_leaves()
            for sharding in shardings:
                if isinstance(sharding, TensorSharding) and sharding.mesh_name:
                    meshes.setdefault(sharding.mesh_name, sharding.mesh)
    if not meshes or module.header_value("frontend_attributes"):
        return module
    body = ", ".join(f"{name} = #sdy.mesh{print_mesh(mesh)}" for name, mesh in meshes.items())
    header = (("frontend_attributes", f"{{xla.sdy.meshes={{{body}}}}}"),)
    return replace(module, header=module.header + header)


class Compiled:
    """A lowered program compiled for the job's devices (`Lowered.compile()`).

    >>> import numpy as np
    >>> compiled = jit(lambda x: x * 2.0).lower(np.ones(3, np.float32)).compile()
    >>> np.asarray(compiled(np.arange(3, dtype=np.float32))).tolist()
    [0.0, 2.0, 4.0]
    """

    def __init__(self, lowered: Lowered):
        self.lowered = lowered
        self._text: str | None = None

    def device_module(self) -> Module:
        """The per-device program: the partitioned SPMD module when the program is sharded,
        else the one-device module."""
        jitted = self.lowered._jitted
        module = jitted.spmd_module(self.lowered) if jitted is not None else None
        return module if module is not None else _single_device_module(self.lowered.module)

    def as_text(self) -> str:
        """The per-device program as HLO text (what XLA's ``compiled.as_text()`` shows)."""
        if self._text is None:
            self._text = print_module(self.device_module())
        return self._text

    def cost_analysis(self) -> dict:
        """FLOPs and bytes accessed of one device (``{"flops": ..., "bytes accessed": ...}``,
        as XLA's cost analysis)."""
        return self._analysis().cost_analysis(self.device_module())

    def memory_analysis(self) -> Any:
        """Per-device argument, output, temporary and peak bytes (JAX's
        ``CompiledMemoryStats`` fields)."""
        return self._analysis().memory_analysis(self.device_module())

    @property
    def input_shardings(self) -> Any:
        """The shardings the compiled program takes its arguments in (after propagation),
        as ``(args, kwargs)``."""
        return self.lowered.parameter_shardings(self._propagated())

    @property
    def output_shardings(self) -> Any:
        """The shardings of the compiled program's results (after propagation)."""
        return self.lowered.result_shardings(self._propagated())

    def _propagated(self) -> Module:
        jitted = self.lowered._jitted
        module = jitted.propagated_module(self.lowered) if jitted is not None else None
        return module if module is not None else self.lowered.module

    def _analysis(self):
        jitted = self.lowered._jitted
        if jitted is None or not hasattr(jitted, "cost_analysis"):
            raise XlaSpmdError("cost and memory analysis need a program compiled by xs.jit")
        return jitted

    def __str__(self) -> str:
        return self.as_text()

    def __call__(self, *args, **kwargs):
        jitted = self.lowered._jitted
        if jitted is None:
            raise XlaSpmdError("this Lowered was not made by jit(...).lower(...); it cannot "
                               "be called")
        leaves = jitted.dynamic_leaves(self.lowered, args, kwargs)
        return jitted.run(self.lowered, leaves)


def run_on_one_device(lowered: Lowered, leaves: list) -> Any:
    """Run a lowered program on argument leaves, on one device with the reference backend
    (its manual regions, if any, over one-device meshes)."""
    module = _single_device_module(lowered.module)
    result: Any = evaluate(module, [leaf.value for leaf in leaves])  # one value or a tuple
    outs = list(result) if module.entry.root.opcode == "tuple" and \
        lowered.out_tree.num_leaves != 1 else [result]
    weak = getattr(lowered, "out_weak_types", [False] * len(outs))
    return tree_unflatten(lowered.out_tree, [Array(o, w) for o, w in zip(outs, weak)])


def _as_tuple(value) -> tuple:
    if value is None:
        return ()
    return (value,) if isinstance(value, (int, str)) else tuple(value)


def _committed_sharding(leaf):
    """A sharded argument's own sharding (jit respects committed input shardings)."""
    sharding = getattr(leaf, "tensor_sharding", None)
    return sharding if isinstance(sharding, TensorSharding) else None


class Jitted:
    """A function traced once per (structure, shapes, dtypes, shardings, static values).

    Positional and keyword arguments are traced (keyword ones get no `in_shardings`, as in
    JAX); those named by `static_argnums` / `static_argnames` are passed as Python values
    and are part of the cache key. An argument without an `in_shardings` entry that is a
    sharded array keeps its sharding.
    """

    def __init__(self, fn: Callable, in_shardings=None, out_shardings=None,
                 static_argnums=(), donate_argnums=(), static_argnames=()):
        self.fn = fn
        self.in_shardings = in_shardings
        self.out_shardings = out_shardings
        self.static_argnums = tuple(_as_tuple(static_argnums))
        self.static_argnames = tuple(_as_tuple(static_argnames))
        self._infer_static_pairs()
        self.donate_argnums = tuple(_as_tuple(donate_argnums))
        self._cache: dict = {}
        functools.update_wrapper(self, fn)

    def _infer_static_pairs(self) -> None:
        """As JAX: a static argument named by position is static by name too, and back."""
        try:
            parameters = list(inspect.signature(self.fn).parameters.values())
        except (TypeError, ValueError):
            return
        positional = [p.name for p in parameters
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        keyword = {p.name for p in parameters if p.kind != p.POSITIONAL_ONLY}
        names = [positional[i] for i in self.static_argnums
                 if -len(positional) <= i < len(positional) and positional[i] in keyword]
        numbers = [positional.index(n) for n in self.static_argnames if n in positional]
        self.static_argnames = tuple(dict.fromkeys((*self.static_argnames, *names)))
        self.static_argnums = tuple(dict.fromkeys((*self.static_argnums, *numbers)))

    def _split(self, args, kwargs=None):
        kwargs = kwargs or {}
        count = len(args)
        numbers = {n % count for n in self.static_argnums if -count <= n < count}
        static = {i: a for i, a in enumerate(args) if i in numbers}
        dynamic = [a for i, a in enumerate(args) if i not in numbers]
        static_kwargs = {k: v for k, v in kwargs.items() if k in self.static_argnames}
        dynamic_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return static, dynamic, static_kwargs, dynamic_kwargs

    def _key(self, args, kwargs=None):
        static, dynamic, static_kwargs, dynamic_kwargs = self._split(args, kwargs)
        leaves, tree = tree_flatten((dynamic, dynamic_kwargs))
        leaves = [_canonical(leaf) for leaf in leaves]
        signature = tuple((str(leaf.aval), leaf.weak_type, getattr(leaf, "tensor_sharding", None))
                          for leaf in leaves)
        try:
            key = (tree, signature, tuple(sorted(static.items())),
                   tuple(sorted(static_kwargs.items())), x64_enabled())
            hash(key)
        except TypeError:
            raise XlaSpmdError("static arguments of a jitted function must be hashable") \
                from None
        return key, (static, dynamic, static_kwargs, dynamic_kwargs), leaves, tree

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """Trace for these arguments (or hit the cache) and return the `Lowered` program."""
        return self._lower(args, kwargs)[0]

    def trace(self, *args: Any, **kwargs: Any) -> Traced:
        """Trace for these arguments: the `Traced` program (``.lower()`` goes on)."""
        return Traced(self.lower(*args, **kwargs))

    def _lower(self, args, kwargs):
        key, parts, leaves, in_tree = self._key(args, kwargs)
        if key not in self._cache:
            self._cache[key] = self._trace(parts, leaves, in_tree, key)
        return self._cache[key], leaves

    def dynamic_leaves(self, lowered: Lowered, args: tuple, kwargs: dict) -> list:
        """The argument leaves of a call of `lowered.compile()` (static arguments may be left
        out), checked against the signature it was traced for."""
        static, static_kwargs, count = lowered._call_info
        given = list(args)
        if len(given) == count - len(static):
            dynamic = iter(given)
            given = [static[i] if i in static else next(dynamic) for i in range(count)]
        kwargs = {**static_kwargs, **kwargs}
        key, _, leaves, _ = self._key(tuple(given), kwargs)
        if key != lowered._key:
            raise TypeError("the compiled function was called with arguments of other "
                            "structure, types, shardings or static values than it was "
                            "compiled for; use the jitted function, which traces again")
        return leaves

    def _trace(self, parts, leaves, in_tree, key) -> Lowered:
        static, dynamic, static_kwargs, dynamic_kwargs = parts
        shardings = shardings_per_leaf(self.in_shardings, dynamic, "in_shardings") \
            if self.in_shardings is not None else [None] * len(tree_flatten(dynamic)[0])
        shardings += [None] * (len(leaves) - len(shardings))  # keyword arguments
        name = getattr(self.fn, "__name__", "fn").replace("<", "").replace(">", "")
        trace = Trace("main")
        with trace:
            tracers = []
            for i, (leaf, sharding) in enumerate(zip(leaves, shardings)):
                aval = leaf.aval
                if sharding is None:
                    sharding = _committed_sharding(leaf)
                tensor_sharding = to_tensor_sharding(sharding, aval.rank, f"argument {i}")
                tracer = trace.new_parameter(aval, f"Arg_{i}", sharding=tensor_sharding)
                tracer.weak_type = leaf.weak_type
                tracers.append(tracer)
            dynamic_args, traced_kwargs = tree_unflatten(in_tree, tracers)
            dynamic_args = iter(dynamic_args)
            count = len(static) + len(dynamic)
            call_args = [static[i] if i in static else next(dynamic_args) for i in range(count)]
            out = self.fn(*call_args, **traced_kwargs, **static_kwargs)
            out_leaves, out_tree = tree_flatten(out)
            outputs = [trace.to_inst(o) for o in out_leaves]
            root = self._root(trace, outputs, out)
        header = _alias_header(self._donated_leaves(static, dynamic),
                               [p.shape for p in trace.parameters],
                               [o.shape for o in outputs], root.opcode == "tuple")
        module = Module.from_entry(f"jit_{name}", trace.builder.build(root, "main"), header)
        if trace.meshes:  # shard_map's sharding text names its meshes: declare them
            module = _with_mesh_declarations(module, trace.meshes)
        lowered = Lowered(module, in_tree, out_tree, self.donate_argnums, self, key)
        lowered._call_info = (static, static_kwargs, len(static) + len(dynamic))
        lowered.out_weak_types = [is_weak(o) for o in out_leaves]  # kept on results, as JAX
        return lowered

    def _donated_leaves(self, static, dynamic) -> list[int]:
        """The parameter numbers of the leaves of the donated positional arguments."""
        count = len(static) + len(dynamic)
        for n in self.donate_argnums:
            if not -count <= n < count or n % count in static:
                raise XlaSpmdError(f"donate_argnums {n} does not name a non-static argument "
                                   f"(there are {count} arguments, static {sorted(static)})")
        donated = {n % count for n in self.donate_argnums}
        numbers, start = [], 0
        dynamic_positions = [i for i in range(count) if i not in static]
        for position, arg in zip(dynamic_positions, dynamic):
            size = len(tree_flatten(arg)[0])
            if position in donated:
                numbers += range(start, start + size)
            start += size
        return numbers

    def _root(self, trace: Trace, outputs, out):
        b = trace.builder
        shardings = [None] * len(outputs)
        if self.out_shardings is not None:
            shardings = shardings_per_leaf([self.out_shardings], [out], "out_shardings")
        tensor_shardings = [to_tensor_sharding(s, o.shape.rank, f"result {i}")
                            for i, (s, o) in enumerate(zip(shardings, outputs))]
        if len(outputs) != 1:
            root = b.tuple(*outputs)
            if any(s is not None for s in tensor_shardings):
                mesh = next(s.mesh for s in tensor_shardings if s is not None)
                filled = tuple(s if s is not None else TensorSharding.open_on(mesh, o.shape.rank)
                               for s, o in zip(tensor_shardings, outputs))
                root = root.replace(sharding=filled)
                b.instructions[-1] = root
            return root
        root = outputs[0]
        if tensor_shardings[0] is not None:
            if root.opcode == "parameter" or root.sharding is not None:
                root = b.copy(root)
            new = root.replace(sharding=tensor_shardings[0])
            b.instructions[[id(i) for i in b.instructions].index(id(root))] = new
            root = new
        return root

    def __call__(self, *args, **kwargs):
        if current_trace() is not None:  # jit inside a trace: inline it
            return self.fn(*args, **kwargs)
        lowered, leaves = self._lower(args, kwargs)
        return self.run(lowered, leaves)

    def run(self, lowered: Lowered, leaves: list) -> Any:
        """Run `lowered` on the argument leaves and return the output pytree (here: on one
        device; ``xs.jit`` runs sharded programs on the devices)."""
        return run_on_one_device(lowered, leaves)

    def spmd_module(self, lowered: Lowered) -> Module | None:
        """The per-device program of `lowered` (None here: it runs on one device)."""
        return None

    def propagated_module(self, lowered: Lowered) -> Module | None:
        """`lowered` with every value's sharding (None here: it is not partitioned)."""
        return None


def _alias_header(donated: list[int], parameter_shapes, output_shapes,
                  tuple_root: bool) -> tuple:
    """XLA's ``input_output_alias`` module attribute: each donated parameter paired with the
    first unclaimed result of the same shape and element type (donations that match no
    result are dropped, as JAX does with a warning)."""
    entries, claimed = [], set()
    for number in donated:
        for k, shape in enumerate(output_shapes):
            if k not in claimed and shape == parameter_shapes[number]:
                claimed.add(k)
                index = f"{{{k}}}" if tuple_root else "{}"
                entries.append(f"{index}: ({number}, {{}}, may-alias)")
                break
        else:
            warnings.warn(f"donated parameter {number} ({parameter_shapes[number]}) matches "
                          "no result of the same shape and type; it is not aliased",
                          stacklevel=4)
    if not entries:
        return ()
    return (("input_output_alias", "{ " + ", ".join(entries) + " }"),)


def jit(fn: Callable | None = None, *, in_shardings: Any = None, out_shardings: Any = None,
        static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
        donate_argnums: int | Sequence[int] = ()) -> Jitted | Callable[[Callable], Jitted]:
    """Trace and cache `fn` per input signature; ``jit(f)``, ``@jit`` or ``@jit(...)``.

    `in_shardings` / `out_shardings`: None, one sharding for every value, or one entry per
    positional argument (result leaf) that is a sharding or a pytree of shardings. Keyword
    arguments are traced too; `static_argnums` / `static_argnames` name the static ones.

    >>> import numpy as np
    >>> f = jit(lambda x, scale, square=False: x * scale, static_argnames="square")
    >>> np.asarray(f(np.ones(2, np.float32), scale=3.0)).tolist()
    [3.0, 3.0]
    """
    def wrap(f):
        return Jitted(f, in_shardings, out_shardings, static_argnums, donate_argnums,
                      static_argnames)
    return wrap if fn is None else wrap(fn)


# ---------------------------------------------------------------------------------------------
# Manual regions (shard_map) on one device


def region_meshes(module: Module) -> list[Mesh]:
    """The meshes of the module's manual regions (entry body calls), in order, read from
    their boundaries and the module's ``xla.sdy.meshes``."""
    meshes = meshes_of(module)
    regions = [manual_region(inst, meshes) for inst in module.entry.instructions
               if inst.opcode == "call"]
    return [region.mesh for region in regions if region is not None]


def strip_manual_boundaries(module: Module) -> Module:
    """On one device, a manual region over a one-device mesh is plain code: its boundaries
    are identities. Larger meshes need the partitioner."""
    targets = MANUAL_BOUNDARIES
    entry = module.entry
    if not any(i.opcode == "custom-call" and i.attrs.custom_call_target in targets
               for i in entry.instructions):
        return module
    for mesh in region_meshes(module):
        if mesh.size != 1:
            raise XlaSpmdError(
                f"this program has a shard_map over {mesh!r} ({mesh.size} devices), "
                "which cannot be evaluated on one device; call it through xs.jit, "
                "which runs it on the mesh's devices")

    def strip(inst, operands):
        if inst.opcode != "custom-call" or inst.attrs.custom_call_target not in targets:
            return None
        if len(operands) == 1:
            return operands[0]
        return make_instruction(inst.name, OPS["tuple"], operands)
    return Module.from_entry(module.name, rewrite(entry, strip), module.header)


def _single_device_module(module: Module) -> Module:
    """The module to evaluate on one device: manual regions (shard_map) must be over a mesh of
    one device, where their boundary custom-calls are identities."""
    for mesh in region_meshes(module):
        if mesh.size != 1:
            raise XlaSpmdError(
                f"{module.name}: this program has a shard_map over {mesh!r} ({mesh.size} "
                "devices), and the frontend's jit runs programs on one device; use xs.jit "
                "(xla_spmd.api), which runs it on the mesh's devices")
    return strip_manual_boundaries(module)


# ---------------------------------------------------------------------------------------------
# Sharding in types, as far as it goes here: bare specs over the current mesh, and typeof

def shardings_for(shardings: Any, tree: Any, what: str) -> list:
    """One sharding per leaf of `tree` from a sharding or PartitionSpec (or a pytree prefix
    of them); a bare spec is over the `use_mesh` mesh, else over the leaf's own mesh."""
    per_leaf = broadcast_prefix(shardings, tree, is_sharding_leaf, what)
    out = []
    for sharding, leaf in zip(per_leaf, tree_flatten(tree)[0]):
        if isinstance(sharding, PartitionSpec):
            mesh = current_mesh()
            if mesh is None:
                mesh = getattr(typeof(leaf).sharding, "mesh", None)
            if mesh is None:
                raise XlaSpmdError(f"{what}: a PartitionSpec needs a mesh; give a "
                                   "NamedSharding, or call it inside `with xs.use_mesh(mesh):`")
            sharding = NamedSharding(mesh, sharding)
        out.append(sharding)
    return out


def typeof(x: ArrayLike) -> ShapeDtypeStruct:
    """The type of `x`: shape, dtype and sharding (a `ShapeDtypeStruct`), as JAX's
    ``typeof``. The sharding is the array's own, or for a traced value the one it was given
    (an argument's in_sharding, a constraint, a reshard); None where propagation decides."""
    aval = aval_of(x)
    if isinstance(x, Tracer):
        sharding = x.inst.sharding
        sharding = user_sharding(as_typed(sharding)) if isinstance(sharding, TensorSharding) \
            else None
    else:
        sharding = getattr(x, "sharding", None) if is_distributed(x) else None
    return ShapeDtypeStruct(aval.dims, aval.dtype.array_dtype, sharding=sharding,
                            weak_type=bool(getattr(x, "weak_type", False)))
