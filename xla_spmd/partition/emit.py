"""Emitting SPMD instructions: collectives with replica groups from mesh axes, offset tables
indexed by partition-id, and the lowering of a resharding plan to instructions.

Replica groups come from ``mesh.device_groups(axes)`` and are written in XLA's iota form
``[groups,size]<=[...]`` where one exists; every collective gets a fresh ``channel_id`` and
``use_global_device_ids=true`` (flattened ids), as XLA's SPMD partitioner emits them.
Device-dependent values come only from ``partition-id``: a table ``s32[N]`` of per-device
values is a constant, indexed by a dynamic-slice at partition-id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from xla_spmd.errors import PartitionError
from xla_spmd.ir import (
    PRED,
    S32,
    ArrayShape,
    ComparisonDirection,
    Computation,
    DType,
    Instruction,
    Literal,
    NameGenerator,
    PadDim,
    ReplicaGroups,
    Shape,
    SliceDim,
    make_instruction,
    op_named,
)
from xla_spmd.ir.attr_types import Attrs
from xla_spmd.ir.reducers import OPCODE_KINDS, scalar_reducer
from xla_spmd.mesh import AxisRef, Mesh
from xla_spmd.partition.reshard import Plan, Step, axes_size, shard_dims
from xla_spmd.partition.tiles import lower_tile_rounds
from xla_spmd.sharding import TensorSharding

_S32_MAX = 2**31 - 1  # shard offsets and table lookups are s32, as in XLA's partitioner


class ModuleState:
    """What all computations of one partitioned module share: names, channels, reducers."""

    def __init__(self, mesh: Mesh, taken_names=(), first_channel: int = 1):
        self.mesh = mesh
        self._names = NameGenerator(taken_names)
        self.next_channel = first_channel
        self.reducers: dict[tuple[str, str], Computation] = {}

    def fresh_name(self, base: str) -> str:
        return self._names(base or "spmd")

    def channel(self) -> int:
        value = self.next_channel
        self.next_channel += 1
        return value

    def reducer(self, dtype: DType, kind: str = "add") -> Computation:
        """The module's scalar reducer applying opcode `kind` (a sum of predicates is their
        ``or``), made once per kind and dtype."""
        key = (kind, dtype.name)
        if key not in self.reducers:
            opcode = "or" if dtype is PRED and kind == "add" else kind
            name = self.fresh_name(f"spmd_{kind}.{dtype.name}")
            self.reducers[key] = scalar_reducer(OPCODE_KINDS[opcode], dtype, name, ("x", "y"))
        return self.reducers[key]


def replica_groups(mesh: Mesh, axes: Sequence[AxisRef]) -> ReplicaGroups:
    """Replica groups over `axes` (major to minor), in iota form when one exists."""
    groups = mesh.device_groups(list(axes))
    form = groups.iota()
    if form is not None:
        perm = tuple(form.transpose_perm)
        transpose = None if perm == tuple(range(len(perm))) else perm
        return ReplicaGroups.iota((groups.num_groups, groups.group_size),
                                  tuple(form.reshape_dims), transpose)
    return ReplicaGroups.listed(groups.groups)


def axes_coordinate(mesh: Mesh, device: int, axes: Sequence[AxisRef]) -> int:
    """A device's mixed-radix index along `axes` (major first)."""
    value = 0
    for axis in axes:
        value = value * mesh.axis_size(axis) + mesh.axis_coord(device, axis)
    return value


class Emitter:
    """Appends instructions of one computation, with module-wide unique names."""

    def __init__(self, state: ModuleState):
        self.state = state
        self.mesh = state.mesh
        self.instructions: list[Instruction] = []
        self._scalars: dict = {}
        self._tables: dict = {}
        self._partition_id: Instruction | None = None

    # -- building blocks -------------------------------------------------------------------
    def add(self, inst: Instruction) -> Instruction:
        self.instructions.append(inst)
        return inst

    def op(self, opcode: str, *operands: Instruction, shape: Shape | None = None,
           name: str | None = None, sharding: TensorSharding | None = None,
           **attrs: Any) -> Instruction:
        op = op_named(opcode)
        inst = make_instruction(self.state.fresh_name(name or opcode), op, operands,
                                op.make_attrs(**attrs), shape, sharding=sharding)
        return self.add(inst)

    def clone(self, original: Instruction, operands: Sequence[Instruction], shape: Shape,
              sharding: TensorSharding | None = None, attrs: Attrs | None = None
              ) -> Instruction:
        """`original`'s op and attributes on new operands, with a (local) result shape."""
        inst = make_instruction(self.state.fresh_name(original.name), original.op, operands,
                                original.attrs if attrs is None else attrs, shape,
                                sharding=sharding,
                                frontend_attributes=original.frontend_attributes,
                                extras=original.extras)
        return self.add(inst)

    def constant(self, value: object, dtype: DType) -> Instruction:
        array = np.asarray(value, dtype=dtype.numpy)
        return self.op("constant", shape=ArrayShape(dtype, array.shape),
                       literal=Literal(np.array(array)))

    def scalar(self, value: object, dtype: DType) -> Instruction:
        key = (repr(value), dtype.name)
        if key not in self._scalars:
            self._scalars[key] = self.constant(value, dtype)
        return self._scalars[key]

    def broadcast_scalar(self, scalar: Instruction, dims: Sequence[int]) -> Instruction:
        if not dims:
            return scalar
        return self.op("broadcast", scalar, shape=ArrayShape(scalar.shape.dtype, tuple(dims)),
                       dimensions=())

    def partition_id(self) -> Instruction:
        if self._partition_id is None:
            self._partition_id = self.op("partition-id")
        return self._partition_id

    def device_value(self, values: Iterable[int]) -> Instruction:
        """An s32[] holding ``values[partition-id]`` (a constant when all are equal)."""
        values = tuple(int(v) for v in values)
        if max(values) > _S32_MAX or min(values) < -_S32_MAX - 1:
            raise PartitionError(f"a shard offset of {max(values, key=abs)} does not fit the "
                                 "s32 indices of the SPMD program (at most 2^31-1 elements "
                                 "before a shard along one dimension)")
        if len(set(values)) == 1:
            return self.scalar(values[0], S32)
        if values not in self._tables:
            table = self.constant(np.array(values, dtype=np.int32), S32)
            index = self.op("convert", self.partition_id(), shape=ArrayShape(S32, ()))
            picked = self.op("dynamic-slice", table, index, shape=ArrayShape(S32, (1,)),
                             dynamic_slice_sizes=(1,))
            self._tables[values] = self.op("reshape", picked, shape=ArrayShape(S32, ()))
        return self._tables[values]

    def axes_value(self, axes: Sequence[AxisRef], scale: int = 1) -> Instruction:
        """``scale * (index of this device along axes)`` as s32[]."""
        return self.device_value([scale * axes_coordinate(self.mesh, d, axes)
                                  for d in range(self.mesh.size)])

    # -- collectives -----------------------------------------------------------------------
    def group_attrs(self, axes: Sequence[AxisRef], global_ids: bool = True) -> dict:
        """Groups of device ids over `axes`; all-to-all takes no `use_global_device_ids` (with
        a channel its ids are partition ids, the same here: one replica)."""
        attrs = dict(replica_groups=replica_groups(self.mesh, axes),
                     channel_id=self.state.channel())
        if global_ids:
            attrs["use_global_device_ids"] = True
        return attrs

    def all_reduce(self, x: Instruction, axes: Sequence[AxisRef],
                   reducer: Computation | None = None,
                   sharding: TensorSharding | None = None) -> Instruction:
        reducer = reducer or self.state.reducer(x.shape.dtype)
        return self.op("all-reduce", x, to_apply=reducer, sharding=sharding,
                       **self.group_attrs(axes))

    def all_gather(self, x: Instruction, dim: int, axes: Sequence[AxisRef],
                   sharding: TensorSharding | None = None) -> Instruction:
        dims = list(x.shape.dims)
        dims[dim] *= axes_size(self.mesh, axes)
        return self.op("all-gather", x, shape=ArrayShape(x.shape.dtype, tuple(dims)),
                       dimensions=(dim,), sharding=sharding, **self.group_attrs(axes))

    def reduce_scatter(self, x: Instruction, dim: int, axes: Sequence[AxisRef],
                       sharding: TensorSharding | None = None) -> Instruction:
        dims = list(x.shape.dims)
        dims[dim] //= axes_size(self.mesh, axes)
        return self.op("reduce-scatter", x, shape=ArrayShape(x.shape.dtype, tuple(dims)),
                       dimensions=(dim,), to_apply=self.state.reducer(x.shape.dtype),
                       sharding=sharding, **self.group_attrs(axes))

    # -- local data movement ---------------------------------------------------------------
    def pad_dim(self, x: Instruction, dim: int, size: int, value: object = 0) -> Instruction:
        have = x.shape.dims[dim]
        if have == size:
            return x
        padding = tuple(PadDim(0, size - have if d == dim else 0) for d in range(x.shape.rank))
        return self.op("pad", x, self.scalar(value, x.shape.dtype), padding=padding)

    def slice_dim(self, x: Instruction, dim: int, size: int) -> Instruction:
        if x.shape.dims[dim] == size:
            return x
        return self.op("slice", x, slice=tuple(
            SliceDim(0, size if d == dim else n) for d, n in enumerate(x.shape.dims)))

    def dynamic_slice(self, x: Instruction, starts: dict[int, Instruction],
                      sizes: Sequence[int]) -> Instruction:
        zero = self.scalar(0, S32)
        indices = [starts.get(d, zero) for d in range(x.shape.rank)]
        return self.op("dynamic-slice", x, *indices,
                       shape=ArrayShape(x.shape.dtype, tuple(sizes)),
                       dynamic_slice_sizes=tuple(sizes))

    def reshape(self, x: Instruction, dims: Sequence[int]) -> Instruction:
        dims = tuple(int(d) for d in dims)
        if x.shape.dims == dims:
            return x
        return self.op("reshape", x, shape=ArrayShape(x.shape.dtype, dims))

    def transpose(self, x: Instruction, perm: Sequence[int]) -> Instruction:
        perm = tuple(perm)
        if perm == tuple(range(len(perm))):
            return x
        return self.op("transpose", x, dimensions=perm)


# ---------------------------------------------------------------------------------------------
# Lowering a plan


def lower_plan(em: Emitter, x: Instruction, source: TensorSharding, plan: Plan,
               global_dims: Sequence[int]) -> Instruction:
    """Apply `plan` to the local value `x` whose layout is `source`."""
    mesh = source.mesh
    cur = [tuple(d.axes) for d in source.dims]
    unreduced = list(source.unreduced)
    steps = list(plan.steps)
    while steps:
        run = _slice_run(steps)
        done = run or steps[:1]
        if run:  # consecutive local slices of distinct dims: one dynamic-slice, no partial
            x, cur = _lower_slices(em, x, run, cur, global_dims, mesh)  # shards between them
        else:
            x, cur, unreduced = _lower_step(em, x, steps[0], cur, unreduced, global_dims, mesh)
        del steps[:len(done)]
        expected = shard_dims(mesh, tuple(cur), global_dims)
        if x.shape.dims != expected:
            step = ", ".join(map(str, done))
            raise PartitionError(f"resharding step {step} gave {x.shape}, expected local "
                                 f"dims {list(expected)}")
    return x


def _slice_run(steps: list[Step]) -> list[Step]:
    """The leading steps that are local slices, each of another dim."""
    run: list[Step] = []
    for step in steps:
        if step.kind != "slice" or any(s.dim == step.dim for s in run):
            break
        run.append(step)
    return run


def _lower_slices(em: Emitter, x: Instruction, run: list[Step], cur, global_dims, mesh):
    """Local slices of several dims as one dynamic-slice (each dim padded first where its
    size does not split evenly)."""
    cur = list(cur)
    starts = {}
    for step in run:
        dim, axes = step.dim, step.axes
        n = axes_size(mesh, axes)
        new = -(-global_dims[dim] // (axes_size(mesh, cur[dim]) * n))
        x = em.pad_dim(x, dim, n * new)
        cur[dim] = cur[dim] + tuple(axes)
        starts[dim] = em.axes_value(axes, new)
    sizes = list(x.shape.dims)
    for step in run:
        sizes[step.dim] = x.shape.dims[step.dim] // axes_size(mesh, step.axes)
    return em.dynamic_slice(x, starts, sizes), cur


def _sharding(mesh, cur, unreduced) -> TensorSharding:
    return TensorSharding(mesh, [list(a) for a in cur], unreduced=list(unreduced))


def _lower_step(em: Emitter, x: Instruction, step: Step, cur, unreduced, global_dims, mesh):
    kind, dim, axes = step.kind, step.dim, step.axes
    cur = list(cur)
    if kind == "all-gather":
        cur[dim] = cur[dim][:len(cur[dim]) - len(axes)]
        x = em.all_gather(x, dim, axes, sharding=_sharding(mesh, cur, unreduced))
        if not cur[dim]:
            x = em.slice_dim(x, dim, global_dims[dim])
        return x, cur, unreduced
    if kind == "split":  # the same shards, named by finer sub-axes
        cur[dim] = tuple(axes)
        return x, cur, unreduced
    if kind == "all-to-all":
        return _lower_all_to_all(em, x, step, cur, unreduced, global_dims, mesh)
    if kind == "reduce-scatter":
        n = axes_size(mesh, axes)
        new = -(-global_dims[dim] // (axes_size(mesh, cur[dim]) * n))
        x = em.pad_dim(x, dim, n * new)
        cur[dim] = cur[dim] + tuple(axes)
        unreduced = [a for a in unreduced if a not in axes]
        x = em.reduce_scatter(x, dim, axes, sharding=_sharding(mesh, cur, unreduced))
        return x, cur, unreduced
    if kind == "all-reduce":
        unreduced = [a for a in unreduced if a not in axes]
        x = em.all_reduce(x, axes, sharding=_sharding(mesh, cur, unreduced))
        return x, cur, unreduced
    if kind == "to-unreduced":
        keep = em.device_value([int(axes_coordinate(mesh, d, axes) == 0)
                                for d in range(mesh.size)])
        one = em.scalar(1, S32)
        flag = em.op("compare", keep, one, direction=ComparisonDirection.EQ)
        mask = em.broadcast_scalar(flag, x.shape.dims)
        zeros = em.broadcast_scalar(em.scalar(0, x.shape.dtype), x.shape.dims)
        unreduced = list(unreduced) + list(axes)
        x = em.op("select", mask, x, zeros, sharding=_sharding(mesh, cur, unreduced))
        return x, cur, unreduced
    if kind == "collective-permute":
        target = step.pairs
        return (em.op("collective-permute", x, source_target_pairs=target,
                      channel_id=em.state.channel()), list(step.target), unreduced)
    if kind == "tile-permutes":
        x = lower_tile_rounds(em, x, mesh, tuple(global_dims), tuple(cur), step.target)
        return x, list(step.target), unreduced
    raise PartitionError(f"unknown resharding step {kind!r}")


def _lower_all_to_all(em: Emitter, x, step, cur, unreduced, global_dims, mesh):
    axes = tuple(step.axes)
    i, j = step.dim, step.dst_dim
    n = axes_size(mesh, axes)
    rank = x.shape.rank
    new_j = -(-global_dims[j] // (axes_size(mesh, cur[j]) * n))
    x = em.pad_dim(x, j, n * new_j)
    dims = list(x.shape.dims)
    split = dims[:j] + [n, new_j] + dims[j + 1:]
    x = em.reshape(x, split)
    x = em.transpose(x, [j] + [k for k in range(rank + 1) if k != j])
    cur[i] = cur[i][:-len(axes)]
    cur[j] = cur[j] + axes
    x = em.op("all-to-all", x, dimensions=(0,), sharding=None,
              **em.group_attrs(axes, global_ids=False))
    x = em.transpose(x, list(range(1, 1 + i)) + [0] + list(range(1 + i, rank + 1)))
    merged = [d for d in dims]
    merged[j] = new_j
    merged[i] = dims[i] * n
    x = em.reshape(x, merged)
    if not cur[i]:
        x = em.slice_dim(x, i, global_dims[i])
    return x, cur, unreduced


def local_dims(sharding: TensorSharding, global_dims: Sequence[int]) -> tuple[int, ...]:
    return shard_dims(sharding.mesh, tuple(d.axes for d in sharding.dims), tuple(global_dims))


__all__ = ["Emitter", "ModuleState", "axes_coordinate", "local_dims", "lower_plan",
           "replica_groups"]
