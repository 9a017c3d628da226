"""XLA's iota form of a device array: ``[dims]<=[reshape_dims]T(perm)``.

A leaf module: mesh device groups, HLO tile assignments (ir) and replica groups all read and
canonicalise iota forms here.

The array is ``numpy.arange(N).reshape(reshape_dims).transpose(perm).reshape(dims)``. The
canonical form (what XLA prints) has no size-1 reshape dims and no two reshape dims that stay
adjacent and in order after the transpose (they are merged); an identity transpose collapses
to ``<=[N]`` and prints no ``T(...)``.

>>> IotaForm((4, 2), (2, 4), (1, 0)).to_array().ravel().tolist()
[0, 4, 1, 5, 2, 6, 3, 7]
>>> str(find_iota([0, 4, 1, 5, 2, 6, 3, 7], (4, 2)))
'[4,2]<=[2,4]T(1,0)'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from xla_spmd.errors import ShardingError


@dataclass(frozen=True, slots=True)
class IotaForm:
    """A device array in iota form; construction canonicalizes reshape_dims and perm.

    >>> str(IotaForm((2, 4), (2, 4), (0, 1)))
    '[2,4]<=[8]'
    """

    dims: tuple[int, ...]
    reshape_dims: tuple[int, ...]
    transpose_perm: tuple[int, ...]

    def __post_init__(self) -> None:
        dims = tuple(int(d) for d in self.dims)
        reshape_dims = tuple(int(d) for d in self.reshape_dims)
        perm = tuple(int(p) for p in self.transpose_perm)
        if sorted(perm) != list(range(len(reshape_dims))):
            raise ShardingError(f"iota transpose {list(perm)} is not a permutation of "
                                f"{len(reshape_dims)} dims")
        if any(d < 1 for d in dims + reshape_dims):
            raise ShardingError(f"iota dims must be positive: [{dims}]<=[{reshape_dims}]")
        if math.prod(dims) != math.prod(reshape_dims):
            raise ShardingError(
                f"iota dims {list(dims)} hold {math.prod(dims)} devices but reshape dims "
                f"{list(reshape_dims)} hold {math.prod(reshape_dims)}")
        reshape_dims, perm = canonicalize_iota(reshape_dims, perm)
        object.__setattr__(self, "dims", dims)
        object.__setattr__(self, "reshape_dims", reshape_dims)
        object.__setattr__(self, "transpose_perm", perm)

    @property
    def size(self) -> int:
        return math.prod(self.dims)

    def to_array(self) -> np.ndarray:
        """The device array, shaped ``dims``."""
        return iota_array(self.reshape_dims, self.transpose_perm, self.dims)

    def __str__(self) -> str:
        text = f"[{','.join(map(str, self.dims))}]<=[{','.join(map(str, self.reshape_dims))}]"
        if len(self.reshape_dims) > 1:
            text += f"T({','.join(map(str, self.transpose_perm))})"
        return text


def canonicalize_iota(reshape_dims: Sequence[int], perm: Sequence[int]
                      ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Drop size-1 dims and merge dims that stay adjacent and in order after the transpose.

    >>> canonicalize_iota((2, 4, 4), (2, 0, 1))
    ((8, 4), (1, 0))
    """
    dims_kept = [d for d in range(len(reshape_dims)) if reshape_dims[d] != 1]
    kept = [dims_kept.index(p) for p in perm if p in dims_kept]
    reshape_dims = [reshape_dims[d] for d in dims_kept]
    # Runs of consecutive source dims (p, p+1, ...) in the transposed order merge into one.
    runs: list[list[int]] = []
    for p in kept:
        if runs and runs[-1][-1] + 1 == p:
            runs[-1].append(p)
        else:
            runs.append([p])
    order = sorted(range(len(runs)), key=lambda r: runs[r][0])
    new_dims = tuple(math.prod(reshape_dims[p] for p in runs[r]) for r in order)
    position = {r: i for i, r in enumerate(order)}
    new_perm = tuple(position[r] for r in range(len(runs)))
    if not new_dims:
        return (1,), (0,)
    if new_perm == tuple(range(len(new_dims))):
        return (math.prod(new_dims),), (0,)
    return new_dims, new_perm


def iota_array(reshape_dims: Sequence[int], perm: Sequence[int] | None,
               dims: Sequence[int]) -> np.ndarray:
    """``arange(N).reshape(reshape_dims).transpose(perm).reshape(dims)`` (perm None: none).

    >>> iota_array((2, 2), (1, 0), (4,)).tolist()
    [0, 2, 1, 3]
    """
    flat = np.arange(math.prod(reshape_dims), dtype=np.int64).reshape(tuple(reshape_dims))
    if perm is not None:
        flat = flat.transpose(tuple(perm))
    return flat.reshape(tuple(dims))


def find_iota(values: Sequence[int] | np.ndarray, dims: Sequence[int]) -> IotaForm | None:
    """The iota form of a device array (given flat, in row-major order), or None if none exists.

    Greedy from the minor end: each run of values ``start + i*stride`` becomes one transposed
    dim; runs that continue each other merge, so the result is already canonical.

    >>> str(find_iota(range(8), (2, 1, 4)))
    '[2,1,4]<=[8]'
    >>> find_iota([0, 2, 1, 4, 3, 5], (6,)) is None
    True
    """
    flat = np.asarray(values, dtype=np.int64).ravel()
    n = flat.size
    if n != math.prod(dims) or sorted(flat.tolist()) != list(range(n)):
        return None
    pieces: list[tuple[int, int]] = []  # (size, stride) from the minor end of the index
    view, block = flat, 1
    while block < n:
        column = view[::block] - view[0]
        stride = int(column[1]) if column.size > 1 else 1
        run = 1
        while run < column.size and column[run] == run * stride:
            run += 1
        if stride <= 0 or column.size % run != 0:
            return None
        pieces.append((run, stride))
        block *= run
    by_stride = sorted(pieces, key=lambda piece: piece[1])
    expected = 1
    for size, stride in by_stride:
        if stride != expected:
            return None
        expected *= size
    reshape_order = sorted(range(len(pieces)), key=lambda i: -pieces[i][1])  # major first
    reshape_dims = tuple(pieces[i][0] for i in reshape_order)
    position = {piece: pos for pos, piece in enumerate(reshape_order)}
    perm = tuple(position[i] for i in reversed(range(len(pieces))))
    form = IotaForm(tuple(dims), reshape_dims or (1,), perm or (0,))
    if not np.array_equal(form.to_array().ravel(), flat):
        return None
    return form
