"""The oracle for programs with manual parts (GSPMD's ``{manual}`` and partially manual
shardings, ``SPMDFullToShardShape`` / ``SPMDShardToFullShape`` regions).

A manual value is per device (fully manual) or per manual group (partially manual: each group
of devices that differ only in the manual axes holds its own value, sharded over the free
axes), so one device alone cannot run such a program. The oracle runs the unpartitioned
program on every device, in lockstep on the reference evaluator, with Shardy's
``manual_computation`` semantics:

* every value outside manual regions is global: each device computes all of it (the same
  values, as on one device);
* ``SPMDFullToShardShape`` gives each device its shard of the operand, cut by the operand's
  sharding (restricted to the result's manual axes where it is partially manual);
* ``SPMDShardToFullShape`` assembles the global value from every device's piece, placed by
  the result's sharding (devices holding the same element must agree);
* a value that is manual over axes M is computed whole by each device, as its manual group's
  value (a manual parameter differs between groups: `group_arguments`); collectives written
  in the program combine those values across the devices they name, and ``partition-id`` is
  the device's id.

Device d's expected result is then its shard (by the result's sharding) of what it computed:
the global value, or its manual group's. Nothing of the partitioner is used.

>>> from xla_spmd.ir import parse_hlo
>>> has_manual_parts(parse_hlo("HloModule m\\nENTRY e {\\n"
...                            "  ROOT i = u32[] partition-id(), sharding={manual}\\n}"))
True
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
from shards import assemble, shard_array

from xla_spmd.backends.reference import evaluate_spmd
from xla_spmd.backends.reference.control import CUSTOM_CALLS
from xla_spmd.errors import EvaluationError
from xla_spmd.ir.custom_calls import FULL_TO_SHARD, SHARD_TO_FULL
from xla_spmd.ir.hlo_sharding import HloSharding, ShardingKind, SubgroupType
from xla_spmd.sharding import TensorSharding, hlo_to_axes
from xla_spmd.sharding.manual import value_manual_axes


def has_manual_parts(module) -> bool:
    """Whether `module` (as parsed, GSPMD shardings not yet imported) has a manual value or a
    manual region boundary."""
    for computation in module.computations:
        for inst in computation.instructions:
            if inst.opcode == "custom-call" and inst.attrs.custom_call_target in (
                    FULL_TO_SHARD, SHARD_TO_FULL):
                return True
            if isinstance(inst.sharding, HloSharding) and _manual(inst.sharding):
                return True
    return False


def _manual(hlo: HloSharding) -> bool:
    if hlo.is_tuple:
        return any(_manual(e) for e in hlo.elements)
    return hlo.kind is ShardingKind.MANUAL or SubgroupType.MANUAL in hlo.all_subgroup_types


def _restricted(sharding, rank: int, axes) -> TensorSharding | None:
    """`sharding` with only `axes` on its dims (all of them when `axes` is empty)."""
    if not isinstance(sharding, TensorSharding):
        return None
    if not axes:
        return sharding
    dims = [[a for a in d.axes if a.name in axes] for d in sharding.dims]
    return TensorSharding(sharding.mesh, dims, mesh_name=sharding.mesh_name)


def _full_to_shard(inst, operands, ctx):
    (value,) = operands
    sharding = _restricted(inst.operands[0].sharding, np.ndim(value), value_manual_axes(inst))
    piece = value if sharding is None else shard_array(value, sharding, ctx.device_id)
    if np.shape(piece) != inst.shape.dims:
        raise EvaluationError(f"{inst.name}: the device's shard {np.shape(piece)} of its "
                              f"operand is not the manual shape {inst.shape}")
    return piece


def _shard_to_full(inst, operands, ctx):
    (piece,) = operands
    pieces = ctx.exchange(inst, piece)
    # a partially manual operand's pieces differ only along its manual axes
    axes = value_manual_axes(inst.operands[0])
    sharding = _restricted(inst.sharding, len(inst.shape.dims), axes)
    if sharding is None:
        raise EvaluationError(f"{inst.name}: SPMDShardToFullShape without a sharding")
    return assemble(pieces, sharding, inst.shape.dims, np.asarray(piece).dtype)


@contextmanager
def manual_boundaries():
    """While active, the reference evaluator gives SPMDFullToShardShape and
    SPMDShardToFullShape their meaning on N devices (see the module docstring)."""
    saved = {target: CUSTOM_CALLS[target] for target in (FULL_TO_SHARD, SHARD_TO_FULL)}
    CUSTOM_CALLS[FULL_TO_SHARD] = _full_to_shard
    CUSTOM_CALLS[SHARD_TO_FULL] = _shard_to_full
    try:
        yield
    finally:
        CUSTOM_CALLS.update(saved)


def group_arguments(parsed, args, param_shardings, num_devices: int) -> list[list]:
    """Per device, the whole value of each entry parameter its manual group holds: `args`
    (global values) where a parameter is not manual; where it is, each manual group gets its
    own value, the global one plus the group's index (booleans: flipped on odd groups), so
    that a partitioned program mixing manual groups' data cannot pass. A fully manual leaf's
    groups are the devices; a partially manual one's, the coordinates along its manual axes.
    `parsed` is the module as parsed (its GSPMD shardings), `param_shardings` each
    parameter's leaves' shardings in the imported module."""
    per_device: list[list] = [[] for _ in range(num_devices)]
    for param, arg, shardings in zip(parsed.entry.parameters, args, param_shardings):
        hlo = param.sharding if isinstance(param.sharding, HloSharding) else None
        leaves = _flatten(arg)
        elements = (hlo.elements if hlo is not None and hlo.is_tuple else (hlo,) * len(leaves))
        groups = [_groups(e, np.ndim(leaf), s, num_devices)
                  for e, leaf, s in zip(elements, leaves, shardings)]
        for device in range(num_devices):
            values = tuple(_shifted(leaf, group[device]) for leaf, group in zip(leaves, groups))
            per_device[device].append(values if isinstance(arg, tuple) else values[0])
    return per_device


def _groups(hlo, rank: int, sharding, num_devices: int) -> list[int]:
    """Each device's manual group index for a leaf of GSPMD sharding `hlo` (0: not manual)."""
    if hlo is None or not _manual(hlo):
        return [0] * num_devices
    if hlo.kind is ShardingKind.MANUAL:
        return list(range(num_devices))
    mesh = sharding.mesh
    axes = hlo_to_axes(hlo, rank, mesh, any_order=True).manual_axes
    groups = []
    for device in range(num_devices):
        index = 0
        for axis in axes:
            index = index * mesh.axis_size(axis) + mesh.axis_coord(device, axis)
        groups.append(index)
    return groups


def _shifted(value, group: int):
    value = np.asarray(value)
    if group == 0:
        return value
    if value.dtype == np.bool_:
        return value ^ bool(group % 2)
    return (value + np.asarray(group).astype(value.dtype)).astype(value.dtype)


def expected_per_device(module, per_device_args, result_shardings) -> list[list]:
    """Per device, its expected local result leaves: the unpartitioned `module` (shardings
    imported) run on every device (`per_device_args`: each device's whole arguments, see
    `group_arguments`) as the module docstring says, each result cut to the device's shard
    by `result_shardings` (one per result leaf, zero-padded)."""
    num_devices = len(per_device_args)
    with manual_boundaries():
        results = evaluate_spmd(module, [list(a) for a in per_device_args], num_devices)
    expected = []
    for device, result in enumerate(results):
        leaves = _flatten(result)
        expected.append([shard_array(leaf, sharding, device)
                         for leaf, sharding in zip(leaves, result_shardings)])
    return expected


def _flatten(value) -> list:
    if isinstance(value, tuple):
        return [leaf for item in value for leaf in _flatten(item)]
    return [value]
