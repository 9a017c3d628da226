"""Resharding between two tilings by collective-permutes of the pieces each device lacks.

When the source and target tiles nest along every dim (one tile size divides the other) and
the dims divide evenly, each target tile is a grid of equal pieces (per dim the smaller tile
size), each inside one source tile. Pieces a device holds are copied locally; the others
are moved in rounds, one collective-permute each, where a device sends at most one piece
and receives at most one, from any device holding it. A device thus receives only the
pieces it lacks: a 2-D-sharded transpose ``[{"y"}, {"x"}] -> [{"x"}, {"y"}]`` on x=2,
y=4 receives two pieces (a device holds none of its tile), where an all-to-all and a
permute of the whole tile move three.

>>> from xla_spmd.mesh import AxisRef, make_mesh
>>> mesh = make_mesh({"x": 2, "y": 4})
>>> y, x = AxisRef("y"), AxisRef("x")
>>> piece, tile, rounds = tile_rounds(mesh, (32, 64), ((y,), (x,)), ((x,), (y,)))
>>> piece, tile, sum(r.moves for r in rounds)
((8, 16), (16, 16), 2)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from xla_spmd.mesh import Mesh
from xla_spmd.sharding import TensorSharding

MAX_ROUNDS = 8  # more collective-permutes than this: not worth their latency


@dataclass(frozen=True)
class TileRound:
    """One step: device s cuts the piece at `sends[s]` of its source tile; with `pairs`,
    one collective-permute moves it from s to t for each (s, t), else (a local step) it
    stays; device d writes what it got at `writes[d]` of its target tile (None: nothing)."""

    pairs: tuple[tuple[int, int], ...]
    sends: tuple[tuple[int, ...], ...]
    writes: tuple[tuple[int, ...] | None, ...]

    @property
    def moves(self) -> bool:
        return bool(self.pairs)


def _tiles(mesh: Mesh, dims_axes) -> TensorSharding:
    return TensorSharding(mesh, [list(a) for a in dims_axes])


def _schedule(transfers, size: int, piece_rank: int, local: bool):
    """Rounds from (receiver, holders, send offset, write offset) transfers: in each round a
    device sends at most one piece and receives at most one (greedy)."""
    rounds, left = [], list(transfers)
    while left:
        sending, receiving, taken, rest = {}, {}, [], []
        for receiver, holders, send, write in left:
            sender = next((h for h in holders if h not in sending), None)
            if receiver in receiving or sender is None:
                rest.append((receiver, holders, send, write))
                continue
            sending[sender], receiving[receiver] = send, write
            taken.append((sender, receiver))
        sends = tuple(sending.get(d, (0,) * piece_rank) for d in range(size))
        writes = tuple(receiving.get(d) for d in range(size))
        rounds.append(TileRound(() if local else tuple(sorted(taken)), sends, writes))
        left = rest
    return rounds


def tile_rounds(mesh: Mesh, global_dims, src_dims, dst_dims):
    """(piece dims, target tile dims, rounds) resharding tiles `src_dims` to `dst_dims`
    (axes per dim, nothing unreduced), or None: uneven dims, tiles that do not nest, or more
    than `MAX_ROUNDS` collective-permutes."""
    src_n = [math.prod(mesh.axis_size(a) for a in axes) for axes in src_dims]
    dst_n = [math.prod(mesh.axis_size(a) for a in axes) for axes in dst_dims]
    if any(g % s or g % t for g, s, t in zip(global_dims, src_n, dst_n)):
        return None
    src_tile = [g // s for g, s in zip(global_dims, src_n)]
    dst_tile = tuple(g // t for g, t in zip(global_dims, dst_n))
    if 0 in src_tile or 0 in dst_tile or any(
            max(s, t) % min(s, t) for s, t in zip(src_tile, dst_tile)):
        return None
    piece = tuple(min(s, t) for s, t in zip(src_tile, dst_tile))
    counts = [t // p for t, p in zip(dst_tile, piece)]
    source, target = _tiles(mesh, src_dims), _tiles(mesh, dst_dims)
    holders: dict[tuple, list[int]] = {}
    for device in mesh.all_device_ids:
        holders.setdefault(source.shard_index(device), []).append(device)
    moved, kept = [], []
    for d in mesh.all_device_ids:
        index = target.shard_index(d)
        for position in itertools.product(*(range(c) for c in counts)):
            write = tuple(p * q for p, q in zip(position, piece))
            start = [i * t + w for i, t, w in zip(index, dst_tile, write)]
            have = holders[tuple(v // n for v, n in zip(start, src_tile))]
            send = tuple(v % n for v, n in zip(start, src_tile))
            if d in have:
                kept.append((d, [d], send, write))
            else:
                moved.append((d, have, send, write))
    rounds = _schedule(moved, mesh.size, len(piece), local=False)
    if len(rounds) > MAX_ROUNDS:
        return None
    return piece, dst_tile, tuple(rounds + _schedule(kept, mesh.size, len(piece), local=True))


def tile_bytes(piece, rounds, itemsize: int) -> float:
    """Bytes one device receives: one piece per collective-permute."""
    return float(math.prod(piece) * itemsize * sum(r.moves for r in rounds))


def lower_tile_rounds(em, x, mesh: Mesh, global_dims, src_dims, dst_dims):
    """Local instruction: `x` (a source tile) resharded to `dst_dims` by `tile_rounds`.
    The target tile is built in a buffer one piece longer along dim 0, where devices
    that get nothing in a round write (cut off at the end)."""
    piece, tile, rounds = tile_rounds(mesh, global_dims, src_dims, dst_dims)
    rank = len(piece)
    dtype = x.shape.dtype
    buffer = em.broadcast_scalar(em.scalar(0, dtype), (tile[0] + piece[0],) + tile[1:])
    spare = (tile[0],) + (0,) * (rank - 1)
    for r in rounds:
        starts = {d: em.device_value([r.sends[s][d] for s in range(mesh.size)])
                  for d in range(rank)}
        part = em.dynamic_slice(x, starts, piece)
        if r.moves:
            part = em.op("collective-permute", part, source_target_pairs=r.pairs,
                         channel_id=em.state.channel())
        writes = [w if w is not None else spare for w in r.writes]
        at = [em.device_value([writes[s][d] for s in range(mesh.size)]) for d in range(rank)]
        buffer = em.op("dynamic-update-slice", buffer, part, *at)
    return em.slice_dim(buffer, 0, tile[0])
