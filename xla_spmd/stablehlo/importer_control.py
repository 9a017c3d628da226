"""Converters of control flow (while, if, case, call), custom calls and chlo decompositions."""

from __future__ import annotations

import numpy as np

from xla_spmd.ir import (
    PRED,
    U32,
    ArrayShape,
    ComparisonDirection,
    Literal,
    ReplicaGroups,
    SliceDim,
    TupleShape,
)
from xla_spmd.ir.custom_calls import SHARDING
from xla_spmd.ir.erf_inv import ERF_INV_LARGE, ERF_INV_SMALL
from xla_spmd.ir.lowered import LOWERED_DIMS, LOWERED_FROM, LOWERED_RESULT
from xla_spmd.stablehlo.importer_ops import (
    Dense,
    converter,
    result_type,
    scalar_region,
    single_or_tuple,
    symbol_name,
)
from xla_spmd.stablehlo.importer_shardings import gspmd_sharding
from xla_spmd.stablehlo.scope import WHILE_OPERANDS, free_values
from xla_spmd.stablehlo.syntax_tree import RawAttr

API_VERSIONS = {1: "API_VERSION_ORIGINAL", 2: "API_VERSION_STATUS_RETURNING",
                3: "API_VERSION_STATUS_RETURNING_UNIFIED", 4: "API_VERSION_TYPED_FFI"}


def _union(*lists):
    seen, out = set(), []
    for names in lists:
        for name in names:
            if name not in seen:
                seen.add(name)
                out.append(name)
    return out


@converter("stablehlo.while")
def _while(importer, scope, node, operands):
    cond_block, body_block = node.regions
    captures = _union(free_values(cond_block), free_values(body_block))
    state = scope.emit("tuple", list(operands) + [scope.lookup(c) for c in captures])
    cond = importer.region(cond_block, "cond", "tuple", captures, outer=scope)
    body = importer.region(body_block, "body", "tuple", captures, outer=scope)
    frontend = ((WHILE_OPERANDS, str(len(operands))),) if captures else ()
    loop = scope.emit("while", (state,), state.shape, condition=cond, body=body,
                      frontend=frontend)
    return scope.unpack(loop)[:len(operands)]


def _branches(importer, scope, node):
    computations, arguments = [], []
    for block in node.regions:
        captures = free_values(block)
        computations.append(importer.region(block, "branch", "branch", captures, outer=scope))
        values = [scope.lookup(c) for c in captures]
        arguments.append(values[0] if len(values) == 1 else scope.emit("tuple", values))
    return computations, arguments


@converter("stablehlo.case", "stablehlo.if")
def _conditional(importer, scope, node, operands):
    computations, arguments = _branches(importer, scope, node)
    shape = single_or_tuple(node) if node.result_types else TupleShape(())
    if node.name == "stablehlo.if":
        return scope.emit("conditional", [operands[0], *arguments], shape,
                          true_computation=computations[0], false_computation=computations[1])
    return scope.emit("conditional", [operands[0], *arguments], shape,
                      branch_computations=tuple(computations))


@converter("func.call")
def _call(importer, scope, node, operands):
    callee = importer.function(symbol_name(node.attrs["callee"]))
    return scope.emit("call", operands, callee.root.shape, to_apply=callee)


@converter("stablehlo.composite")
def _composite(importer, scope, node, operands):
    """§14: a composite means "call the decomposition"; XLA's HLO marks the call
    ``is_composite=true`` and keeps name, attributes and version as frontend attributes."""
    a = node.attrs
    callee = importer.function(symbol_name(a["decomposition"]))
    attributes = a.get("composite_attributes", "{}")
    if isinstance(attributes, RawAttr):
        attributes = attributes.text
    elif isinstance(attributes, dict) and not attributes:
        attributes = "{}"
    frontend = (("composite.attributes", str(attributes)), ("composite.name", str(a["name"])),
                ("composite.version", str(int(a.get("version", 0)))))
    return scope.emit("call", operands, callee.root.shape, frontend=frontend, to_apply=callee,
                      is_composite=True)


@converter("stablehlo.custom_call")
def _custom_call(importer, scope, node, operands):
    a = node.attrs
    shape = single_or_tuple(node) if node.result_types else TupleShape(())
    sharding, frontend = None, []
    if "sdy.sharding" in a:
        value = a["sdy.sharding"]
        sharding = value[0] if isinstance(value, tuple) and len(value) == 1 else value
    elif "mhlo.sharding" in a:
        sharding, frontend = gspmd_sharding(importer, a["mhlo.sharding"], shape)
        frontend = list(frontend)
    if isinstance(a.get("mhlo.frontend_attributes"), dict):
        frontend.extend((k, str(v)) for k, v in a["mhlo.frontend_attributes"].items())
    extras = []
    config = a.get("backend_config")
    if isinstance(config, RawAttr):
        config = config.text
    # An empty one is kept too (it prints back as written), except on GSPMD's `Sharding`,
    # which prints as an ``sdy.sharding_constraint`` (no attributes).
    if config is not None and (config or a["call_target_name"] != SHARDING):
        extras.append(("backend_config", config if isinstance(config, str) else str(config)))
    version = a.get("api_version")
    called = [symbol_name(c) for c in a.get("called_computations") or ()]
    if any(c not in importer.functions for c in called):
        # MLIR does not resolve a custom call's called_computations (Shardy's tests name a
        # comparator the file lacks): the names are kept as written, with no computation.
        extras.append(("called_computations", ", ".join(f"@{c}" for c in called)))
        called = []
    return scope.emit(
        "custom-call", operands, shape, sharding=sharding, frontend=frontend, extras=extras,
        custom_call_target=a["call_target_name"],
        custom_call_has_side_effect=bool(a.get("has_side_effect", False)),
        api_version=None if version in (None, 1) else API_VERSIONS.get(int(version)),
        called_computations=None if not called else tuple(
            importer.function(c) for c in called))


# ---------------------------------------------------------------------------------------------
# chlo.erf_inv: XLA's single-precision polynomial (Giles, `xla_spmd.ir.erf_inv`), computed in
# f32, as the frontend's lax.erf_inv.


@converter("chlo.erf_inv")
def _erf_inv(importer, scope, node, operands):
    (x,) = operands
    out = result_type(node)
    shape = ArrayShape(x.shape.dtype, x.shape.dims)
    dtype = shape.dtype

    def const(value):
        scalar = scope.emit("constant", (), ArrayShape(dtype, ()),
                            literal=Literal(np.array(value, dtype.numpy)))
        return scope.emit("broadcast", (scalar,), shape, dimensions=())

    def op(name, *args, **attrs):
        return scope.emit(name, args, **attrs)

    one = const(1.0)
    w = op("negate", op("log", op("multiply", op("subtract", one, x), op("add", one, x))))
    small = op("compare", w, const(5.0), direction=ComparisonDirection.LT)
    w = op("select", small, op("subtract", w, const(2.5)),
           op("subtract", op("sqrt", w), const(3.0)))
    p = op("select", small, const(ERF_INV_SMALL[0]), const(ERF_INV_LARGE[0]))
    for a, b in zip(ERF_INV_SMALL[1:], ERF_INV_LARGE[1:]):
        p = op("add", op("select", small, const(a), const(b)), op("multiply", p, w))
    result = op("multiply", p, x)
    at_one = op("compare", op("abs", x), one, direction=ComparisonDirection.EQ)
    result = op("select", at_one, op("multiply", x, const(np.inf)), result)
    if result.shape != out:
        result = scope.emit("convert", (result,), out)
    return result


# ---------------------------------------------------------------------------------------------
# Collectives


def replica_groups(value) -> ReplicaGroups | None:
    if value is None:
        return None
    array = value.value if isinstance(value, Dense) else np.asarray(value)
    if array is None:
        return ReplicaGroups.listed(())
    array = np.asarray(array)
    if array.size == 0:
        return ReplicaGroups.listed(())
    return ReplicaGroups.listed([[int(x) for x in row if x >= 0]
                                 for row in array.reshape(array.shape[0], -1)])


def _channel(node):
    handle = node.attrs.get("channel_handle")
    if isinstance(handle, dict) and int(handle.get("handle", 0)) > 0:
        return int(handle["handle"])
    return None


def _group_attrs(node, importer=None):
    """The HLO group attributes of a collective. StableHLO orders a cross_replica_and_partition
    group partition-major, ``[(r, p) for p in partitions for r in group]``, where XLA (and our
    HLO) is replica-major; when the device counts are known (``importer.devices``), such a
    group of an all-reduce, all-gather or reduce-scatter (pass the importer for those) becomes
    flattened ids in StableHLO's order."""
    groups = replica_groups(node.attrs.get("replica_groups"))
    channel = _channel(node)
    global_ids = bool(node.attrs.get("use_global_device_ids", False))
    devices = importer.devices if importer is not None else None
    if channel is not None and not global_ids and devices is not None:
        replicas, partitions = devices
        listed = (groups.groups if groups is not None else ()) or (tuple(range(replicas)),)
        groups = ReplicaGroups.listed([[r * partitions + p for p in range(partitions)
                                        for r in group] for group in listed])
        global_ids = True
    return dict(replica_groups=groups, channel_id=channel, use_global_device_ids=global_ids)


@converter("stablehlo.all_reduce")
def _all_reduce(importer, scope, node, operands):
    return scope.emit("all-reduce", operands, single_or_tuple(node),
                      **_group_attrs(node, importer),
                      to_apply=scalar_region(importer, scope, node))


@converter("stablehlo.all_gather")
def _all_gather(importer, scope, node, operands):
    return scope.emit("all-gather", operands, single_or_tuple(node),
                      **_group_attrs(node, importer),
                      dimensions=(int(node.attrs["all_gather_dim"]),))


@converter("stablehlo.reduce_scatter")
def _reduce_scatter(importer, scope, node, operands):
    return scope.emit("reduce-scatter", operands, single_or_tuple(node),
                      **_group_attrs(node, importer),
                      dimensions=(int(node.attrs["scatter_dimension"]),),
                      to_apply=scalar_region(importer, scope, node))


@converter("stablehlo.all_to_all")
def _all_to_all(importer, scope, node, operands):
    a = node.attrs
    groups = _group_attrs(node)
    groups.pop("use_global_device_ids")
    split, concat = int(a["split_dimension"]), int(a["concat_dimension"])
    count = int(a["split_count"])
    n = len(operands)
    # Several HLO ops for one StableHLO op print back as it (xla_spmd.ir.lowered).
    mark = ((LOWERED_FROM, f"all_to_all {importer.fresh('lowered')}"),) \
        if n != 1 or split != concat else ()
    if n != 1:
        # A variadic all_to_all splits every operand alike (not HLO's tuple form, where
        # operand j goes to rank j): one array all-to-all per operand.
        return [_array_all_to_all(scope, x, split, concat, count, groups, out,
                                  mark, f"{k}/{n}")
                for k, (x, out) in enumerate(zip(operands, node.result_types))]
    return _array_all_to_all(scope, operands[0], split, concat, count, groups,
                             result_type(node), mark, "0/1")


def _array_all_to_all(scope, x, split, concat, count, groups, out, mark=(), result="0/1"):
    last = mark + ((LOWERED_RESULT, result), (LOWERED_DIMS, str(concat))) if mark else ()
    exchanged = scope.emit("all-to-all", (x,), x.shape, dimensions=(split,),
                           frontend=last if split == concat else mark, **groups)
    if split == concat:
        return exchanged
    # §15.3: the received chunks sit along the split dim in sender order; move them to the
    # concat dim: reshape split -> [count, size/count], transpose count before concat, merge.
    dims = list(x.shape.dims)
    expanded = dims[:split] + [count, dims[split] // count] + dims[split + 1:]
    reshaped = scope.emit("reshape", (exchanged,), ArrayShape(x.shape.dtype, tuple(expanded)),
                          frontend=mark)
    axes = list(range(len(expanded)))
    count_axis = axes.pop(split)
    concat_position = concat if concat < split else concat + 1
    target = axes.index(concat_position)
    axes.insert(target, count_axis)
    moved = scope.emit("transpose", (reshaped,), dimensions=tuple(axes), frontend=mark)
    return scope.emit("reshape", (moved,), out, frontend=last)


@converter("stablehlo.collective_permute")
def _collective_permute(importer, scope, node, operands):
    pairs = node.attrs["source_target_pairs"]
    array = pairs.value if isinstance(pairs, Dense) else np.asarray(pairs)
    return scope.emit("collective-permute", operands, result_type(node),
                      source_target_pairs=tuple((int(s), int(t))
                                                for s, t in np.asarray(array).reshape(-1, 2)),
                      channel_id=_channel(node))


@converter("stablehlo.collective_broadcast")
def _collective_broadcast(importer, scope, node, operands):
    """Spec: each operand travels from its group's source process: the first member, or with
    ``has_dynamic_root`` the member the last operand names (one index per data operand)."""
    groups = replica_groups(node.attrs.get("replica_groups"))
    channel = _channel(node)
    if not node.attrs.get("has_dynamic_root"):
        results = [scope.emit("collective-broadcast", (x,), shape, replica_groups=groups,
                              channel_id=channel)
                   for x, shape in zip(operands, node.result_types)]
        return results if len(results) != 1 else results[0]
    if groups is None:
        raise importer.error(node, "has_dynamic_root needs replica_groups")
    *data, roots = operands
    results = []
    for index, x in enumerate(data):
        # Every member's value side by side, then the root's: exact for every type.
        size = len(groups.explicit[0]) if groups.explicit else 1
        one = scope.emit("reshape", (x,), ArrayShape(x.shape.dtype, (1,) + x.shape.dims))
        every = scope.emit("all-gather", (one,), ArrayShape(
            x.shape.dtype, (size,) + x.shape.dims), dimensions=(0,), replica_groups=groups,
            channel_id=channel, use_global_device_ids=bool(channel))
        root = scope.emit("reshape", (scope.emit(
            "slice", (roots,), ArrayShape(roots.shape.dtype, (1,)),
            slice=(SliceDim(index, index + 1, 1),)),), ArrayShape(roots.shape.dtype, ()))
        zero = scope.emit("constant", (), ArrayShape(roots.shape.dtype, ()),
                          literal=Literal(np.zeros((), roots.shape.dtype.numpy)))
        picked = scope.emit("dynamic-slice", (every, root) + (zero,) * x.shape.rank,
                            ArrayShape(x.shape.dtype, (1,) + x.shape.dims),
                            dynamic_slice_sizes=(1,) + x.shape.dims)
        results.append(scope.emit("reshape", (picked,), x.shape))
    return results if len(results) != 1 else results[0]


@converter("stablehlo.collective_reduce")
def _collective_reduce(importer, scope, node, operands):
    """Spec: every group reduces its operands onto its first process (the root); the others,
    and processes in no group, get zeros. An all-reduce, kept on the roots only."""
    if node.attrs.get("has_dynamic_root"):
        raise importer.error(node, "stablehlo.collective_reduce with has_dynamic_root is not "
                                   "supported")
    groups = replica_groups(node.attrs.get("replica_groups"))
    if groups is None:
        raise importer.error(node, "needs replica_groups (its roots are their first members)")
    channel = _channel(node)
    # cross_partition with a channel: partition ids, the global device ids of one replica
    # (a grid with several replicas and a channel is not modelled).
    reduced = scope.emit("all-reduce", operands, single_or_tuple(node), replica_groups=groups,
                         channel_id=channel, use_global_device_ids=bool(channel),
                         to_apply=scalar_region(importer, scope, node))
    values = scope.unpack(reduced) if len(node.result_types) != 1 else [reduced]
    process = scope.emit("partition-id" if channel else "replica-id", (),
                         ArrayShape(U32, ()))
    is_root = None
    for group in groups.explicit or ():
        root = scope.emit("constant", (), ArrayShape(U32, ()),
                          literal=Literal(np.array(group[0], np.uint32)))
        same = scope.emit("compare", (process, root), ArrayShape(PRED, ()),
                          direction=ComparisonDirection.EQ)
        is_root = same if is_root is None else scope.emit("or", (is_root, same))
    results = []
    for value in values:
        zeros = scope.emit("broadcast", (scope.emit(
            "constant", (), ArrayShape(value.shape.dtype, ()),
            literal=Literal(np.zeros((), value.shape.dtype.numpy))),), value.shape, dimensions=())
        if is_root is None:
            results.append(zeros)
            continue
        mask = scope.emit("broadcast", (is_root,), ArrayShape(PRED, value.shape.dims),
                          dimensions=())
        results.append(scope.emit("select", (mask, value, zeros)))
    return results if len(results) != 1 else results[0]
