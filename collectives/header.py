"""Call headers: what each member of a group says it is calling, compared before any
payload moves.

Under MPI nothing stops two ranks from calling different collectives, with different
reductions, dtypes or shapes, at the same point: MPI matches collectives by order alone, so a
disagreement returns wrong data or crashes inside the MPI library. So every collective first
exchanges a small fixed-size header (``HEADER_WORDS`` int64 words) over its group and every
member compares them; a mismatch raises the same ``CommunicationError`` on every member,
naming both calls.

A header holds the per-group call number, the collective kind, the reduction, the dtype,
the shape, the kind's arguments (axes, root, permutation pairs), a fingerprint of the
program the rank runs, and whether float reductions fold in group order or use MPI's own
(``XLA_SPMD_DETERMINISTIC``): the two make different MPI calls. Names are encoded with a
stable hash (no Python hash randomisation), so headers agree across processes.

>>> import numpy as np
>>> a = encode(3, "all_reduce", "sum", np.zeros((4, 2), np.float32))
>>> b = encode(3, "all_reduce", "prod", np.zeros((4, 2), np.float32))
>>> describe(a)
'all_reduce(sum) of float32[4,2] (call #3)'
>>> rank, sentence = mismatch(np.stack([a, b]), (0, 1))
>>> rank, sentence.split(", but ")[1]
(1, 'rank 1 called all_reduce(prod) of float32[4,2] (call #3)')
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

HEADER_WORDS = 24

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute",
         "broadcast", "barrier")
_OPS = ("", "sum", "prod", "min", "max", "and", "or")
_ARGUMENT_NAMES = {"all_gather": ("axis",), "reduce_scatter": ("axis",),
                   "all_to_all": ("split axis", "concat axis"), "broadcast": ("root",)}
_MAX_DIMS = 8
_NAME_BYTES = 16

# Word offsets.
_SEQUENCE, _KIND, _OP, _DTYPE, _NDIM, _DIMS = 0, 1, 2, 3, 5, 6
_ARGS = _DIMS + _MAX_DIMS  # 4 words: the kind's integer arguments
_SHAPE_HASH, _PAIRS_HASH, _PROGRAM, _OP_HASH, _NATIVE_FLOATS = 18, 19, 20, 21, 22


def stable_hash(values: Sequence[int] | bytes) -> int:
    """FNV-1a over ints or bytes, as a non-negative int64 (the same in every process)."""
    h = 0xCBF29CE484222325
    for v in values:
        h = ((h ^ (int(v) & 0xFFFFFFFFFFFFFFFF)) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h & 0x7FFFFFFFFFFFFFFF


@functools.cache
def _name_words(name: str) -> tuple[int, int]:
    raw = name.encode()[:_NAME_BYTES].ljust(_NAME_BYTES, b"\0")
    first, second = (int(w) for w in np.frombuffer(raw, np.int64))
    return first, second


def _name_of(words: np.ndarray) -> str:
    return np.asarray(words, np.int64).tobytes().rstrip(b"\0").decode(errors="replace")


def encode(sequence: int, kind: str, op: str | None, x: np.ndarray | None,
           args: Sequence[int] = (), pairs: Sequence[tuple[int, int]] = (),
           program: int = 0, deterministic: bool = True) -> np.ndarray:
    """The header of one call: ``op`` a reduction name (or a callable's name) or None;
    ``x`` the input buffer (None for a barrier); ``args`` up to 4 integer arguments;
    ``deterministic`` False where float reductions use MPI's own."""
    header = np.zeros(HEADER_WORDS, np.int64)
    header[_SEQUENCE] = sequence
    header[_KIND] = KINDS.index(kind)
    if op is not None:
        header[_OP] = _OPS.index(op) if op in _OPS else -1
        header[_OP_HASH] = stable_hash(op.encode())
    if x is not None:
        header[_DTYPE:_DTYPE + 2] = _name_words(x.dtype.name)
        header[_NDIM] = x.ndim
        dims = x.shape[:_MAX_DIMS]
        header[_DIMS:_DIMS + len(dims)] = dims
        header[_SHAPE_HASH] = stable_hash(x.shape)
    else:
        header[_NDIM] = -1
    header[_ARGS:_ARGS + 4] = -1
    header[_ARGS:_ARGS + len(args)] = args
    if pairs:
        header[_PAIRS_HASH] = stable_hash([v for pair in pairs for v in pair])
    header[_PROGRAM] = program
    header[_NATIVE_FLOATS] = not deterministic
    return header


def describe(header: np.ndarray) -> str:
    """A header as a call: ``all_gather of bfloat16[2,8], axis 1 (call #4)``."""
    kind = KINDS[int(header[_KIND])] if 0 <= header[_KIND] < len(KINDS) else "?"
    op = int(header[_OP])
    text = kind + (f"({_OPS[op]})" if op > 0 else "(a custom reduction)" if op < 0 else "")
    ndim = int(header[_NDIM])
    if ndim >= 0:
        dims = ",".join(str(int(d)) for d in header[_DIMS:_DIMS + min(ndim, _MAX_DIMS)])
        more = ",..." if ndim > _MAX_DIMS else ""
        text += f" of {_name_of(header[_DTYPE:_DTYPE + 2])}[{dims}{more}]"
    names = _ARGUMENT_NAMES.get(kind, ())
    args = [f"{name} {int(value)}" for name, value in zip(names, header[_ARGS:_ARGS + 4])]
    if args:
        text += ", " + ", ".join(args)
    if header[_PAIRS_HASH]:
        text += f" with pairs #{int(header[_PAIRS_HASH]) & 0xFFFF:04x}"
    if header[_NATIVE_FLOATS]:
        text += " with MPI's own float reductions (XLA_SPMD_DETERMINISTIC=0)"
    text += f" (call #{int(header[_SEQUENCE])})"
    if header[_PROGRAM]:
        text += f" in program {int(header[_PROGRAM]) & 0xFFFFFFFF:08x}"
    return text


def mismatch(headers: np.ndarray, group: Sequence[int]) -> tuple[int, str] | None:
    """None when every member's header (row k is member ``group[k]``'s) equals the first's;
    else the first disagreeing member and a sentence naming both calls."""
    first = headers[0]
    for position in range(1, len(group)):
        if not np.array_equal(headers[position], first):
            rank = group[position]
            return rank, (f"rank {group[0]} called {describe(first)}, but rank {rank} "
                          f"called {describe(headers[position])}")
    return None
