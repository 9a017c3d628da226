"""Shared-memory slots for the ordered all-reduce of ranks on one host.

Under MPI, an ordered (bit-identical) all-reduce of a mid-size buffer spends most of its
time in round trips, not in moving bytes: the call header, an ``Alltoallv`` of the chunks
and an ``Allgatherv`` of the folded chunks, each a rendezvous per peer. When every member
of a group maps the same memory, the chunks need not travel at all: each member copies its
buffer into its own *input slot*, folds its chunk reading every member's input slot in
group order into its own *result slot*, and, after a barrier, copies every member's folded
chunk out of their result slots. The call header is the first synchronisation (a member
copies its input before it sends its header, and reads the others' only after the header
check passed), the barrier the second: two small exchanges instead of three round trips,
and the same fold, so the same bits.

``SharedSlots.create`` is collective over a group's communicator: the first member makes a
file in ``/dev/shm`` (when it has room), every member maps it, and it is unlinked at once
once all have mapped it (nothing is left behind, even if the job is killed). When any member
cannot map it (another host, no ``/dev/shm``), every member gets None and the all-reduce
keeps its ``Alltoallv``/``Allgatherv`` path.

Each member owns ``SLOTS`` pairs of slots (input, result) of ``slot_bytes`` each; call ``s``
on the group uses pair ``s % SLOTS``. A member reuses a pair only once the call that last
used it has completed on this member, which implies every member finished reading it (see
``MpiCommunicator._claim_slot``).

Pages are only backed once written: a group that never all-reduces mid-size floats costs no
memory beyond its mapping.

>>> SharedSlots.create(None, 1 << 20) is None          # a group of one needs none
True
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
from typing import Any

import numpy as np

SLOTS = 2
SHM_DIR = "/dev/shm"


class SharedSlots:
    """One mapped segment: ``parts`` members x ``SLOTS`` pairs x (input, result) slots."""

    __slots__ = ("_mapping", "_base", "parts", "slot_bytes")

    def __init__(self, mapping: mmap.mmap, parts: int, slot_bytes: int):
        self._mapping = mapping
        self._base: np.ndarray | None = np.frombuffer(mapping, np.uint8)
        self.parts = parts
        self.slot_bytes = slot_bytes

    @classmethod
    def create(cls, comm: Any, slot_bytes: int) -> SharedSlots | None:
        """Map one segment shared by every member of ``comm`` (collective over ``comm``), or
        None on every member when some member cannot, or asks for none (``slot_bytes`` 0),
        or asks for another size: every member takes part, whatever it asks for."""
        if comm is None or comm.Get_size() < 2:
            return None
        parts, me = comm.Get_size(), comm.Get_rank()
        size = parts * SLOTS * 2 * slot_bytes
        path = None
        if me == 0 and slot_bytes > 0:
            with contextlib.suppress(OSError):
                stats = os.statvfs(SHM_DIR)
                if stats.f_bavail * stats.f_frsize >= size:
                    fd, path = tempfile.mkstemp(prefix="xla_spmd_", dir=SHM_DIR)
                    try:
                        os.ftruncate(fd, size)
                    finally:
                        os.close(fd)
        path = comm.bcast(path, root=0)
        mapping = None
        if path is not None and slot_bytes > 0:
            with contextlib.suppress(OSError, ValueError):
                with open(path, "r+b") as file:
                    if os.fstat(file.fileno()).st_size == size:
                        mapping = mmap.mmap(file.fileno(), size)
        everyone = comm.allreduce(mapping is not None, op=_land())
        if me == 0 and path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)
        if not everyone:
            if mapping is not None:
                mapping.close()
            return None
        assert mapping is not None
        return cls(mapping, parts, slot_bytes)

    def input(self, member: int, pair: int) -> np.ndarray:
        """Member ``member``'s input slot of pair ``pair`` (bytes)."""
        return self._slot(member, pair, 0)

    def result(self, member: int, pair: int) -> np.ndarray:
        """Member ``member``'s result slot of pair ``pair`` (bytes)."""
        return self._slot(member, pair, 1)

    def _slot(self, member: int, pair: int, which: int) -> np.ndarray:
        assert self._base is not None, "shared slots used after close()"
        start = ((member * SLOTS + pair) * 2 + which) * self.slot_bytes
        return self._base[start:start + self.slot_bytes]

    def close(self) -> None:
        """Unmap (views of the slots still held elsewhere keep it mapped until dropped)."""
        self._base = None
        with contextlib.suppress(BufferError):
            self._mapping.close()


def _land() -> Any:
    from mpi4py import MPI

    return MPI.LAND
