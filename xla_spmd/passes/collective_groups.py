"""What collective passes need to know about devices: group formation and values that are
functions of `partition-id`.

Group formation mirrors op_semantics §15.2 and the reference evaluator: a collective's groups
are lists of flattened device ids ``replica * num_partitions + partition`` in rank order. A
pass only knows the module header (``num_partitions=``, ``replica_count=``); `Devices`
records which counts the header states, and every helper answers None ("unknown") rather than
guess a count the header does not give.

`PartitionValues` is the heart of the slice matchers: it evaluates a small integer
expression for every partition at once (a numpy row per partition), so "offset = rank of the
partition in its group × chunk" is checked by comparing two tables, whatever way the
partitioner spelled the offset. Supported expression ops (scalars or tiny integer arrays):
`partition-id`, `constant`, `reshape`, `bitcast`, `convert`, `broadcast`, `slice`, `copy`,
`dynamic-slice` (a table lookup, starts clamped as in XLA), `add`, `subtract`, `multiply`,
`divide`, `remainder` (truncating, as XLA), `maximum`, `minimum`, `clamp`, `negate`.
Anything else (a parameter, `replica-id`, a data-dependent value) makes it answer None.

Example: with 4 partitions, ``%t = s32[4] constant({0, 2, 4, 6})``,
``%d = s32[1] dynamic-slice(%t, partition-id()), dynamic_slice_sizes={1}`` and
``%o = s32[] reshape(%d)`` give ``PartitionValues(4)(%o) == [0, 2, 4, 6]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xla_spmd.ir import Instruction, Module

MAX_VALUE_ELEMENTS = 64     # expressions over larger arrays are not offsets
MAX_EXPRESSION_DEPTH = 32   # deeper chains are not offsets either


@dataclass(frozen=True, slots=True)
class Devices:
    """Device counts from the module header; None where the header does not state one."""

    num_partitions: int | None
    num_replicas: int | None

    @staticmethod
    def of(module: Module) -> Devices:
        partitions = module.header_value("num_partitions")
        replicas = module.header_value("replica_count")
        return Devices(None if partitions is None else int(partitions),
                       None if replicas is None else int(replicas))

    @property
    def replicas(self) -> int:
        """Replica count, 1 when unstated (SPMD programs run one replica)."""
        return 1 if self.num_replicas is None else self.num_replicas


def has_channel(inst: Instruction) -> bool:
    channel = getattr(inst.attrs, "channel_id", None)
    return channel is not None and channel > 0


_REPLICA_GROUPED = ("all-reduce", "all-gather", "reduce-scatter")


def _listed(inst: Instruction) -> tuple[tuple[int, ...], ...]:
    groups = getattr(inst.attrs, "replica_groups", None)
    return groups.groups if groups is not None else ()


def flattened_groups(inst: Instruction, devices: Devices) -> list[list[int]] | None:
    """The groups of collective `inst` as flattened device ids in rank order, or None when
    they depend on a device count the header does not state."""
    listed = _listed(inst)
    channel = has_channel(inst)
    grouped = inst.opcode in _REPLICA_GROUPED
    partitions, replicas = devices.num_partitions, devices.replicas
    if grouped and channel and inst.attrs.use_global_device_ids:  # flattened ids
        return [list(g) for g in listed] or None
    if partitions is None:
        return None
    if grouped and channel:  # cross_replica_and_partition, XLA's replica-major order
        listed = listed or (tuple(range(replicas)),)
        return [[r * partitions + p for r in g for p in range(partitions)] for g in listed]
    if channel:  # cross_partition
        listed = listed or (tuple(range(partitions)),)
        return [[r * partitions + p for p in g] for r in range(replicas) for g in listed]
    if not listed and devices.num_replicas is None:
        return None
    listed = listed or (tuple(range(replicas)),)  # cross_replica
    return [[r * partitions + p for r in g] for p in range(partitions) for g in listed]


def group_size(inst: Instruction, devices: Devices) -> int | None:
    """The common size of `inst`'s groups, or None when unknown or uneven."""
    listed = _listed(inst)
    across_partitions = (inst.opcode in _REPLICA_GROUPED and has_channel(inst)
                         and not inst.attrs.use_global_device_ids)
    if listed and not across_partitions:  # every mode but one uses the listed groups as is
        sizes = {len(g) for g in listed}
        return sizes.pop() if len(sizes) == 1 else None
    groups = flattened_groups(inst, devices)
    if not groups:
        return None
    sizes = {len(g) for g in groups}
    return sizes.pop() if len(sizes) == 1 else None


def partitions_to_evaluate(device_ids: list[list[int]], devices: Devices) -> int | None:
    """How many partitions to evaluate offsets over: every partition the groups mention."""
    highest = max((d for g in device_ids for d in g), default=-1)
    if devices.num_partitions is not None:
        return devices.num_partitions
    return highest + 1 if devices.replicas == 1 else None


# ---------------------------------------------------------------------------------------------
# Values as functions of partition-id


class PartitionValues:
    """Evaluates integer expressions of `partition-id` for all partitions; memoized."""

    def __init__(self, num_partitions: int):
        self.num_partitions = num_partitions
        self.memo: dict[int, tuple] = {}

    def __call__(self, inst: Instruction, depth: int = 0) -> np.ndarray | None:
        """An int64 array of shape ``(num_partitions, *inst.shape.dims)``, or None."""
        key = id(inst)
        if key in self.memo:
            return self.memo[key][1]
        value = None
        if depth <= MAX_EXPRESSION_DEPTH and _is_small_integer(inst):
            value = self._evaluate(inst, depth)
            if value is not None:
                value = _wrap(value, inst)
        self.memo[key] = (inst, value)  # holding `inst` keeps its id unique
        return value

    def _evaluate(self, inst: Instruction, depth: int) -> np.ndarray | None:
        opcode, count = inst.opcode, self.num_partitions
        dims = inst.shape.dims
        if opcode == "partition-id":
            return np.arange(count, dtype=np.int64)
        if opcode == "constant":
            array = inst.attrs.literal.array.astype(np.int64)
            return np.broadcast_to(array, (count, *array.shape))
        operands = []
        for operand in inst.operands:
            value = self(operand, depth + 1)
            if value is None:
                return None
            operands.append(value)
        rule = _VALUE_RULES.get(opcode)
        return None if rule is None else rule(inst, operands, count, dims)


def _is_small_integer(inst: Instruction) -> bool:
    shape = inst.shape
    return (not shape.is_tuple and (shape.dtype.is_integer or shape.dtype.is_pred)
            and shape.num_elements <= MAX_VALUE_ELEMENTS)


def _wrap(value: np.ndarray, inst: Instruction) -> np.ndarray:
    """Integer results wrap to the instruction's width, as XLA's do."""
    return value.astype(inst.shape.dtype.numpy).astype(np.int64)


def _truncating_divide(inst, operands, count, dims):
    lhs, rhs = operands
    if np.any(rhs == 0):
        return None  # XLA's x/0 is -1; not an offset
    return np.sign(lhs) * np.sign(rhs) * (np.abs(lhs) // np.abs(rhs))


def _remainder(inst, operands, count, dims):
    lhs, rhs = operands
    if np.any(rhs == 0):
        return None
    return np.fmod(lhs, rhs)


def _dynamic_slice(inst, operands, count, dims):
    table, *starts = operands
    if len(starts) != table.ndim - 1 or any(s.ndim != 1 for s in starts):
        return None  # the vector-of-indices form is not an offset lookup
    sizes = inst.attrs.dynamic_slice_sizes
    out = np.empty((count, *dims), dtype=np.int64)
    limits = [n - size for n, size in zip(table.shape[1:], sizes)]
    for p in range(count):
        index = tuple(slice(int(min(max(s[p], 0), limit)), int(min(max(s[p], 0), limit)) + size)
                      for s, limit, size in zip(starts, limits, sizes))
        out[p] = table[p][index]
    return out


def _broadcast(inst, operands, count, dims):
    (x,) = operands
    kept = (0, *(d + 1 for d in inst.attrs.dimensions))
    shape = [1] * (len(dims) + 1)
    for source, target in enumerate(kept):
        shape[target] = x.shape[source]
    order = np.argsort(kept)
    return np.broadcast_to(np.transpose(x, order).reshape(shape), (count, *dims))


def _slice(inst, operands, count, dims):
    (x,) = operands
    return x[(slice(None), *(slice(s.start, s.limit, s.stride) for s in inst.attrs.slice))]


_VALUE_RULES = {
    "reshape": lambda inst, ops, count, dims: ops[0].reshape((count, *dims)),
    "bitcast": lambda inst, ops, count, dims: ops[0].reshape((count, *dims)),
    "copy": lambda inst, ops, count, dims: ops[0],
    "convert": lambda inst, ops, count, dims: ops[0],
    "negate": lambda inst, ops, count, dims: -ops[0],
    "add": lambda inst, ops, count, dims: ops[0] + ops[1],
    "subtract": lambda inst, ops, count, dims: ops[0] - ops[1],
    "multiply": lambda inst, ops, count, dims: ops[0] * ops[1],
    "maximum": lambda inst, ops, count, dims: np.maximum(ops[0], ops[1]),
    "minimum": lambda inst, ops, count, dims: np.minimum(ops[0], ops[1]),
    "clamp": lambda inst, ops, count, dims: np.minimum(np.maximum(ops[1], ops[0]), ops[2]),
    "divide": _truncating_divide,
    "remainder": _remainder,
    "dynamic-slice": _dynamic_slice,
    "broadcast": _broadcast,
    "slice": _slice,
}


def is_shard_offset(offset: Instruction, groups: list[list[int]], chunk: int, limit: int,
                    values: PartitionValues, num_partitions: int) -> bool:
    """Whether `offset`, clamped to ``[0, limit]`` as a dynamic-slice start is, equals
    ``rank × chunk`` on every device, where rank is the device's position in its group.

    Device ``f`` runs partition ``f % num_partitions``; the offset may only depend on the
    partition, so every device of one partition must have the same rank.
    """
    table = values(offset)
    if table is None or table.ndim != 1:
        return False
    clamped = np.clip(table, 0, limit)
    for group in groups:
        for rank, device in enumerate(group):
            partition = device % num_partitions
            if partition >= len(clamped) or clamped[partition] != rank * chunk:
                return False
    return True
