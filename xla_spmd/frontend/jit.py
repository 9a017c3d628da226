"""`jit`: trace a Python function once per input signature into a `Module`, with the user's
shardings on its parameters and results; `with_sharding_constraint`.

Until the partitioner and runtime exist, calling a jitted function evaluates its module on one
device with the reference backend.

>>> import numpy as np
>>> from xla_spmd.frontend import numpy_api as xnp
>>> f = jit(lambda x, y: xnp.tanh(x @ y))
>>> print(f.lower(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)).module.entry.root)
<tanh.2 = f32[2,4] tanh>
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from xla_spmd.errors import ShardingError, XlaSpmdError
from xla_spmd.frontend.pytree import tree_flatten, tree_unflatten
from xla_spmd.frontend.tracing import Array, Trace, Value, aval_of, bind, current_trace, is_weak
from xla_spmd.ir import Module
from xla_spmd.mesh import print_mesh
from xla_spmd.sharding import NamedSharding, PartitionSpec, TensorSharding

_SHARDING_TYPES = (NamedSharding, TensorSharding, PartitionSpec)


def _is_sharding_leaf(s) -> bool:
    return s is None or isinstance(s, _SHARDING_TYPES)


def to_tensor_sharding(sharding, rank: int, what: str) -> TensorSharding | None:
    """A user sharding (NamedSharding, TensorSharding or None) for a rank-`rank` value."""
    if sharding is None:
        return None
    if isinstance(sharding, NamedSharding):
        return sharding.to_tensor_sharding(rank)
    if isinstance(sharding, TensorSharding):
        if sharding.rank != rank:
            raise ShardingError(f"{what}: sharding {sharding} has rank {sharding.rank}, the "
                                f"value has rank {rank}")
        return sharding
    if isinstance(sharding, PartitionSpec):
        raise ShardingError(f"{what}: a bare PartitionSpec {sharding!r} has no mesh; use "
                            "NamedSharding(mesh, spec)")
    raise ShardingError(f"{what}: expected a NamedSharding or TensorSharding, got "
                        f"{type(sharding).__name__}")


def _shardings_per_leaf(shardings, trees: Sequence, what: str) -> list:
    """Match `shardings` (one sharding for all, or one pytree prefix per tree) to leaves."""
    if _is_sharding_leaf(shardings):
        shardings = [shardings] * len(trees)
    shardings = list(shardings)
    if len(shardings) != len(trees):
        raise ShardingError(f"{what}: {len(shardings)} shardings given for {len(trees)} "
                            "values")
    result = []
    for index, (sharding, tree) in enumerate(zip(shardings, trees)):
        leaves, treedef = tree_flatten(tree)
        if _is_sharding_leaf(sharding):
            result += [sharding] * len(leaves)
            continue
        sharding_leaves, sharding_def = tree_flatten(sharding, is_leaf=_is_sharding_leaf)
        if sharding_def != treedef:
            raise ShardingError(f"{what}[{index}]: sharding structure {sharding_def} does not "
                                f"match the value structure {treedef}")
        result += sharding_leaves
    return result


def _canonical(leaf):
    """A concrete argument as an array (Python scalars weakly typed). Distributed arrays of
    the runtime (they have `addressable_shards`) stay as they are, shards in place."""
    if isinstance(leaf, Value) or hasattr(leaf, "addressable_shards"):
        return leaf
    if is_weak(leaf):
        from xla_spmd.frontend.tracing import python_scalar_array
        return Array(python_scalar_array(leaf), weak_type=True)
    return Array(np.asarray(leaf))


class Lowered:
    """A traced program: `module` (global shapes, user shardings attached), printable.

    >>> import numpy as np
    >>> lowered = jit(lambda x: x * 2.0).lower(np.ones(3, np.float32))
    >>> lowered.in_shardings, lowered.out_shardings
    (((None,), {}), None)
    """

    def __init__(self, module: Module, in_tree, out_tree, donate_argnums=()):
        self.module = module
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.donate_argnums = tuple(donate_argnums)

    def as_text(self, dialect: str = "hlo") -> str:
        """The program as HLO text, or (``dialect="stablehlo"``) as StableHLO MLIR with Shardy
        attributes, as ``jax.jit(f).lower(...).as_text()`` prints it."""
        if dialect == "hlo":
            from xla_spmd.ir.hlo_printer import print_module
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

    @property
    def in_shardings(self):
        """The parameters' shardings (TensorSharding or None) in the structure of the
        arguments, as JAX's ``(args, kwargs)`` pair."""
        leaves = [p.sharding for p in self.module.entry.parameters]
        return tuple(tree_unflatten(self.in_tree, leaves)), {}

    @property
    def out_shardings(self):
        """The results' shardings (TensorSharding or None) in the structure of the output."""
        root = self.module.entry.root
        if self.out_tree.num_leaves == 1 and root.opcode != "tuple":
            leaves = [root.sharding]
        elif isinstance(root.sharding, tuple):
            leaves = list(root.sharding)
        else:
            leaves = [None] * self.out_tree.num_leaves
        return tree_unflatten(self.out_tree, leaves)


def _with_mesh_declarations(module: Module) -> Module:
    """`module` with XLA's ``xla.sdy.meshes`` header entry declaring the meshes its shardings
    name (what becomes StableHLO's ``sdy.mesh`` ops; the HLO printer adds it by itself)."""
    meshes = {}
    for computation in module.computations:
        for inst in computation.instructions:
            shardings = inst.sharding if isinstance(inst.sharding, tuple) else (inst.sharding,)
            for sharding in shardings:
                if isinstance(sharding, TensorSharding) and sharding.mesh_name:
                    meshes.setdefault(sharding.mesh_name, sharding.mesh)
    if not meshes or module.header_value("frontend_attributes"):
        return module
    body = ", ".join(f"{name} = #sdy.mesh{print_mesh(mesh)}" for name, mesh in meshes.items())
    header = (("frontend_attributes", f"{{xla.sdy.meshes={{{body}}}}}"),)
    return replace(module, header=module.header + header)


class Jitted:
    """A function traced once per (structure, shapes, dtypes, shardings, static values)."""

    def __init__(self, fn: Callable, in_shardings=None, out_shardings=None,
                 static_argnums=(), donate_argnums=()):
        self.fn = fn
        self.in_shardings = in_shardings
        self.out_shardings = out_shardings
        self.static_argnums = ((static_argnums,) if isinstance(static_argnums, int)
                               else tuple(static_argnums))
        self.donate_argnums = ((donate_argnums,) if isinstance(donate_argnums, int)
                               else tuple(donate_argnums))
        self._cache: dict = {}
        functools.update_wrapper(self, fn)

    def _split(self, args):
        static = {i: a for i, a in enumerate(args) if i in self.static_argnums}
        dynamic = [a for i, a in enumerate(args) if i not in self.static_argnums]
        return static, dynamic

    def _key(self, args):
        static, dynamic = self._split(args)
        leaves, tree = tree_flatten(dynamic)
        leaves = [_canonical(leaf) for leaf in leaves]
        signature = tuple((str(leaf.aval), leaf.weak_type, getattr(leaf, "sharding", None))
                          for leaf in leaves)
        try:
            key = (tree, signature, tuple(sorted(static.items())))
            hash(key)
        except TypeError:
            raise XlaSpmdError("static arguments of a jitted function must be hashable") \
                from None
        return key, static, dynamic, leaves, tree

    def lower(self, *args) -> Lowered:
        """Trace for these arguments (or hit the cache) and return the `Lowered` program."""
        key, static, dynamic, leaves, in_tree = self._key(args)
        if key not in self._cache:
            self._cache[key] = self._trace(static, dynamic, leaves, in_tree)
        return self._cache[key]

    def _trace(self, static, dynamic, leaves, in_tree) -> Lowered:
        shardings = _shardings_per_leaf(self.in_shardings, dynamic, "in_shardings") \
            if self.in_shardings is not None else [None] * len(leaves)
        name = getattr(self.fn, "__name__", "fn").replace("<", "").replace(">", "")
        trace = Trace("main")
        with trace:
            tracers = []
            for i, (leaf, sharding) in enumerate(zip(leaves, shardings)):
                aval = leaf.aval
                tensor_sharding = to_tensor_sharding(sharding, aval.rank, f"argument {i}")
                tracer = trace.new_parameter(aval, f"Arg_{i}", sharding=tensor_sharding)
                tracer.weak_type = leaf.weak_type
                tracers.append(tracer)
            dynamic_args = iter(tree_unflatten(in_tree, tracers))
            count = len(static) + len(dynamic)
            call_args = [static[i] if i in static else next(dynamic_args) for i in range(count)]
            out = self.fn(*call_args)
            out_leaves, out_tree = tree_flatten(out)
            outputs = [trace.to_inst(o) for o in out_leaves]
            root = self._root(trace, outputs, out)
        header = _alias_header(self._donated_leaves(static, dynamic),
                               [p.shape for p in trace.parameters],
                               [o.shape for o in outputs], root.opcode == "tuple")
        module = Module.from_entry(f"jit_{name}", trace.builder.build(root, "main"), header)
        return Lowered(module, in_tree, out_tree, self.donate_argnums)

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
            shardings = _shardings_per_leaf([self.out_shardings], [out], "out_shardings")
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

    def __call__(self, *args):
        if current_trace() is not None:  # jit inside a trace: inline it
            return self.fn(*args)
        lowered = self.lower(*args)
        _, _, _, leaves, _ = self._key(args)
        if _executor is not None:
            outs = _executor(lowered, leaves)
            if outs is not None:
                return tree_unflatten(lowered.out_tree, outs)
        from xla_spmd.backends.reference import evaluate
        module = _single_device_module(lowered.module)
        result = evaluate(module, [leaf.value for leaf in leaves])
        outs = list(result) if module.entry.root.opcode == "tuple" and \
            lowered.out_tree.num_leaves != 1 else [result]
        return tree_unflatten(lowered.out_tree, [Array(o) for o in outs])


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


# How sharded functions run on the devices: installed by the runtime (the layer above),
# `executor(lowered, leaves) -> result leaves`, or None to evaluate on one device.
_executor: Callable | None = None


def set_executor(executor: Callable | None) -> None:
    global _executor
    _executor = executor


def jit(fn: Callable | None = None, *, in_shardings=None, out_shardings=None,
        static_argnums=(), donate_argnums=()):
    """Trace and cache `fn` per input signature; ``jit(f)``, ``@jit`` or ``@jit(...)``.

    `in_shardings` / `out_shardings`: None, one sharding for every value, or one entry per
    positional argument (result leaf) that is a sharding or a pytree of shardings.
    """
    def wrap(f):
        return Jitted(f, in_shardings, out_shardings, static_argnums, donate_argnums)
    return wrap if fn is None else wrap(fn)


def with_sharding_constraint(x, sharding):
    """Constrain the sharding of `x` (a pytree) at this point of the program, recorded as
    XLA does: a ``custom-call`` with target "Sharding" carrying the sharding."""
    leaves, tree = tree_flatten(x)
    shardings = _shardings_per_leaf([sharding], [x], "with_sharding_constraint")
    if current_trace() is None:
        return x
    outs = []
    for leaf, s in zip(leaves, shardings):
        aval = aval_of(leaf)
        tensor_sharding = to_tensor_sharding(s, aval.rank, "with_sharding_constraint")
        outs.append(bind("custom-call", leaf, shape=aval, custom_call_target="Sharding",
                         sharding=tensor_sharding))
    return tree_unflatten(tree, outs)


def _single_device_module(module: Module) -> Module:
    """The module to evaluate on one device: manual regions (shard_map) must be over a mesh of
    one device, where their boundary custom-calls are identities."""
    from xla_spmd.frontend.shard_map import strip_manual_boundaries
    return strip_manual_boundaries(module)
