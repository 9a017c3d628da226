"""Halo exchange: windowed ops (convolution, reduce-window, select-and-scatter, slice, pad)
computed locally along a dim sharded in N shards, GSPMD's ``ExchangeHalo`` +
``ReshardAsWindowedInput``.

Invariants. The operand dim of global size n is split in shards of c = ceil(n/N) elements
(padding at the global end); the result dim of size m in shards of mc = ceil(m/N). Device i
computes its mc outputs from a window input of `length` operand elements starting at global
index ``starts[i] = i*mc*stride/lhs_dilation + start0`` with a local window whose padding is
less than one dilation step, the same on every device (so it is a static attribute). This
needs ``mc*stride % lhs_dilation == 0``. Device i gathers that input from a frame
``[i*c - left, (i+1)*c + right)``: its own shard plus slices its neighbours send by
collective-permute (several hops when a halo is wider than a shard), then a dynamic-slice at a
per-device offset (a partition-id table). Frame positions outside ``[0, n)`` (edges and the
uneven tail) are replaced by the op's padding value, so local results are exact.

Example: f32[8] on x=4 (c=2), window 3 stride 1 padded (1, 1): mc=2, start0=-1, length 4;
device 1 starts at 1, receives element 1 from device 0 and element 4 from device 2, and
computes outputs 2 and 3 from [1, 2, 3, 4] with an unpadded window.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xla_spmd.ir import S32, ArrayShape, ComparisonDirection, PadDim, SliceDim, WindowDim
from xla_spmd.partition.reshard import axes_size, plan_reshard, shard_dims

if TYPE_CHECKING:
    from xla_spmd.ir import Instruction, Window
    from xla_spmd.mesh import Mesh
    from xla_spmd.partition.partitioner import Lowering
    from xla_spmd.partition.values import PValue
    from xla_spmd.sharding import TensorSharding


@dataclass(frozen=True)
class HaloPlan:
    """How one sharded windowed dim is computed locally (see the module docstring)."""

    dim: int
    size: int                 # n, global operand size along `dim`
    shard: int                # c, local operand size
    starts: tuple[int, ...]   # per shard index: first global operand index of its window input
    length: int               # operand elements each device's local window reads
    left: int                 # elements received from lower shards
    right: int                # elements received from higher shards
    window: WindowDim | None  # the local window dim (None: no window, e.g. reverse)

    @property
    def halo(self) -> int:
        return self.left + self.right

    @property
    def masked(self) -> bool:
        """Whether some device's window input reaches outside the operand."""
        return any(s < 0 or s + self.length > self.size for s in self.starts)


def plan_from_starts(dim: int, size: int, shards: int, starts: Sequence[int], length: int,
                     window: WindowDim | None = None) -> HaloPlan:
    """The frame for given per-shard window inputs; only in-range positions are received."""
    c = -(-size // shards)
    left = right = 0
    for i, start in enumerate(starts):
        lo, hi = max(start, 0), min(start + length, size)
        if lo < hi:
            left = max(left, i * c - lo)
            right = max(right, hi - (i + 1) * c)
    return HaloPlan(dim, size, c, tuple(starts), length, left, right, window)


def plan_window(dim: int, w: WindowDim, size: int, out_size: int, shards: int
                ) -> HaloPlan | None:
    """The halo plan for window dim `w` over an operand dim of `size` split in `shards`, whose
    result has `out_size` elements; None when no static local window exists."""
    if shards < 2 or size == 0 or out_size == 0 or w.size == 0:
        return None
    mc = -(-out_size // shards)
    ld, stride = w.lhs_dilation, w.stride
    if (mc * stride) % ld:
        return None
    start0 = -(w.padding_low // ld)
    low = w.padding_low + ld * start0  # in [0, ld)
    last = (mc - 1) * stride + (w.size - 1) * w.rhs_dilation - low  # last dilated position
    if last < 0:
        return None
    length = last // ld + 1
    high = last - (length - 1) * ld
    starts = [i * mc * stride // ld + start0 for i in range(shards)]
    local = dataclasses.replace(w, padding_low=low, padding_high=high)
    return plan_from_starts(dim, size, shards, starts, length, local)


def gather_bytes(plan: HaloPlan, shards: int) -> int:
    """Elements (per element of the other dims) an all-gather of the dim moves instead."""
    return (shards - 1) * plan.shard


def index_pairs(mesh: Mesh, sharding: TensorSharding, dim: int, mapping: Callable[[int], int]
                ) -> tuple[tuple[int, int], ...]:
    """(source, target) device pairs: the device at shard index j along `dim` sends to the
    device at ``mapping(j)`` with the same coordinates on every other axis."""
    strides = []
    for axis in sharding.dims[dim].axes:
        position = mesh.axis_index(axis.name)
        full = mesh.axis_sizes[position]
        strides.append((position, full // (axis.pre_size * axis.size(full)),
                        axis.size(full)))

    def key(device):
        coords = list(mesh.device_coords(device))
        for position, stride, size in strides:
            coords[position] -= (coords[position] // stride) % size * stride
        return tuple(coords)
    n = axes_size(mesh, sharding.dims[dim].axes)
    by_key = {(key(d), sharding.shard_index(d)[dim]): d for d in mesh.all_device_ids}
    pairs = []
    for device in mesh.all_device_ids:
        target = mapping(sharding.shard_index(device)[dim])
        if 0 <= target < n:
            pairs.append((device, by_key[(key(device), target)]))
    return tuple(sorted(pairs))


def _cut(em, x, dim, start, limit):
    if (start, limit) == (0, x.shape.dims[dim]):
        return x
    return em.op("slice", x, slice=tuple(
        SliceDim(start, limit) if d == dim else SliceDim(0, n)
        for d, n in enumerate(x.shape.dims)))


def _shard_table(low, sharding, dim, values):
    return low.em.device_value([values[sharding.shard_index(d)[dim]]
                                for d in range(low.mesh.size)])


def one_sided(plan: HaloPlan) -> dict[int, tuple[int, int]] | None:
    """Per receiving shard index: (source shard index, elements), when every shard needs
    operand elements from at most one adjacent shard, every shard sends to at most one, both
    sides are used (so one collective-permute of the widest piece beats one per side) and the
    widest piece fits a shard; else None.

    >>> plan = plan_from_starts(0, 16, 4, [0, 2, 9, 12], 4)  # shard 1 reads 2-5, 2 reads 9-12
    >>> one_sided(plan)
    {1: (0, 2), 2: (3, 1)}
    """
    if not (plan.left and plan.right):
        return None
    c, needs, sources = plan.shard, {}, set()
    for i, start in enumerate(plan.starts):
        lo, hi = max(start, 0), min(start + plan.length, plan.size)
        if lo >= hi:
            continue
        left, right = max(0, i * c - lo), max(0, hi - (i + 1) * c)  # from the shard's edge
        if left and right:
            return None
        if left or right:
            source = i - 1 if left else i + 1
            width = left or right
            if width > c or source in sources:
                return None
            sources.add(source)
            needs[i] = (source, width)
    return needs


def _one_permute(low, x, sharding, plan: HaloPlan, needs):
    """The frame of `exchange` as ``[piece, shard, piece]`` from ONE collective-permute: each
    receiving shard gets its piece (the widest's width) from its one adjacent source."""
    em = low.em
    dim, c = plan.dim, plan.shard
    width = max(w for _, w in needs.values())
    target = {source: i for i, (source, _) in needs.items()}
    # a source sends its last `width` elements rightwards, its first ones leftwards
    offsets = [c - width if target.get(j, -1) == j + 1 else 0 for j in range(len(plan.starts))]
    sizes = list(x.shape.dims)
    sizes[dim] = width
    if len(set(offsets)) == 1:
        piece = _cut(em, x, dim, offsets[0], offsets[0] + width)
    else:
        piece = em.dynamic_slice(x, {dim: _shard_table(low, sharding, dim, offsets)}, sizes)
    moved = em.op("collective-permute", piece, channel_id=em.state.channel(),
                  source_target_pairs=index_pairs(low.mesh, sharding, dim,
                                                  lambda j: target.get(j, -1)))
    return em.op("concatenate", moved, x, moved, dimensions=(dim,)), width


def exchange(low: Lowering, x: Instruction, sharding: TensorSharding, plan: HaloPlan,
             fill: Instruction | None = None) -> Instruction:
    """Local instruction: each device's window input (`plan.length` elements along the dim)
    from its shard `x` of a value sharded `sharding`; positions outside the operand hold the
    scalar `fill` (left as they come when None). Where every device needs elements from one
    side only (`one_sided`: pad, slice), one collective-permute moves the widest piece
    instead of one per side."""
    em = low.em
    dim, c = plan.dim, plan.shard
    needs = one_sided(plan) if fill is not None or not plan.masked else None
    if needs:
        frame, left = _one_permute(low, x, sharding, plan, needs)
        return _window(low, frame, sharding, plan, left, fill)
    parts = []
    for k in range(-plan.left // c, -(-plan.right // c) + 1):
        if k == 0:
            parts.append(x)
            continue
        lo, hi = max(0, -plan.left - k * c), min(c, c + plan.right - k * c)
        if lo >= hi:
            continue
        moved = em.op("collective-permute", _cut(em, x, dim, lo, hi),
                      channel_id=em.state.channel(),
                      source_target_pairs=index_pairs(low.mesh, sharding, dim,
                                                      lambda j, k=k: j - k))
        parts.append(moved)
    frame = parts[0] if len(parts) == 1 else em.op("concatenate", *parts, dimensions=(dim,))
    return _window(low, frame, sharding, plan, plan.left, fill)


def _window(low, frame, sharding, plan: HaloPlan, left: int, fill):
    """Each device's window input cut from its `frame`, which starts `left` elements before
    its shard; positions outside the operand replaced by `fill` (unless None)."""
    em = low.em
    dim, c = plan.dim, plan.shard
    first = [i * c - left for i in range(len(plan.starts))]
    extra_low = max(0, max(f - s for f, s in zip(first, plan.starts)))
    size = frame.shape.dims[dim]
    extra_high = max(0, max(s + plan.length - f - size for f, s in zip(first, plan.starts)))
    if extra_low or extra_high:  # window inputs reaching past the frame read only padding
        frame = em.op("pad", frame, em.scalar(0, frame.shape.dtype), padding=tuple(
            PadDim(extra_low, extra_high) if d == dim else PadDim(0, 0)
            for d in range(frame.shape.rank)))
    offsets = [s - f + extra_low for s, f in zip(plan.starts, first)]
    sizes = list(frame.shape.dims)
    sizes[dim] = plan.length
    if len(set(offsets)) == 1:
        window = _cut(em, frame, dim, offsets[0], offsets[0] + plan.length)
    else:
        window = em.dynamic_slice(frame, {dim: _shard_table(low, sharding, dim, offsets)},
                                  sizes)
    if fill is None or not plan.masked:
        return window
    return mask_outside(low, window, sharding, dim, plan.starts, plan.size, fill)


def mask_outside(low: Lowering, x: Instruction, sharding: TensorSharding, dim: int,
                 starts: Sequence[int], size: int, fill: Instruction) -> Instruction:
    """`x` (local element t along `dim` at global position ``starts[i] + t``) with positions
    outside ``[0, size)`` replaced by the scalar `fill`."""
    em = low.em
    dims = x.shape.dims
    iota = em.op("iota", shape=ArrayShape(S32, dims), iota_dimension=dim)
    position = em.op("add", iota, em.broadcast_scalar(
        _shard_table(low, sharding, dim, starts), dims))
    inside = em.op("and",
                   em.op("compare", position, em.broadcast_scalar(em.scalar(0, S32), dims),
                         direction=ComparisonDirection.GE),
                   em.op("compare", position, em.broadcast_scalar(em.scalar(size, S32), dims),
                         direction=ComparisonDirection.LT))
    return em.op("select", inside, x, em.broadcast_scalar(fill, dims))


def local_window(window: Window, plans: Mapping[int, HaloPlan]) -> Window:
    """`window` with the local dims of `plans` (window dim index -> HaloPlan)."""
    return dataclasses.replace(window, dims=tuple(
        plans[d].window if d in plans else w for d, w in enumerate(window.dims)))


def halo_bytes(low: Lowering, global_shape: ArrayShape, sharding: TensorSharding,
               plan: HaloPlan) -> float:
    """Bytes one device receives for `plan` on a value of `global_shape` sharded `sharding`."""
    local = shard_dims(low.mesh, tuple(d.axes for d in sharding.dims), global_shape.dims)
    others = 1
    for d, n in enumerate(local):
        if d != plan.dim:
            others *= n
    return plan.halo * others * global_shape.dtype.itemsize


def cheaper_than_gather(low: Lowering, values: Sequence[PValue], sharding: TensorSharding,
                        plan: HaloPlan | list[HaloPlan], rounds: int = 1, extra: float = 0.0
                        ) -> bool:
    """Whether exchanging halos of `values` (PValues, resharded to `sharding` first; `plan` a
    HaloPlan or one per value) moves no more bytes than gathering their dim instead; `extra`
    bytes are added to the halo side."""
    plans = plan if isinstance(plan, list) else [plan] * len(values)
    plan = plans[0]
    gathered = sharding.replace(dims=[[] if d == plan.dim else list(s.axes)
                                      for d, s in enumerate(sharding.dims)])
    keep, gather = extra, 0.0
    for value, plan in zip(values, plans):
        shape = value.global_shape
        keep += plan_reshard(value.sharding, sharding, shape.dims, shape.dtype.itemsize).bytes
        keep += rounds * halo_bytes(low, shape, sharding, plan)
        gather += plan_reshard(value.sharding, gathered, shape.dims,
                               shape.dtype.itemsize).bytes
    return keep <= gather
