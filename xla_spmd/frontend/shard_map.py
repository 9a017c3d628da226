"""`shard_map`: a manual region whose body is per-device code with explicit collectives, and
the collectives users call inside it (`psum`, `pmean`, `pmax`, `pmin`, `all_gather`,
`psum_scatter`, `all_to_all`, `ppermute`, `axis_index`).

Represented as XLA exports Shardy's manual computations to HLO: a custom-call
``xla.sdy.GlobalToLocalShape`` on the inputs, a `call` (``inlineable="false"``) to a
computation ``xla.sdy.manual_computation_body.N`` over local shapes, and a custom-call
``xla.sdy.LocalToGlobalShape`` on the outputs, with frontend attributes
``xla.sdy.in_shardings``, ``xla.sdy.out_shardings`` and ``xla.sdy.manual_axes``. Collectives
get replica groups of the mesh axes (flattened device ids, ``use_global_device_ids=true``)
and a channel id.

>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import P
>>> import numpy as np
>>> f = shard_map(lambda x: psum(x, "x"), make_mesh({"x": 1}), P("x"), P())
>>> np.asarray(f(np.ones(2, np.float32))).tolist()
[1.0, 1.0]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xla_spmd.errors import ShardingError, XlaSpmdError
from xla_spmd.frontend import lax, sharding_types
from xla_spmd.frontend.pytree import tree_flatten, tree_map, tree_unflatten
from xla_spmd.frontend.tracing import (
    ArrayLike,
    AxisName,
    Value,
    bind,
    current_trace,
    declare_mesh,
    declared_meshes,
    finish,
    fresh_name,
    reducer,
    trace_computation,
)
from xla_spmd.frontend.vma import COLLECTIVE_AXES, NO_CHECK_VMA
from xla_spmd.ir import (
    OPS,
    S32,
    U32,
    ArrayShape,
    Instruction,
    Module,
    ReplicaGroups,
    Shape,
    TupleShape,
)
from xla_spmd.ir.custom_calls import (
    GLOBAL_TO_LOCAL,
    IN_SHARDINGS,
    LOCAL_TO_GLOBAL,
    MANUAL_AXES,
    MANUAL_BODY,
    MANUAL_BOUNDARIES,
    OUT_SHARDINGS,
    PVARY,
)
from xla_spmd.ir.module import make_instruction, rewrite
from xla_spmd.mesh import Mesh
from xla_spmd.sharding import (
    NamedSharding,
    PartitionSpec,
    TensorSharding,
    meshes_of,
    print_sharding_per_value,
)
from xla_spmd.sharding.manual import ManualRegion, manual_region


@dataclass
class Manual:
    """The manual region a trace is in: its mesh, manual axes and channel ids."""

    mesh: Mesh
    axes: tuple[str, ...]
    channels: itertools.count = field(default_factory=lambda: itertools.count(1))
    check_vma: bool = True  # values typed by the axes they vary over (frontend.vma)


def _manual_axes_text(axes) -> str:
    return "#sdy<manual_axes{" + ", ".join(f'"{a}"' for a in axes) + "}>"


def _specs_per_leaf(specs, trees, what: str) -> list:
    if isinstance(specs, PartitionSpec) or specs is None:
        specs = [specs] * len(trees)
    specs = list(specs)
    if len(specs) != len(trees):
        raise ShardingError(f"shard_map {what}: {len(specs)} specs for {len(trees)} values")
    out = []
    for spec, tree in zip(specs, trees):
        leaves = tree_flatten(tree)[0]
        if isinstance(spec, PartitionSpec) or spec is None:
            out += [spec or PartitionSpec()] * len(leaves)
        else:
            spec_leaves = tree_flatten(spec, is_leaf=lambda s: isinstance(s, PartitionSpec))[0]
            if len(spec_leaves) != len(leaves):
                raise ShardingError(f"shard_map {what}: spec structure does not match")
            out += spec_leaves
    return out


def _factors(mesh: Mesh, sharding, dims, what: str) -> list[int]:
    factors = []
    for d, n in enumerate(dims):
        factor = int(np.prod([mesh.axis_size(a) for a in sharding.dim_axes(d)]))
        if n % factor:
            raise ShardingError(f"shard_map {what}: dim {d} of size {n} is not divisible by "
                                f"the {factor} shards of {sharding}")
        factors.append(factor)
    return factors


def shard_map(fn: Callable, mesh: Mesh, in_specs: Any, out_specs: Any,
              axis_names: Sequence[str] | None = None, check_vma: bool = True
              ) -> Callable[..., Any]:
    """Run `fn` per device on local shards: inputs split by `in_specs`, outputs assembled by
    `out_specs` (PartitionSpecs, or pytrees of them matching arguments / results).

    With `check_vma` (the default, as JAX's) values are typed by the manual axes they vary
    over (`xla_spmd.frontend.vma`): an output must not vary over an axis its out_spec
    leaves out, and gradients of invariant values are summed over the devices."""
    axes = tuple(axis_names) if axis_names else mesh.axis_names

    def wrapped(*args):
        if current_trace() is None:
            from xla_spmd.frontend.jit import jit
            return jit(wrapped)(*args)
        return _shard_map(fn, mesh, axes, in_specs, out_specs, args, check_vma)
    return wrapped


def spec_axes(sharding: TensorSharding) -> frozenset:
    """The mesh axes a sharding uses (what a value of it varies over)."""
    return frozenset(a.name for d in range(sharding.rank) for a in sharding.dim_axes(d))


def _check_outputs_vary_as_specified(outputs, out_specs_leaves, out_shardings, axes):
    from xla_spmd.frontend.vma import vma_of
    every = frozenset(axes)
    for i, (o, spec, sharding) in enumerate(zip(outputs, out_specs_leaves, out_shardings)):
        extra = (vma_of(o, every) & every) - spec_axes(sharding)
        if extra:
            names = ", ".join(repr(a) for a in axes if a in extra)
            raise XlaSpmdError(
                f"shard_map out_specs {spec} for output {i} ({o.aval}): the value varies "
                f"over manual axis {names}, which the spec does not name; reduce it over "
                f"{names} (psum, pmean), name the axis in out_specs, or pass check_vma=False "
                "(as JAX's shard_map)")


def _shard_map(fn, mesh, axes, in_specs, out_specs, args, check_vma=True):
    from xla_spmd.frontend.numpy_core import asarray
    leaves, in_tree = tree_flatten(args)
    leaves = [asarray(x) for x in leaves]
    specs = _specs_per_leaf(in_specs, list(args), "in_specs")
    in_shardings = [NamedSharding(mesh, s).to_tensor_sharding(x.ndim) for s, x in
                    zip(specs, leaves)]
    local = []
    for i, (x, s) in enumerate(zip(leaves, in_shardings)):
        factors = _factors(mesh, s, x.shape, f"argument {i}")
        local.append(ArrayShape(x.aval.dtype, tuple(n // f for n, f in zip(x.shape, factors))))
    out_info = {}

    def body(*tracers):
        if tracers:  # the inputs vary over the manual axes their in_specs name
            tracers[0].trace.parameter_vmas = {
                id(t.inst): spec_axes(s) & frozenset(axes)
                for t, s in zip(tracers, in_shardings)}
        out = fn(*tree_unflatten(in_tree, tracers))
        out_leaves, out_info["tree"] = tree_flatten(out)
        out_info["value"] = out
        return [asarray(o) for o in out_leaves]

    name = fresh_name(MANUAL_BODY)
    trace, outputs = trace_computation(body, local, name,
                                       manual=Manual(mesh, axes, check_vma=check_vma))
    if trace.captures:
        raise XlaSpmdError("a shard_map body closes over traced values; pass them as "
                           "arguments (with in_specs) instead")
    computation = finish(trace, outputs, tuple_root=len(outputs) != 1)
    out_specs_leaves = _specs_per_leaf([out_specs], [out_info["value"]], "out_specs")
    out_shardings, global_avals = [], []
    for o, spec in zip(outputs, out_specs_leaves):
        sharding = NamedSharding(mesh, spec).to_tensor_sharding(o.shape.rank)
        factors = [int(np.prod([mesh.axis_size(a) for a in sharding.dim_axes(d)]))
                   for d in range(o.shape.rank)]
        out_shardings.append(sharding)
        global_avals.append(ArrayShape(o.shape.dtype,
                                       tuple(n * f for n, f in zip(o.shape.dims, factors))))
    if check_vma:
        with trace:
            _check_outputs_vary_as_specified(
                [_tracer_of(trace, o) for o in outputs], out_specs_leaves, out_shardings,
                axes)
    for sharding in (*in_shardings, *out_shardings):  # the program declares the mesh
        if sharding.mesh_name:
            declare_mesh(sharding.mesh_name, sharding.mesh)
    manual = (MANUAL_AXES, _manual_axes_text(axes))
    untyped = [] if check_vma else [(NO_CHECK_VMA, "false")]
    locals_ = boundary(GLOBAL_TO_LOCAL, leaves, local,
                       [(IN_SHARDINGS, print_sharding_per_value(in_shardings)), manual,
                        *untyped])
    result = bind("call", *locals_, to_apply=computation,
                  frontend_attributes=(("inlineable", "false"), *untyped))
    local_outs = [result] if len(outputs) == 1 else [
        lax.get_tuple_element(result, i) for i in range(len(outputs))]
    globals_ = boundary(LOCAL_TO_GLOBAL, local_outs, global_avals,
                        [manual, (OUT_SHARDINGS, print_sharding_per_value(out_shardings)),
                         *untyped])
    outer = current_trace()
    if outer is None or outer.manual is None:  # typed by out_specs on the Explicit axes
        globals_ = [sharding_types.typed_as(g, s) for g, s in zip(globals_, out_shardings)]
    return tree_unflatten(out_info["tree"], globals_)


def _tracer_of(trace, inst):
    from xla_spmd.frontend.tracing import Tracer
    return Tracer(trace, inst)


def is_typed(inst: Instruction) -> bool:
    """Whether the shard_map of this body call or boundary checks varying axes."""
    return inst.frontend_attribute(NO_CHECK_VMA) is None


def boundary(target: str, values: Sequence[Value], avals: Sequence[Shape],
             attributes: Iterable[tuple[str, str]]) -> list:
    """A manual-region boundary custom-call on `values`, giving values of `avals`."""
    shape = avals[0] if len(avals) == 1 else TupleShape(tuple(avals))
    out = bind("custom-call", *values, shape=shape, custom_call_target=target,
               custom_call_has_side_effect=True, frontend_attributes=tuple(attributes))
    if len(avals) == 1:
        return [out]
    return [lax.get_tuple_element(out, i) for i in range(len(avals))]


def transpose_boundary(ct: Value, inst: Instruction, ops: Sequence[Value]) -> list:
    """VJP of a boundary: GlobalToLocal's cotangent goes through a LocalToGlobal with the
    same shardings, and vice versa.

    Convention (as JAX's shard_map with replication checking): a result replicated over
    manual axes A is one value held by |A| devices, so its cotangent is split evenly, each
    copy getting 1/|A| (here); an operand replicated over A is used by |A| devices, so its
    cotangent is the sum of theirs (a psum over A closing the backward body, see
    `manual_pullback_sums`). With both, psum transposes to psum and gradients are exact.
    """
    from xla_spmd.frontend.ad import flat_cotangent
    attrs = dict(inst.frontend_attributes)
    manual = (MANUAL_AXES, attrs[MANUAL_AXES])
    untyped = [] if is_typed(inst) else [(NO_CHECK_VMA, "false")]
    cts = flat_cotangent(ct, inst.shape)
    if inst.attrs.custom_call_target == GLOBAL_TO_LOCAL:
        target = LOCAL_TO_GLOBAL
        attributes = [manual, (OUT_SHARDINGS, attrs[IN_SHARDINGS]), *untyped]
    else:
        target = GLOBAL_TO_LOCAL
        attributes = [(IN_SHARDINGS, attrs[OUT_SHARDINGS]), manual, *untyped]
        if not is_typed(inst):  # typed: an invariant result's cotangent is invariant too
            region = manual_region(inst, declared_meshes())
            assert region is not None  # inst is a manual boundary
            cts = [_split(c, region, s) for c, s in zip(cts, region.out_shardings)]
    return boundary(target, cts, [o.aval for o in ops], attributes)


def _split(ct, region: ManualRegion, sharding):
    copies = int(np.prod([region.mesh.axis_size(a) for a in region.replicated_axes(sharding)]))
    if copies == 1 or not (ct.aval.dtype.is_float or ct.aval.dtype.is_complex):
        return ct
    return lax.div(ct, lax.full(ct.shape, float(copies), ct.aval.dtype))


def psum_replicated(cts: Sequence[Value], region: ManualRegion) -> list:
    """Inside a manual backward body: each operand cotangent summed over the manual axes its
    operand is replicated over (the transpose of that operand's broadcast to the devices)."""
    out = []
    for c, sharding in zip(cts, region.in_shardings):
        axes = () if sharding is None else region.replicated_axes(sharding)
        if axes and (c.aval.dtype.is_float or c.aval.dtype.is_complex):
            c = psum(c, axes)
        out.append(c)
    return out


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


# ---------------------------------------------------------------------------------------------
# Collectives


def _manual(what: str) -> Manual:
    trace = current_trace()
    manual = trace.manual if trace is not None else None
    if manual is None:
        raise XlaSpmdError(f"{what} is only meaningful inside shard_map (per-device code); "
                           "call it in the body of a shard_map over a mesh with that axis")
    return manual


def _axes(axis_name) -> tuple[str, ...]:
    return (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)


def _groups(manual: Manual, axis_name) -> ReplicaGroups:
    axes = _axes(axis_name)
    for a in axes:
        if a not in manual.axes:
            raise XlaSpmdError(f"axis {a!r} is not a manual axis of this shard_map "
                               f"({list(manual.axes)})")
    return ReplicaGroups.from_device_groups(manual.mesh.device_groups(axes))


def _group_kwargs(manual: Manual, axis_name, global_ids: bool = True) -> dict:
    kwargs = {"replica_groups": _groups(manual, axis_name),
              "channel_id": next(manual.channels),
              "frontend_attributes": ((COLLECTIVE_AXES, ",".join(_axes(axis_name))),)}
    if global_ids:
        kwargs["use_global_device_ids"] = True
    return kwargs


def _all_reduce(kind: str, x, axis_name):
    """One all-reduce per leaf of `x`, or a single variadic (tuple) all-reduce when the leaves
    share an element type (as JAX binds one psum for a pytree)."""
    from xla_spmd.frontend.numpy_core import asarray
    manual = _manual({"add": "lax.psum", "max": "lax.pmax", "min": "lax.pmin"}[kind])
    leaves, tree = tree_flatten(x)
    leaves = [asarray(v) for v in leaves]
    dtypes = {v.aval.dtype for v in leaves}
    if len(leaves) > 1 and len(dtypes) == 1:
        out = bind("all-reduce", *leaves, to_apply=reducer(kind, leaves[0].aval.dtype),
                   **_group_kwargs(manual, axis_name))
        return tree_unflatten(tree, [lax.get_tuple_element(out, k) for k in range(len(leaves))])

    def one(v):
        return bind("all-reduce", v, to_apply=reducer(kind, v.aval.dtype),
                    **_group_kwargs(manual, axis_name))
    return tree_unflatten(tree, [one(v) for v in leaves])


def pvary(x: Any, axis_name: AxisName) -> Any:
    """JAX's ``lax.pvary``: `x` (a pytree) unchanged, typed as varying over `axis_name` (with
    ``check_vma``); its transpose is a ``psum`` over those axes. With ``check_vma=False`` it
    is the identity both ways."""
    from xla_spmd.frontend.numpy_core import asarray
    manual = _manual("lax.pvary")
    axes = _axes(axis_name)
    _groups(manual, axes)  # checks the names
    if not manual.check_vma:
        return x

    def one(v):
        v = asarray(v)
        return bind("custom-call", v, shape=v.aval, custom_call_target=PVARY,
                    frontend_attributes=((COLLECTIVE_AXES, ",".join(axes)),))
    return tree_map(one, x)


def psum(x: Any, axis_name: AxisName) -> Any:
    """Sum over the devices along `axis_name` (a mesh axis or a tuple of them)."""
    return _all_reduce("add", x, axis_name)


def pmax(x: Any, axis_name: AxisName) -> Any:
    return _all_reduce("max", x, axis_name)


def pmin(x: Any, axis_name: AxisName) -> Any:
    return _all_reduce("min", x, axis_name)


def axis_size(axis_name: AxisName) -> int:
    manual = _manual("lax.axis_size")
    return int(np.prod([manual.mesh.axis_size(a) for a in _axes(axis_name)]))


def pmean(x: Any, axis_name: AxisName) -> Any:
    _manual("lax.pmean")
    n = axis_size(axis_name)
    return tree_map(lambda v: v / float(n), psum(x, axis_name))


def all_gather(x: ArrayLike, axis_name: AxisName, axis: int = 0, tiled: bool = False) -> Value:
    """Concatenate (tiled) or stack the devices' `x` along `axis`."""
    manual = _manual("lax.all_gather")
    if not tiled:
        x = lax.reshape(x, x.shape[:axis] + (1,) + x.shape[axis:])
    return bind("all-gather", x, dimensions=(axis,), **_group_kwargs(manual, axis_name))


def psum_scatter(x: ArrayLike, axis_name: AxisName, scatter_dimension: int = 0, tiled: bool = False
                 ) -> Value:
    """Sum over devices, each keeping its chunk of `scatter_dimension`."""
    manual = _manual("lax.psum_scatter")
    out = bind("reduce-scatter", x, dimensions=(scatter_dimension,),
               to_apply=reducer("add", x.aval.dtype), **_group_kwargs(manual, axis_name))
    if not tiled:
        if out.shape[scatter_dimension] != 1:
            raise XlaSpmdError("psum_scatter(tiled=False) needs the scatter dim to equal the "
                               "number of devices")
        out = lax.reshape(out, [n for d, n in enumerate(out.shape) if d != scatter_dimension])
    return out


def all_to_all(x: ArrayLike, axis_name: AxisName, split_axis: int, concat_axis: int,
               tiled: bool = False) -> Value:
    """Split `split_axis` into one chunk per device, exchange, concatenate the received
    chunks along `concat_axis` (HLO all-to-all plus reshape/transpose, as XLA lowers it)."""
    from xla_spmd.frontend.numpy_shape import moveaxis
    if not tiled:
        x1 = lax.reshape(x, x.shape + (1,))
        y = all_to_all(x1, axis_name, split_axis, x.ndim, tiled=True)
        y = lax.reshape(y, [n for d, n in enumerate(y.shape) if d != split_axis])
        return moveaxis(y, -1, concat_axis)
    manual = _manual("lax.all_to_all")
    n = axis_size(axis_name)
    kwargs = _group_kwargs(manual, axis_name, global_ids=False)
    y = bind("all-to-all", x, dimensions=(split_axis,), **kwargs)
    if split_axis == concat_axis:
        return y
    shape = list(y.shape)
    chunk = shape[split_axis] // n
    y = lax.reshape(y, shape[:split_axis] + [n, chunk] + shape[split_axis + 1:])
    order = [d for d in range(y.ndim) if d != split_axis]
    target = concat_axis if concat_axis < split_axis else concat_axis + 1
    order.insert(order.index(target), split_axis)
    y = lax.transpose(y, order)
    final = list(shape)
    final[split_axis] = chunk
    final[concat_axis] *= n
    return lax.reshape(y, final)


def ppermute(x: ArrayLike, axis_name: AxisName, perm: Iterable[tuple[int, int]]) -> Value:
    """Send each device's `x` to another along `axis_name`: `perm` lists (source, target)
    positions on the axis; devices that receive nothing get zeros."""
    manual = _manual("lax.ppermute")
    groups = manual.mesh.device_groups(_axes(axis_name)).groups
    pairs = tuple((g[s], g[t]) for g in groups for s, t in perm)
    return bind("collective-permute", x, source_target_pairs=pairs,
                channel_id=next(manual.channels))


def axis_index(axis_name: AxisName) -> Value | None:
    """This device's position along `axis_name` (s32), computed from partition-id."""
    manual = _manual("lax.axis_index")
    mesh = manual.mesh
    pid = bind("partition-id")
    index = None
    for a in _axes(axis_name):
        if mesh.is_iota:
            position = mesh.axis_names.index(a)
            stride = int(np.prod(mesh.axis_sizes[position + 1:]))
            coord = lax.div(pid, lax.constant(stride, U32))
            coord = bind("remainder", coord, lax.constant(mesh.axis_size(a), U32))
            coord = lax.convert(coord, S32)
        else:
            table = np.array([mesh.axis_coord(d, a) for d in range(mesh.size)], np.int32)
            coord = lax.reshape(lax.dynamic_slice(table, [pid], [1]), ())
        if index is None:
            index = coord
        else:
            index = lax.add(lax.mul(index, lax.constant(mesh.axis_size(a), S32)), coord)
    return index
