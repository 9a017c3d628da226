"""Collective optimizations on SPMD programs (XLA's ReduceScatterCreator, collective
combiners, and no-op collective removal; sharding_and_partitioning §C.5).

Passes:

* `create_reduce_scatter`: ``dynamic-slice(all-reduce(x), offsets)`` where the all-reduce has
  no other user, the slice keeps every dimension whole but one, `d`, and the offset along `d`
  is, on every device, ``rank of the device in its group × (dim size / group size)`` (offsets
  of the whole dimensions do not matter: they clamp to 0) → ``reduce-scatter(x),
  dimensions={d}`` with the all-reduce's groups and reducer. The offset is checked by
  evaluating it as a function of `partition-id` for every partition (see
  `collective_groups.PartitionValues`), so the table form GSPMD emits
  (``reshape(dynamic-slice(constant table, partition-id))``), the arithmetic form
  (``multiply(convert(partition-id), chunk)``, with divide/remainder for sub-groups) and any
  mix of them are recognised alike. Groups with flattened ids
  (``channel_id, use_global_device_ids=true``) are kept as written; other modes are rewritten
  to their flattened-id groups. The all-reduce must be single-operand.
* `remove_own_shard_gather`: ``dynamic-slice(all-gather(x), offsets)`` that takes exactly
  the device's own shard back (same offset rule, chunk = x's size along the gather dim) → `x`.
* `remove_noop_collectives`: all-reduce, all-gather, reduce-scatter and all-to-all whose groups
  all have one device → their operand(s); collective-permute whose pairs are all ``{i,i}`` and
  cover every id (partitions with a channel, replicas without; the count must be in the
  module header) → its operand.
* `combine_collectives`: independent all-reduces (resp. all-gathers, reduce-scatters) with
  the same groups, group mode, reducer (compared structurally), dimension and element type →
  one variadic collective whose tuple elements replace them (the old names become
  get-tuple-elements). Two collectives are independent when neither reaches the other; the
  pass groups collectives by their "collective depth" (the most collectives on any path
  into them), which is equal for combined ones, so combining never creates a cycle. Buckets
  are split at `COMBINE_THRESHOLD_BYTES`.

All passes are linear in the number of instructions (one use map, one walk; the offset check
is per candidate slice and memoized).
"""

from __future__ import annotations

import heapq

from xla_spmd.ir import (
    ArrayShape,
    AttrKind,
    Computation,
    Family,
    Instruction,
    Module,
    ReplicaGroups,
    make_instruction,
    op_named,
    topological_order,
)
from xla_spmd.ir.builder import NameGenerator
from xla_spmd.ir.module import has_side_effect, rewrite
from xla_spmd.passes.collective_groups import (
    Devices,
    PartitionValues,
    flattened_groups,
    group_size,
    has_channel,
    is_shard_offset,
    partitions_to_evaluate,
)
from xla_spmd.passes.pass_manager import (
    Pass,
    shardings_agree,
    transform_module,
)

COMBINE_THRESHOLD_BYTES = 32 * 1024 * 1024
COMBINABLE = ("all-reduce", "all-gather", "reduce-scatter")


# ---------------------------------------------------------------------------------------------
# Slices of collectives


def _sliced_dim(ds: Instruction, source: ArrayShape) -> int | None:
    """The one dimension `ds` slices (the others are taken whole), or None."""
    sizes = ds.attrs.dynamic_slice_sizes
    if len(ds.operands) != source.rank + 1:
        return None  # the vector-of-indices form is left alone
    sliced = [d for d, (size, n) in enumerate(zip(sizes, source.dims)) if size != n]
    return sliced[0] if len(sliced) == 1 else None


class _SliceMatcher:
    """Checks ``dynamic-slice(collective)`` offsets against the collective's groups."""

    def __init__(self, devices: Devices):
        self.devices = devices
        self.values: dict[int, PartitionValues] = {}

    def own_chunk(self, collective: Instruction, ds: Instruction, dim: int,
                  chunk: int) -> bool:
        groups = flattened_groups(collective, self.devices)
        if not groups or len({len(g) for g in groups}) != 1:
            return False
        source = collective.shape
        if chunk * len(groups[0]) != source.dims[dim] or ds.attrs.dynamic_slice_sizes[dim] != chunk:
            return False
        count = partitions_to_evaluate(groups, self.devices)
        if count is None:
            return False
        values = self.values.setdefault(count, PartitionValues(count))
        return is_shard_offset(ds.operands[1 + dim], groups, chunk, source.dims[dim] - chunk,
                               values, count)


def _flattened_attrs(all_reduce: Instruction, devices: Devices) -> dict:
    attrs = all_reduce.attrs
    if has_channel(all_reduce) and attrs.use_global_device_ids:
        groups = attrs.replica_groups
    else:
        groups = ReplicaGroups.listed(flattened_groups(all_reduce, devices))
    return dict(replica_groups=groups, channel_id=attrs.channel_id if has_channel(all_reduce)
                else 1, use_global_device_ids=True, constrain_layout=attrs.constrain_layout,
                to_apply=attrs.to_apply)


def _reduce_scatter_computation(computation: Computation, devices: Devices) -> Computation:
    users = computation.users()
    matcher = _SliceMatcher(devices)
    op = op_named("reduce-scatter")

    def visit(inst, operands):
        if inst.opcode != "dynamic-slice":
            return None
        all_reduce = inst.operands[0]
        if (all_reduce.opcode != "all-reduce" or len(all_reduce.operands) != 1
                or len(users[all_reduce]) != 1 or all_reduce is computation.root):
            return None
        dim = _sliced_dim(inst, all_reduce.shape)
        if dim is None:
            return None
        chunk = inst.attrs.dynamic_slice_sizes[dim]
        if not matcher.own_chunk(all_reduce, inst, dim, chunk):
            return None
        attrs = op.make_attrs(dimensions=(dim,), **_flattened_attrs(all_reduce, devices))
        return make_instruction(inst.name, op, (operands[0].operands[0],), attrs, inst.shape,
                                sharding=inst.sharding)

    return rewrite(computation, visit)


def create_reduce_scatter(module: Module) -> Module:
    """all-reduce + dynamic-slice of the device's own chunk → reduce-scatter."""
    devices = Devices.of(module)
    return transform_module(module, lambda c: _reduce_scatter_computation(c, devices))


def _own_shard_computation(computation: Computation, devices: Devices,
                           respect_shardings: bool) -> Computation:
    matcher = _SliceMatcher(devices)

    def visit(inst, operands):
        if inst.opcode != "dynamic-slice":
            return None
        gather = inst.operands[0]
        if gather.opcode != "all-gather" or len(gather.operands) != 1:
            return None
        (dim,) = gather.attrs.dimensions
        shard = gather.operands[0]
        if tuple(inst.attrs.dynamic_slice_sizes) != tuple(shard.shape.dims):
            return None
        if _sliced_dim(inst, gather.shape) not in (dim, None):
            return None
        if not matcher.own_chunk(gather, inst, dim, shard.shape.dims[dim]):
            return None
        replacement = operands[0].operands[0]
        if respect_shardings and not shardings_agree(inst, replacement):
            return None
        return replacement

    return rewrite(computation, visit)


def remove_own_shard_gather(module: Module, respect_shardings: bool = True) -> Module:
    """dynamic-slice taking a device's own shard out of an all-gather → the shard."""
    devices = Devices.of(module)
    return transform_module(module, lambda c: _own_shard_computation(c, devices,
                                                                     respect_shardings))


# ---------------------------------------------------------------------------------------------
# No-op collectives


def _identity_permute(inst: Instruction, devices: Devices) -> bool:
    count = devices.num_partitions if has_channel(inst) else devices.num_replicas
    pairs = inst.attrs.source_target_pairs
    if count is None or any(s != t for s, t in pairs):
        return False
    return sorted(s for s, _ in pairs) == list(range(count))


def _noop_computation(computation: Computation, devices: Devices,
                      respect_shardings: bool) -> Computation:
    def agree(inst, replacement):
        return not respect_shardings or shardings_agree(inst, replacement)

    def visit(inst, operands):
        opcode = inst.opcode
        if opcode == "collective-permute":
            if _identity_permute(inst, devices) and agree(inst, operands[0]):
                return operands[0]
            return None
        if opcode not in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"):
            return None
        if group_size(inst, devices) != 1:
            return None
        if len(operands) == 1:
            return operands[0] if agree(inst, operands[0]) else None
        return make_instruction(inst.name, op_named("tuple"), operands,
                                sharding=inst.sharding)

    return rewrite(computation, visit)


def remove_noop_collectives(module: Module, respect_shardings: bool = True) -> Module:
    """Drop collectives over one-device groups and identity collective-permutes."""
    devices = Devices.of(module)
    return transform_module(module, lambda c: _noop_computation(c, devices,
                                                                respect_shardings))


# ---------------------------------------------------------------------------------------------
# Combining


def _computation_key(computation: Computation, memo: dict[int, tuple]) -> tuple:
    """A structural key of a (reducer) computation, ignoring names."""
    key = memo.get(id(computation))
    if key is None:
        index = {id(i): k for k, i in enumerate(computation.instructions)}
        rows = []
        for inst in computation.instructions:
            attrs = []
            for spec in inst.op.attrs:
                value = getattr(inst.attrs, spec.name)
                if spec.kind is AttrKind.COMPUTATION and value is not None:
                    value = _computation_key(value, memo)
                elif spec.kind is AttrKind.COMPUTATIONS and value is not None:
                    value = tuple(_computation_key(c, memo) for c in value)
                attrs.append(value)
            rows.append((inst.opcode, str(inst.shape), tuple(index[id(o)] for o in inst.operands),
                         tuple(attrs)))
        key = (tuple(rows), index[id(computation.root)])
        memo[id(computation)] = key
    return key


def _combine_key(inst: Instruction, memo: dict[int, tuple],
                 respect_shardings: bool) -> tuple | None:
    if inst.opcode not in COMBINABLE or len(inst.operands) != 1 or inst.shape.is_tuple:
        return None
    attrs = inst.attrs
    groups = attrs.replica_groups.groups if attrs.replica_groups is not None else None
    reducer = (_computation_key(attrs.to_apply, memo)
               if inst.opcode != "all-gather" else None)
    dimensions = getattr(attrs, "dimensions", None)
    return (inst.opcode, groups, has_channel(inst), bool(attrs.use_global_device_ids),
            bool(attrs.constrain_layout), reducer, dimensions, inst.shape.dtype,
            str(inst.sharding) if respect_shardings and inst.sharding is not None else None)


def _collective_depths(computation: Computation) -> dict[int, int]:
    """The most collectives on any path into each instruction (the instruction excluded)."""
    depth: dict[int, int] = {}
    for inst in computation.instructions:
        best = 0
        for operand in inst.operands:
            d = depth[id(operand)] + (operand.op.family in (Family.COLLECTIVE, Family.ASYNC))
            best = max(best, d)
        depth[id(inst)] = best
    return depth


def _buckets(computation: Computation, kinds, threshold: int,
             respect_shardings: bool) -> list[list[Instruction]]:
    depth = _collective_depths(computation)
    memo: dict[int, tuple] = {}
    by_key: dict[tuple, list[Instruction]] = {}
    for inst in computation.instructions:
        if inst.opcode not in kinds or inst is computation.root:
            continue
        key = _combine_key(inst, memo, respect_shardings)
        if key is not None:
            by_key.setdefault((key, depth[id(inst)]), []).append(inst)
    buckets = []
    for members in by_key.values():
        current: list[Instruction] = []
        size = 0
        for inst in members:
            nbytes = inst.shape.byte_size + inst.operands[0].shape.byte_size
            if current and size + nbytes > threshold:
                buckets.append(current)
                current, size = [], 0
            current.append(inst)
            size += nbytes
        buckets.append(current)
    return [b for b in buckets if len(b) > 1]


def _combine_computation(computation: Computation, kinds, threshold: int,
                         respect_shardings: bool) -> Computation:
    buckets = _buckets(computation, kinds, threshold, respect_shardings)
    if not buckets:
        return computation
    instructions = computation.instructions
    count = len(instructions)
    node_of: dict[int, int] = {id(inst): k for k, inst in enumerate(instructions)}
    for b, bucket in enumerate(buckets):
        for inst in bucket:
            node_of[id(inst)] = count + b
    # Kahn's algorithm on the graph with each bucket contracted to one node.
    successors: dict[int, set[int]] = {}
    indegree: dict[int, int] = {}
    first_position: dict[int, int] = {}
    for position, inst in enumerate(instructions):
        node = node_of[id(inst)]
        first_position.setdefault(node, position)
        indegree.setdefault(node, 0)
        for operand in inst.operands:
            source = node_of[id(operand)]
            if source != node and node not in successors.setdefault(source, set()):
                successors[source].add(node)
                indegree[node] += 1
    ready = [(first_position[n], n) for n, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    names = NameGenerator(i.name for i in instructions)
    mapping: dict[int, Instruction] = {}
    gte = op_named("get-tuple-element")
    while ready:
        _, node = heapq.heappop(ready)
        if node < count:
            inst = instructions[node]
            operands = tuple(mapping[id(o)] for o in inst.operands)
            mapping[id(inst)] = inst if operands == inst.operands else inst.replace(
                operands=operands)
        else:
            bucket = buckets[node - count]
            first = bucket[0]
            operands = tuple(mapping[id(i.operands[0])] for i in bucket)
            combined = make_instruction(names(first.opcode + ".combined"), first.op, operands,
                                        first.attrs, sharding=None)
            for index, inst in enumerate(bucket):
                mapping[id(inst)] = make_instruction(inst.name, gte, (combined,),
                                                     gte.make_attrs(index=index),
                                                     sharding=inst.sharding)
        for successor in successors.get(node, ()):
            indegree[successor] -= 1
            if indegree[successor] == 0:
                heapq.heappush(ready, (first_position[successor], successor))
    root = mapping[id(computation.root)]
    keep = [mapping[id(i)] for i in instructions
            if i.opcode == "parameter" or has_side_effect(i)]
    order = topological_order(root, keep)
    return Computation(computation.name, order, root, computation.extras)


def combine_collectives(module: Module, kinds=COMBINABLE,
                        threshold_bytes: int = COMBINE_THRESHOLD_BYTES,
                        respect_shardings: bool = True) -> Module:
    """Combine independent collectives of one kind, groups and reducer into variadic ones
    (only ones with equal shardings unless `respect_shardings` is off)."""
    kinds = tuple(kinds)
    return transform_module(module, lambda c: _combine_computation(
        c, kinds, threshold_bytes, respect_shardings))


create_reduce_scatter_pass = Pass("create-reduce-scatter", create_reduce_scatter)
remove_own_shard_gather_pass = Pass("remove-own-shard-gather", remove_own_shard_gather)
remove_noop_collectives_pass = Pass("remove-noop-collectives", remove_noop_collectives)
combine_collectives_pass = Pass("combine-collectives", combine_collectives)
