"""Resharding between two tilings by collective-permutes of the pieces each device lacks.

When the source and target tiles nest along every dim (one tile size divides the other) and
the dims divide evenly, each target tile is a grid of equal pieces (per dim the smaller tile
size), each inside one source tile. Pieces a device holds are copied locally; the others
are moved in rounds, one collective-permute each, where a device sends at most one piece
and receives at most one, from a device holding it: as many rounds as the busiest device has
pieces to send or receive (a bipartite edge colouring). A device thus receives only the
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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xla_spmd.errors import PartitionError
from xla_spmd.mesh import AxisRef, Mesh
from xla_spmd.sharding import TensorSharding

if TYPE_CHECKING:
    from xla_spmd.ir import Instruction
    from xla_spmd.partition.emit import Emitter

MAX_ROUNDS = 8  # more collective-permutes than this: not worth their latency


Dims = tuple[int, ...]
DimsAxes = Sequence[Sequence[AxisRef]]  # axes per dim

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


def _local_rounds(kept, size: int, piece_rank: int):
    """Local copies (receiver, [receiver], send offset, write offset): round i copies each
    device's i-th piece; no collective."""
    mine: dict[int, list] = {}
    for receiver, _, send, write in kept:
        mine.setdefault(receiver, []).append((send, write))
    rounds = []
    for i in range(max((len(v) for v in mine.values()), default=0)):
        sends = tuple(mine[d][i][0] if len(mine.get(d, ())) > i else (0,) * piece_rank
                      for d in range(size))
        writes = tuple(mine[d][i][1] if len(mine.get(d, ())) > i else None
                       for d in range(size))
        rounds.append(TileRound((), sends, writes))
    return rounds


def _colored(transfers, size: int, piece_rank: int):
    """Rounds of collective-permutes for (receiver, holders, send offset, write offset)
    transfers: each sent by its least busy holder, then the (sender, receiver) edges
    coloured with as many colours as the busiest device has transfers (bipartite edge
    colouring, by swapping two colours along an alternating path), one round per colour."""
    load: dict[int, int] = {}
    edges = []
    for receiver, holders, send, write in transfers:
        sender = min(holders, key=lambda h: (load.get(h, 0), h))
        load[sender] = load.get(sender, 0) + 1
        edges.append((("s", sender), ("r", receiver), send, write))
    if not edges:
        return []
    degree: dict[tuple, int] = {}
    for u, v, _, _ in edges:
        degree[u], degree[v] = degree.get(u, 0) + 1, degree.get(v, 0) + 1
    colours = range(max(degree.values()))
    at: dict[tuple, dict[int, int]] = {node: {} for node in degree}
    colour: dict[int, int] = {}
    for k, (u, v, _, _) in enumerate(edges):
        a = next(c for c in colours if c not in at[u])
        b = next(c for c in colours if c not in at[v])
        if a in at[v]:  # swap a and b along the path from v that alternates a, b, a, ...
            path, node, c = [], v, a
            while c in at[node]:
                e = at[node][c]
                path.append(e)
                node = edges[e][0] if node == edges[e][1] else edges[e][1]
                c = b if c == a else a
            for e in path:
                for end in edges[e][:2]:
                    del at[end][colour[e]]
            for e in path:
                colour[e] = b if colour[e] == a else a
                for end in edges[e][:2]:
                    at[end][colour[e]] = e
        colour[k] = a
        at[u][a] = at[v][a] = k
    rounds = []
    for c in colours:
        chosen = [edges[e] for e in sorted(colour) if colour[e] == c]
        sends = {u[1]: send for u, _, send, _ in chosen}
        writes = {v[1]: write for _, v, _, write in chosen}
        rounds.append(TileRound(tuple(sorted((u[1], v[1]) for u, v, _, _ in chosen)),
                                tuple(sends.get(d, (0,) * piece_rank) for d in range(size)),
                                tuple(writes.get(d) for d in range(size))))
    return rounds


def tile_rounds(mesh: Mesh, global_dims: Sequence[int], src_dims: DimsAxes, dst_dims: DimsAxes
                ) -> tuple[Dims, Dims, tuple[TileRound, ...]] | None:
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
    if math.prod(counts) > 2 * MAX_ROUNDS:
        return None
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
    rounds = _colored(moved, mesh.size, len(piece))
    if len(rounds) > MAX_ROUNDS:
        return None
    return piece, dst_tile, tuple(rounds + _local_rounds(kept, mesh.size, len(piece)))


def tile_bytes(piece: Sequence[int], rounds: Iterable[TileRound], itemsize: int) -> float:
    """Bytes one device receives: one piece per collective-permute."""
    return float(math.prod(piece) * itemsize * sum(r.moves for r in rounds))


def concat_rounds(mesh: Mesh, sharding: TensorSharding, dim: int, sizes: Sequence[int],
                  local_dims: Sequence[int]) -> tuple[Dims, tuple[TileRound, ...]] | None:
    """(piece dims, rounds) for a concatenate along `dim` of operands of `sizes` along it,
    all and the result sharded `sharding` (local dims `local_dims` off `dim`), from the
    operands' tiles laid end to end along `dim` on each device; None when a size does not
    divide evenly or it takes more than `MAX_ROUNDS` collective-permutes."""
    n = math.prod(mesh.axis_size(a) for a in sharding.dims[dim].axes)
    if n < 2 or any(size % n for size in sizes):
        return None
    tiles = [size // n for size in sizes]
    tile = sum(tiles)
    step = math.gcd(tile, *tiles)
    if tile // step > 2 * MAX_ROUNDS:
        return None
    bases = list(itertools.accumulate([0] + tiles))
    starts = list(itertools.accumulate([0] + list(sizes)))
    holders: dict[tuple, list[int]] = {}
    for device in mesh.all_device_ids:
        holders.setdefault(sharding.shard_index(device), []).append(device)
    zero = (0,) * len(local_dims)
    moved, kept = [], []
    for d in mesh.all_device_ids:
        index = list(sharding.shard_index(d))
        for p in range(tile // step):
            row = index[dim] * tile + p * step
            k = max(j for j in range(len(sizes)) if starts[j] <= row)
            inside = row - starts[k]
            held = holders[tuple(index[:dim] + [inside // tiles[k]] + index[dim + 1:])]
            send = zero[:dim] + (bases[k] + inside % tiles[k],) + zero[dim + 1:]
            write = zero[:dim] + (p * step,) + zero[dim + 1:]
            (kept if d in held else moved).append((d, [d] if d in held else held, send, write))
    rounds = _colored(moved, mesh.size, len(local_dims))
    if len(rounds) > MAX_ROUNDS:
        return None
    piece = tuple(step if i == dim else n for i, n in enumerate(local_dims))
    return piece, tuple(rounds + _local_rounds(kept, mesh.size, len(local_dims)))


def lower_tile_rounds(em: Emitter, x: Instruction, mesh: Mesh, global_dims: Sequence[int],
                      src_dims: DimsAxes, dst_dims: DimsAxes) -> Instruction:
    """Local instruction: `x` (a source tile) resharded to `dst_dims` by `tile_rounds`."""
    found = tile_rounds(mesh, global_dims, src_dims, dst_dims)
    if found is None:
        raise PartitionError(f"tile-permutes: no tile rounds from tiles {src_dims} to "
                             f"{dst_dims} of dims {global_dims} (the plan found them)")
    piece, tile, rounds = found
    return lower_rounds(em, x, mesh, piece, tile, rounds)


def lower_rounds(em: Emitter, x: Instruction, mesh: Mesh, piece: Sequence[int],
                 tile: Sequence[int], rounds: Sequence[TileRound], dim: int = 0) -> Instruction:
    """Local instruction: the tile of dims `tile` each device assembles by `rounds` from its
    local `x`. It is built in a buffer one piece longer along `dim`, where devices that get
    nothing in a round write (cut off at the end)."""
    rank = len(piece)
    dtype = x.shape.dtype
    dims = tuple(n + piece[dim] if d == dim else n for d, n in enumerate(tile))
    buffer = em.broadcast_scalar(em.scalar(0, dtype), dims)
    spare = tuple(tile[dim] if d == dim else 0 for d in range(rank))
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
    return em.slice_dim(buffer, dim, tile[dim])
