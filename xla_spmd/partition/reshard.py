"""The resharding planner: sharding A -> sharding B of one tensor as a list of steps.

A step is a local dynamic-slice (`Slice`: append axes to a dim, no communication), an
`AllGather` (remove minor axes of a dim), an `AllToAll` (move the minor axes of one dim to the
minor end of another, several at once), an `AllReduce` / `ReduceScatter` (resolve unreduced
axes; all-reduce when the scattered dim would pad more than it saves), a `CollectivePermute`
(the same tiles on another device order), `tile-permutes` (one collective-permute per piece
of the new tile a device lacks, tiles.py), a `Split` (name a dim's minor axis as two sub-axes:
the same shards, so an all-to-all can move part of it: a 2-D-sharded transpose is split,
all-to-all, permute, as XLA does it) or `ToUnreduced` (replicated -> partial: keep the value
on one device of each group, zeros elsewhere). Candidate plans (greedy, permute, slice then
permute, split then permute) are priced and the cheapest kept. The plan is pure data:
`emit.lower_step` turns each step into instructions.

Invariants of a plan: applying its steps in order to the source layout gives the target
layout; each step's `bytes` is what one device moves, by the standard formulas for a group of
n devices (all-gather (n-1)/n x result, reduce-scatter (n-1)/n x operand, all-reduce
2(n-1)/n x operand, all-to-all (n-1)/n x operand, collective-permute the bytes sent).

Uneven dims: shards have the ceiling size and the padding sits at the global end. Removing
(gathering) or appending (slicing) a suffix S of a dim whose remaining prefix P has size > 1
is exact only when ``ceil(d/(|P||S|)) * |S| == ceil(d/|P|)`` ("compatible"); otherwise the
whole dim is gathered and sliced again.

Worked example, mesh x=2 y=4, f32[16,8], ``[{"x"}, {}] -> [{}, {"x", "y"}]``: greedily, dim 0
loses "x", which dim 1 wants next -> all-to-all "x" 0->1 (local f32[8,8] -> f32[16,4], 128
bytes), then dim 1 appends "y" -> slice (0 bytes); but a device lacks only the 8 rows of its
one column, so one collective-permute of them (32 bytes) wins.

>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import TensorSharding
>>> mesh = make_mesh({"x": 2, "y": 4})
>>> plan = plan_reshard(TensorSharding(mesh, [["x"], []]), TensorSharding(mesh, [[], ["x", "y"]]),
...                     (16, 8), 4)
>>> [str(s) for s in plan.steps], plan.bytes
(['collective-permute per missing piece (32 B)'], 32.0)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from xla_spmd.mesh import AxisRef, Mesh, overlaps_any
from xla_spmd.partition.tiles import tile_bytes, tile_rounds
from xla_spmd.sharding import TensorSharding

Axes = tuple[AxisRef, ...]
DimsAxes = tuple[Axes, ...]


def axes_size(mesh: Mesh, axes: Sequence[AxisRef]) -> int:
    return math.prod(mesh.axis_size(a) for a in axes)


def shard_dims(mesh: Mesh, dims_axes: DimsAxes, global_dims: Sequence[int]
               ) -> tuple[int, ...]:
    """Local (ceiling) shard dims of a tensor of `global_dims` under `dims_axes`."""
    return tuple(-(-d // axes_size(mesh, axes)) for d, axes in zip(global_dims, dims_axes))


def compatible(size: int, prefix: int, suffix: int) -> bool:
    """Whether a dim of `size` sharded by a prefix of `prefix` devices can gain or lose a
    suffix of `suffix` devices locally (the shards nest exactly, padding included)."""
    return prefix == 1 or -(-size // (prefix * suffix)) * suffix == -(-size // prefix)


def _fmt(axes) -> str:
    return ",".join(str(a) for a in axes)


@dataclass(frozen=True)
class Step:
    """One resharding step; `bytes` is per device."""

    kind: str
    axes: Axes
    dim: int = -1
    dst_dim: int = -1
    bytes: float = 0.0
    pairs: tuple[tuple[int, int], ...] = ()
    target: tuple = ()  # collective-permute: the dims axes after it

    def __str__(self) -> str:
        cost = f" ({self.bytes:g} B)" if self.bytes else ""
        if self.kind == "slice":
            return f"slice dim {self.dim} by {_fmt(self.axes)}"
        if self.kind == "all-gather":
            return f"all-gather dim {self.dim} over {_fmt(self.axes)}{cost}"
        if self.kind == "all-to-all":
            return f"all-to-all {_fmt(self.axes)} {self.dim}->{self.dst_dim}{cost}"
        if self.kind == "reduce-scatter":
            return f"reduce-scatter dim {self.dim} over {_fmt(self.axes)}{cost}"
        if self.kind == "all-reduce":
            return f"all-reduce over {_fmt(self.axes)}{cost}"
        if self.kind == "split":
            return f"split dim {self.dim}'s axes as {_fmt(self.axes)}"
        if self.kind == "to-unreduced":
            return f"to-unreduced over {_fmt(self.axes)}"
        if self.kind == "tile-permutes":
            return f"collective-permute per missing piece{cost}"
        return f"collective-permute{cost}"


@dataclass(frozen=True)
class Plan:
    """Steps from `source` to `target` (dims axes and unreduced axes of each)."""

    steps: tuple[Step, ...]

    @property
    def bytes(self) -> float:
        return float(sum(s.bytes for s in self.steps))

    def __str__(self) -> str:
        return "; ".join(str(s) for s in self.steps) or "no-op"


def layout_of(sharding: TensorSharding) -> tuple[DimsAxes, Axes]:
    return tuple(d.axes for d in sharding.dims), tuple(sharding.unreduced)


def plan_reshard(source: TensorSharding, target: TensorSharding, global_dims: Sequence[int],
                 itemsize: int) -> Plan:
    """The cheapest plan found from `source` to `target` for a tensor of `global_dims`."""
    src_dims, src_unreduced = layout_of(source)
    dst_dims, dst_unreduced = layout_of(target)
    return _plan(source.mesh, tuple(int(d) for d in global_dims), int(itemsize), src_dims,
                 src_unreduced, dst_dims, dst_unreduced)


@functools.lru_cache(maxsize=65536)
def _plan(mesh, global_dims, itemsize, src_dims, src_unreduced, dst_dims, dst_unreduced
          ) -> Plan:
    greedy = _Planner(mesh, global_dims, itemsize, src_dims, src_unreduced, dst_dims,
                      dst_unreduced).run()
    permute = _permute_plan(mesh, global_dims, itemsize, src_dims, src_unreduced, dst_dims,
                            dst_unreduced)
    best = greedy
    if permute is not None and permute.bytes < best.bytes:
        best = permute
    for candidate in (_slice_then_permute, _split_then_permute, _tile_permutes):
        plan = candidate(mesh, global_dims, itemsize, src_dims, src_unreduced, dst_dims,
                         dst_unreduced)
        if plan is not None and plan.bytes < best.bytes:
            best = plan
    return best


def split_minor(mesh: Mesh, axis: AxisRef, k: int) -> tuple[AxisRef, AxisRef] | None:
    """`axis` as (major, minor) sub-axes with a minor part of `k` devices; None if `k` does
    not divide it. Both shard a dim exactly as `axis` alone does."""
    full = mesh.shape[axis.name]
    pre, size = axis.sub_axis or (1, full)
    if size % k or size == k:
        return None
    major = size // k
    return (AxisRef(axis.name, (pre, major)) if (pre, major) != (1, full) else AxisRef(axis.name),
            AxisRef(axis.name, (pre * major, k)))


def _split_then_permute(mesh, global_dims, itemsize, src_dims, src_unreduced, dst_dims,
                        dst_unreduced) -> Plan | None:
    """Tiles of another shape: move a minor factor k of one dim's devices to another dim with
    one all-to-all (splitting the dim's minor axis into sub-axes, which moves nothing), then
    permute the tiles into place (a 2-D-sharded transpose, as XLA does it)."""
    if src_unreduced or dst_unreduced:
        return None
    src = [axes_size(mesh, a) for a in src_dims]
    dst = [axes_size(mesh, a) for a in dst_dims]
    changed = [d for d in range(len(src)) if src[d] != dst[d]]
    if len(changed) != 2:
        return None
    grow, shrink = changed if dst[changed[0]] > src[changed[0]] else changed[::-1]
    k = dst[grow] // src[grow]
    if (dst[grow] % src[grow] or src[shrink] != dst[shrink] * k or not src_dims[shrink]
            or global_dims[grow] % dst[grow] or global_dims[shrink] % src[shrink]):
        return None
    last = src_dims[shrink][-1]
    if axes_size(mesh, (last,)) == k:
        kept, moved = src_dims[shrink][:-1], last
        steps = []
    else:
        parts = split_minor(mesh, last, k)
        if parts is None:
            return None
        kept, moved = src_dims[shrink][:-1] + parts[:1], parts[1]
        steps = [Step("split", kept + (moved,), shrink)]
    middle = list(src_dims)
    middle[shrink], middle[grow] = kept, tuple(src_dims[grow]) + (moved,)
    local = math.prod(shard_dims(mesh, tuple(src_dims), global_dims)) * itemsize
    steps.append(Step("all-to-all", (moved,), shrink, grow, bytes=(k - 1) / k * local))
    if tuple(middle) == tuple(dst_dims):
        return Plan(tuple(steps))
    permute = _permute_plan(mesh, global_dims, itemsize, tuple(middle), (), dst_dims, ())
    if permute is None:
        return None
    return Plan(tuple(steps) + permute.steps)


def _tile_permutes(mesh, global_dims, itemsize, src_dims, src_unreduced, dst_dims,
                   dst_unreduced) -> Plan | None:
    """Tiles that nest: each device receives only the pieces of its new tile it lacks, one
    collective-permute per piece (tiles.py)."""
    if src_unreduced or dst_unreduced or src_dims == dst_dims:
        return None
    found = tile_rounds(mesh, global_dims, src_dims, dst_dims)
    if found is None:
        return None
    piece, _, rounds = found
    return Plan((Step("tile-permutes", (), bytes=tile_bytes(piece, rounds, itemsize),
                      target=tuple(dst_dims)),))


def _slice_then_permute(mesh, global_dims, itemsize, src_dims, src_unreduced, dst_dims,
                        dst_unreduced) -> Plan | None:
    """Append the wanted axes no dim holds yet (free), then permute tiles into place."""
    if src_unreduced or dst_unreduced:
        return None
    used = {a for axes in src_dims for a in axes}
    steps, middle = [], []
    for dim, (cur, dst) in enumerate(zip(src_dims, dst_dims)):
        extra = tuple(a for a in dst if not overlaps_any(a, used) and a not in cur)
        if extra and not compatible(global_dims[dim], axes_size(mesh, cur), axes_size(mesh, extra)):
            return None
        if extra:
            steps.append(Step("slice", extra, dim))
        middle.append(tuple(cur) + extra)
    if not steps:
        return None
    permute = _permute_plan(mesh, global_dims, itemsize, tuple(middle), (), dst_dims, ())
    if permute is None:
        return None
    return Plan(tuple(steps) + permute.steps)


class _Planner:
    def __init__(self, mesh, global_dims, itemsize, src_dims, src_unreduced, dst_dims,
                 dst_unreduced):
        self.mesh, self.global_dims, self.itemsize = mesh, global_dims, itemsize
        self.cur = [tuple(a) for a in src_dims]
        self.unreduced = list(src_unreduced)
        self.dst = [tuple(a) for a in dst_dims]
        self.dst_unreduced = tuple(dst_unreduced)
        self.steps: list[Step] = []

    def size(self, axes) -> int:
        return axes_size(self.mesh, axes)

    def local_bytes(self) -> int:
        return math.prod(shard_dims(self.mesh, tuple(self.cur), self.global_dims)) * \
            self.itemsize

    def wants_next(self, dim: int) -> AxisRef | None:
        """The next axis `dim` must gain, when its current axes are a prefix of its target."""
        cur, dst = self.cur[dim], self.dst[dim]
        if len(cur) < len(dst) and dst[:len(cur)] == cur:
            return dst[len(cur)]
        return None

    def is_prefix(self, dim: int) -> bool:
        return self.dst[dim][:len(self.cur[dim])] == self.cur[dim]

    def used(self) -> set:
        return {a for axes in self.cur for a in axes} | set(self.unreduced)

    def run(self) -> Plan:
        self.resolve_unreduced()
        for _ in range(64):
            if self.cur == self.dst:
                break
            if self.free_slices() or self.move_or_gather():
                continue
            break
        if self.cur != self.dst:  # cannot happen for valid shardings; be safe
            self.replicate_all()
            self.free_slices()
        added = [a for a in self.dst_unreduced if a not in self.unreduced]
        if added:
            self.steps.append(Step("to-unreduced", tuple(added)))
        return Plan(_merge_gathers(self.steps))

    # -- unreduced axes --------------------------------------------------------------------
    def resolve_unreduced(self) -> None:
        drop = [a for a in self.unreduced if a not in self.dst_unreduced]
        if not drop:
            return
        best_dim, best_axes = -1, ()
        for dim in range(len(self.cur)):
            if not self.is_prefix(dim):
                continue
            run = []
            for axis in self.dst[dim][len(self.cur[dim]):]:
                if axis in drop:
                    run.append(axis)
                else:
                    break
            if not run:
                continue
            if not compatible(self.global_dims[dim], self.size(self.cur[dim]), self.size(run)):
                continue
            if self.size(run) > self.size(best_axes):
                best_dim, best_axes = dim, tuple(run)
        if best_axes:
            n = self.size(best_axes)
            scatter = (n - 1) / n * self.local_bytes_padded(best_dim, best_axes)
            if scatter >= 2 * (n - 1) / n * self.local_bytes():  # heavy padding: reduce all
                best_axes = ()
        if best_axes:
            self.steps.append(Step("reduce-scatter", best_axes, best_dim, bytes=scatter))
            self.cur[best_dim] = self.cur[best_dim] + best_axes
            rest = tuple(a for a in drop if a not in best_axes)
        else:
            rest = tuple(drop)
        if rest:
            n = self.size(rest)
            self.steps.append(Step("all-reduce", rest, bytes=2 * (n - 1) / n * self.local_bytes()))
        self.unreduced = [a for a in self.unreduced if a not in drop]

    def local_bytes_padded(self, dim: int, axes) -> int:
        """Operand bytes of a scatter of `dim` by `axes` (dim padded to a multiple)."""
        local = list(shard_dims(self.mesh, tuple(self.cur), self.global_dims))
        n = self.size(axes)
        local[dim] = -(-local[dim] // n) * n
        return math.prod(local) * self.itemsize

    # -- dims ------------------------------------------------------------------------------
    def free_slices(self) -> bool:
        """Append wanted axes that no dim holds now (local dynamic-slice)."""
        progressed = False
        used = self.used()
        for dim in range(len(self.cur)):
            if not self.is_prefix(dim) or self.cur[dim] == self.dst[dim]:
                continue
            extra = []
            for axis in self.dst[dim][len(self.cur[dim]):]:
                if overlaps_any(axis, used):
                    break
                extra.append(axis)
            if not extra:
                continue
            if not compatible(self.global_dims[dim], self.size(self.cur[dim]),
                              self.size(extra)):
                self.gather(dim, self.cur[dim])
                used = self.used()
                extra = []
                for axis in self.dst[dim]:
                    if overlaps_any(axis, used):
                        break
                    extra.append(axis)
            extra = tuple(extra)
            self.steps.append(Step("slice", extra, dim))
            self.cur[dim] = self.cur[dim] + extra
            used |= set(extra)
            progressed = True
        return progressed

    def gather(self, dim: int, axes) -> None:
        axes = tuple(axes)
        n = self.size(axes)
        prefix = self.cur[dim][:len(self.cur[dim]) - len(axes)]
        result = list(shard_dims(self.mesh, tuple(self.cur), self.global_dims))
        result[dim] *= n
        self.steps.append(Step("all-gather", axes, dim,
                               bytes=(n - 1) / n * math.prod(result) * self.itemsize))
        self.cur[dim] = prefix

    def move_or_gather(self) -> bool:
        """Move the longest suffix of a dim's axes that another dim wants next in one
        all-to-all; gather the dim's minor axis when no dim wants it."""
        for dim in range(len(self.cur)):
            if self.is_prefix(dim):
                continue
            if self.move(dim):
                return True
            axis = self.cur[dim][-1]
            prefix = self.cur[dim][:-1]
            if compatible(self.global_dims[dim], self.size(prefix), self.size((axis,))):
                self.gather(dim, (axis,))
            else:
                self.gather(dim, self.cur[dim])
            return True
        return False

    def move(self, dim: int) -> bool:
        size = self.global_dims[dim]
        for start in range(len(self.cur[dim])):
            moved, prefix = self.cur[dim][start:], self.cur[dim][:start]
            n = self.size(moved)
            for other in range(len(self.cur)):
                have = len(self.cur[other])
                if (other == dim or not self.is_prefix(other)
                        or self.dst[other][have:have + len(moved)] != moved):
                    continue
                if not (compatible(size, self.size(prefix), n) and compatible(
                        self.global_dims[other], self.size(self.cur[other]), n)):
                    continue
                self.steps.append(Step("all-to-all", moved, dim, other, bytes=(n - 1) / n *
                                       self.local_bytes_padded(other, moved)))
                self.cur[dim] = prefix
                self.cur[other] = self.cur[other] + moved
                return True
        return False

    def replicate_all(self) -> None:
        for dim in range(len(self.cur)):
            if self.cur[dim]:
                self.gather(dim, self.cur[dim])


def _merge_gathers(steps: list[Step]) -> tuple[Step, ...]:
    """Consecutive all-gathers of one dim (minor axes first) become one all-gather."""
    merged: list[Step] = []
    for step in steps:
        last = merged[-1] if merged else None
        if (last is not None and step.kind == last.kind == "all-gather"
                and step.dim == last.dim):
            merged[-1] = Step("all-gather", step.axes + last.axes, step.dim,
                              bytes=last.bytes + step.bytes)
        else:
            merged.append(step)
    return tuple(merged)


def _permute_plan(mesh, global_dims, itemsize, src_dims, src_unreduced, dst_dims,
                  dst_unreduced) -> Plan | None:
    """Same tile shape on another device order: one collective-permute."""
    if src_dims == dst_dims or tuple(src_unreduced) != tuple(dst_unreduced) or src_unreduced:
        return None
    src_tiles = tuple(axes_size(mesh, a) for a in src_dims)
    if src_tiles != tuple(axes_size(mesh, a) for a in dst_dims):
        return None
    source = TensorSharding(mesh, [list(a) for a in src_dims])
    target = TensorSharding(mesh, [list(a) for a in dst_dims])
    holders: dict[tuple, list[int]] = {}
    for device in mesh.all_device_ids:
        holders.setdefault(source.shard_index(device), []).append(device)
    pairs = []
    needers = {}
    for device in mesh.all_device_ids:
        needers.setdefault(target.shard_index(device), []).append(device)
    for index, wanting in needers.items():
        have = list(holders.get(index, ()))
        if len(have) != len(wanting):
            return None
        stay = [d for d in wanting if d in have]
        for d in stay:
            have.remove(d)
            pairs.append((d, d))
        for d, s in zip([d for d in wanting if d not in stay], have):
            pairs.append((s, d))
    local = math.prod(shard_dims(mesh, tuple(src_dims), global_dims)) * itemsize
    moved = any(s != t for s, t in pairs)
    return Plan((Step("collective-permute", (), bytes=float(local) if moved else 0.0,
                      pairs=tuple(sorted(pairs)), target=tuple(dst_dims)),))
