"""`shard_map`: a manual region whose body is per-device code with explicit collectives (the
collectives users call inside it, `psum` and the others, are in `xla_spmd.frontend.parallel`).

Represented as XLA exports Shardy's manual computations to HLO: a custom-call
``xla.sdy.GlobalToLocalShape`` on the inputs, a `call` (``inlineable="false"``) to a
computation ``xla.sdy.manual_computation_body.N`` over local shapes, and a custom-call
``xla.sdy.LocalToGlobalShape`` on the outputs, with frontend attributes
``xla.sdy.in_shardings``, ``xla.sdy.out_shardings`` and ``xla.sdy.manual_axes``.

>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import P
>>> import numpy as np
>>> from xla_spmd.frontend.parallel import psum
>>> f = shard_map(lambda x: psum(x, "x"), make_mesh({"x": 1}), P("x"), P())
>>> np.asarray(f(np.ones(2, np.float32))).tolist()
[1.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from xla_spmd.errors import ShardingError, XlaSpmdError
from xla_spmd.frontend import lax, sharding_types
from xla_spmd.frontend.ad import flat_cotangent
from xla_spmd.frontend.jit import jit
from xla_spmd.frontend.numpy_core import asarray
from xla_spmd.frontend.parallel import Manual, psum
from xla_spmd.frontend.pytree import tree_flatten, tree_unflatten
from xla_spmd.frontend.tracing import (
    Tracer,
    Value,
    bind,
    current_trace,
    declare_mesh,
    declared_meshes,
    finish,
    fresh_name,
    trace_computation,
)
from xla_spmd.frontend.vma import NO_CHECK_VMA, vma_of
from xla_spmd.ir import ArrayShape, Instruction, Shape, TupleShape
from xla_spmd.ir.custom_calls import (
    GLOBAL_TO_LOCAL,
    IN_SHARDINGS,
    LOCAL_TO_GLOBAL,
    MANUAL_AXES,
    MANUAL_BODY,
    OUT_SHARDINGS,
)
from xla_spmd.mesh import Mesh
from xla_spmd.sharding import (
    NamedSharding,
    PartitionSpec,
    TensorSharding,
    print_sharding_per_value,
)
from xla_spmd.sharding.manual import ManualRegion, manual_region


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
            return jit(wrapped)(*args)
        return _shard_map(fn, mesh, axes, in_specs, out_specs, args, check_vma)
    return wrapped


def spec_axes(sharding: TensorSharding) -> frozenset:
    """The mesh axes a sharding uses (what a value of it varies over)."""
    return frozenset(a.name for d in range(sharding.rank) for a in sharding.dim_axes(d))


def _check_outputs_vary_as_specified(outputs, out_specs_leaves, out_shardings, axes):
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
