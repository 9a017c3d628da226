"""Reference evaluation rules: collectives and their async -start/-done pairs (op_semantics §15).

Every device calls ``ctx.exchange(inst, value)`` at each collective and gets every device's
value (indexed by flattened id ``replica * num_partitions + partition``); the rule then picks
its group and computes its result. On one device (no exchange) groups must be of size 1.

Group formation (§15.2), for a listed group ``g`` (empty replica_groups = everyone):

* cross_replica (no channel): per partition p, ``[(r, p) for r in g]``;
* cross_partition (channel; all-to-all, permute, broadcast): per replica r, ``[(r, p) for p in g]``;
* cross_replica_and_partition (channel, no use_global_device_ids): ``[(r, p) for r in g for p]``
  (XLA's replica-major order);
* flattened_ids (channel and use_global_device_ids): ids are flattened ids.

A member's rank is its position in its group. Reductions fold left in rank order.

Example: all-gather(dimensions={0}) of ``[d]`` on 4 devices with replica_groups={{3,2},{1,0}},
channel_id=1, use_global_device_ids=true gives ``[3, 2]`` on devices 2 and 3, ``[1, 0]`` on 0, 1.
"""

from __future__ import annotations

import numpy as np

from xla_spmd.backends.reference.evaluator import EVALUATE, Context, zeros_of
from xla_spmd.backends.reference.reduction import _ufunc_apply, binary_reducer, fold
from xla_spmd.errors import CommunicationError, EvaluationError
from xla_spmd.ir import Computation, Instruction, TupleShape
from xla_spmd.ir.dtypes import reduction_dtype

_REPLICA_GROUPED = ("all-reduce", "all-gather", "reduce-scatter")


def _has_channel(attrs) -> bool:
    return attrs.channel_id is not None and attrs.channel_id > 0


def device_groups(inst: Instruction, ctx: Context, base: str) -> list[list[int]]:
    """Every group of flattened device ids of collective `inst` (kind `base`), in rank order."""
    attrs = inst.attrs
    replicas, partitions = ctx.num_replicas, ctx.num_partitions
    listed = attrs.replica_groups.groups if attrs.replica_groups is not None else ()
    channel = _has_channel(attrs)
    if base in _REPLICA_GROUPED and channel and attrs.use_global_device_ids:
        if not listed:
            raise EvaluationError(f"{inst.name}: use_global_device_ids needs explicit groups")
        return [list(g) for g in listed]
    if base in _REPLICA_GROUPED and channel:  # cross_replica_and_partition
        listed = listed or (tuple(range(replicas)),)
        return [[r * partitions + p for r in g for p in range(partitions)] for g in listed]
    if channel:  # cross_partition
        listed = listed or (tuple(range(partitions)),)
        return [[r * partitions + p for p in g] for r in range(replicas) for g in listed]
    listed = listed or (tuple(range(replicas)),)  # cross_replica
    return [[r * partitions + p for r in g] for p in range(partitions) for g in listed]


def check_device_ids(computation: Computation, num_replicas: int, num_partitions: int) -> None:
    """Raise `EvaluationError` if a collective in `computation` (or a computation it calls)
    names a replica, partition or device id outside the run's ``num_replicas x
    num_partitions`` devices."""
    seen: set[int] = set()
    pending = [computation]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        pending.extend(current.called_computations())
        for inst in current.instructions:
            base = inst.op.name.removesuffix("-start")
            if base in COLLECTIVES:
                _check_ids(inst, current, base, num_replicas, num_partitions)


def _check_ids(inst: Instruction, computation: Computation, base: str, num_replicas: int,
               num_partitions: int) -> None:
    attrs = inst.attrs
    channel = _has_channel(attrs)
    if base == "collective-permute":
        ids = [i for pair in attrs.source_target_pairs for i in pair]
        what = "source_target_pairs"
    else:
        groups = attrs.replica_groups.groups if attrs.replica_groups is not None else ()
        ids = [i for group in groups for i in group]
        what = "replica_groups"
    if base in _REPLICA_GROUPED and channel and attrs.use_global_device_ids:
        kind, bound = "flattened device ids", num_replicas * num_partitions
    elif channel and base not in _REPLICA_GROUPED:
        kind, bound = "partition ids", num_partitions
    else:
        kind, bound = "replica ids", num_replicas
    bad = [i for i in ids if not 0 <= i < bound]
    if bad:
        raise EvaluationError(
            f"{inst.name} ({inst.op.name}) in {computation.name}: {what} name id {bad[0]}, "
            f"but the run has {num_replicas} replica(s) x {num_partitions} partition(s) = "
            f"{num_replicas * num_partitions} device(s), so its {kind} are 0..{bound - 1}; "
            "run it on as many devices as its groups name (the module's num_partitions and "
            "replica_count)")


def my_group(inst: Instruction, ctx: Context, base: str) -> list[int] | None:
    for group in device_groups(inst, ctx, base):
        if ctx.device_id in group:
            return group
    return None


def _required_group(inst: Instruction, ctx: Context, base: str) -> list[int]:
    group = my_group(inst, ctx, base)
    if group is None:
        raise EvaluationError(f"{inst.name}: device {ctx.device_id} (replica {ctx.replica_id}, "
                              f"partition {ctx.partition_id}) is in none of the groups "
                              f"{device_groups(inst, ctx, base)}")
    return group


def exchange(inst: Instruction, ctx: Context, value, needed: list[int]) -> dict:
    """Every device's value for this collective, by flattened id (just ours on one device)."""
    if ctx.exchange is None:
        others = sorted(set(needed) - {ctx.device_id})
        if others:
            raise EvaluationError(f"{inst.name} needs values from devices {others}; run "
                                  "the program on all its devices (evaluate_spmd)")
        return {ctx.device_id: value}
    values = ctx.exchange(inst, value)
    return dict(enumerate(values))


def _reduce_values(inst: Instruction, ctx: Context, arrays: list) -> np.ndarray:
    """The left fold of ``arrays`` (every member's value, in rank order) by the reducer. A
    plain reducer folds in `reduction_dtype`, as the communicators do: a bf16 sum in float32,
    rounded once."""
    dtype = arrays[0].dtype
    compute = reduction_dtype(dtype)
    fast = binary_reducer(inst.attrs.to_apply)
    if fast is not None and compute != dtype:
        total = arrays[0].astype(compute)
        for x in arrays[1:]:
            total = _ufunc_apply(fast, total, x.astype(compute))
        return total.astype(dtype)
    acc = arrays[0]
    for x in arrays[1:]:
        (acc,) = fold(ctx, inst.attrs.to_apply, [acc], [x], [acc.dtype])
    return acc


def _operands_of(value) -> list:
    return list(value) if isinstance(value, tuple) else [value]


def _pack(results: list):
    return results[0] if len(results) == 1 else tuple(results)


# Reducers a communicator computes natively with XLA's semantics; others go as callables.
_NATIVE_OPS = {"add": "sum", "multiply": "prod", "and": "and", "or": "or"}


def _communicator_op(inst: Instruction, ctx: Context):
    """The reduction to hand a communicator: a native name, or a binary callable with the
    reducer's exact semantics (applied in group order by the communicator)."""
    computation = inst.attrs.to_apply
    fast = binary_reducer(computation)
    if fast in _NATIVE_OPS:
        return _NATIVE_OPS[fast]
    if fast is not None:
        return lambda a, b: _ufunc_apply(fast, a, b).astype(a.dtype, copy=False)
    return lambda a, b: fold(ctx, computation, [a], [b], [a.dtype])[0]


def all_reduce(inst: Instruction, operands: list, ctx: Context):
    group = _required_group(inst, ctx, "all-reduce")
    if ctx.communicator is not None:
        op = _communicator_op(inst, ctx)
        return _pack([ctx.communicator.all_reduce(x, group, op) for x in operands])
    values = exchange(inst, ctx, tuple(operands), group)
    return _pack([_reduce_values(inst, ctx, [values[d][i] for d in group])
                  for i in range(len(operands))])


def all_gather(inst: Instruction, operands: list, ctx: Context):
    group = _required_group(inst, ctx, "all-gather")
    (dim,) = inst.attrs.dimensions
    if ctx.communicator is not None:
        return _pack([ctx.communicator.all_gather(x, group, dim) for x in operands])
    values = exchange(inst, ctx, tuple(operands), group)
    return _pack([np.concatenate([values[d][i] for d in group], axis=dim)
                  for i in range(len(operands))])


def reduce_scatter(inst: Instruction, operands: list, ctx: Context):
    group = _required_group(inst, ctx, "reduce-scatter")
    (dim,) = inst.attrs.dimensions
    if ctx.communicator is not None:
        op = _communicator_op(inst, ctx)
        return _pack([ctx.communicator.reduce_scatter(x, group, dim, op) for x in operands])
    values = exchange(inst, ctx, tuple(operands), group)
    rank = group.index(ctx.device_id)
    results = []
    for i in range(len(operands)):
        total = _reduce_values(inst, ctx, [values[d][i] for d in group])
        results.append(np.split(total, len(group), axis=dim)[rank])
    return _pack(results)


def all_to_all(inst: Instruction, operands: list, ctx: Context):
    group = _required_group(inst, ctx, "all-to-all")
    rank = group.index(ctx.device_id)
    if not inst.attrs.dimensions and len(operands) != len(group):
        raise EvaluationError(f"{inst.name}: tuple all-to-all has {len(operands)} operands "
                              f"for a group of {len(group)}")
    if ctx.communicator is not None:
        if inst.attrs.dimensions:
            (dim,) = inst.attrs.dimensions
            return _pack([ctx.communicator.all_to_all(x, group, dim, dim) for x in operands])
        # Tuple form: operand j goes to rank j, i.e. an all-to-all of the stacked operands.
        stacked = np.stack(operands)
        return tuple(ctx.communicator.all_to_all(stacked, group, 0, 0))
    values = exchange(inst, ctx, tuple(operands), group)
    if inst.attrs.dimensions:
        (dim,) = inst.attrs.dimensions
        return _pack([np.concatenate([np.split(values[d][i], len(group), axis=dim)[rank]
                                      for d in group], axis=dim)
                      for i in range(len(operands))])
    return tuple(values[d][rank] for d in group)


def collective_permute(inst: Instruction, operands: list, ctx: Context):
    (operand,) = operands
    partitions = ctx.num_partitions
    if _has_channel(inst.attrs):  # ids are partition ids within our replica
        me, to_device = ctx.partition_id, lambda i: ctx.replica_id * partitions + i
    else:  # ids are replica ids within our partition
        me, to_device = ctx.replica_id, lambda i: i * partitions + ctx.partition_id
    if ctx.communicator is not None:
        pairs = [(to_device(s), to_device(t)) for s, t in inst.attrs.source_target_pairs]
        return ctx.communicator.collective_permute(operand, pairs)
    sources = [s for s, t in inst.attrs.source_target_pairs if t == me]
    needed = [to_device(s) for s in sources]
    values = exchange(inst, ctx, operand, needed)
    if not sources:
        return np.zeros_like(operand)
    return values[needed[0]]


def collective_broadcast(inst: Instruction, operands: list, ctx: Context):
    (operand,) = operands
    group = my_group(inst, ctx, "collective-broadcast")
    if ctx.communicator is not None:
        if group is None:
            return np.zeros_like(operand)
        return ctx.communicator.broadcast(operand, group, group[0])
    values = exchange(inst, ctx, operand, group[:1] if group else [])
    if group is None:
        return np.zeros_like(operand)
    return values[group[0]]


COLLECTIVES = {"all-reduce": all_reduce, "all-gather": all_gather,
               "reduce-scatter": reduce_scatter, "all-to-all": all_to_all,
               "collective-permute": collective_permute,
               "collective-broadcast": collective_broadcast}


@EVALUATE.register(*COLLECTIVES)
def collective_rule(inst: Instruction, operands: list, ctx: Context):
    return COLLECTIVES[inst.op.name](inst, operands, ctx)


def _matches(value, shape) -> bool:
    if isinstance(shape, TupleShape):
        return isinstance(value, tuple) and len(value) == len(shape.elements) and all(
            _matches(v, s) for v, s in zip(value, shape.elements))
    return isinstance(value, np.ndarray) and value.shape == shape.dims


@EVALUATE.register("all-reduce-start", "all-gather-start", "collective-permute-start")
def start_rule(inst: Instruction, operands: list, ctx: Context):
    """Run the collective now. XLA's all-gather-start and collective-permute-start results
    are ``(operand, result, context...)``; all-reduce-start's is the result itself."""
    result = COLLECTIVES[inst.op.name.removesuffix("-start")](inst, operands, ctx)
    if _matches(result, inst.shape):
        return result
    if not isinstance(inst.shape, TupleShape) or len(inst.shape.elements) < 2:
        raise CommunicationError(f"{inst.name}: cannot fit the result of "
                                 f"{inst.op.name.removesuffix('-start')} into {inst.shape}")
    source = operands[0] if len(operands) == 1 else tuple(operands)
    return (source, result) + tuple(zeros_of(s) for s in inst.shape.elements[2:])


@EVALUATE.register("all-reduce-done", "all-gather-done", "collective-permute-done")
def done_rule(inst: Instruction, operands: list, ctx: Context):
    (value,) = operands
    return value if _matches(value, inst.shape) else value[1]
