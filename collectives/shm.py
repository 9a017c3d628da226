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

``SharedSlots.create_steps`` is collective over a group's communicator (two small
exchanges, as stages the caller posts): the first member makes a file in ``SHM_DIR``
(``/dev/shm``) and reserves all of its pages (``posix_fallocate``), every member maps it,
and it is unlinked once all have mapped it (nothing is left behind, even if the job is
killed). When any member cannot map it (another host, no ``/dev/shm``, no room there, or
shared memory turned off on that member), every member gets None and the all-reduce keeps
its ``Alltoallv``/``Allgatherv`` path. The pages are reserved at creation because a page of
a sparse file in a full tmpfs cannot be backed when it is first written, and that write
kills the rank with SIGBUS: a lack of room must show at creation, where every member falls
back together. So the memory is committed: ``segment_bytes`` (40 MiB for 4 members with
4 MiB slots), which is why ``MpiCommunicator`` creates a group's segment only when the
group first all-reduces a mid-size float buffer.

Each member owns ``SLOTS`` pairs of slots: an input slot of ``slot_bytes`` (a whole
buffer) and a result slot of ``result_bytes`` (one folded chunk: ``slot_bytes / parts``
rounded up, plus room for one element of up to ``ALIGN`` bytes); every slot starts on an
``ALIGN``-byte boundary. Call ``s`` on the group uses pair ``s % SLOTS``. A member reuses a
pair only once the call that last used it has completed on this member, which implies every
member finished reading it (see ``MpiCommunicator._claim_slot``).

>>> try:
...     next(SharedSlots.create_steps(None, 1 << 20))   # a group of one needs none:
... except StopIteration as done:                        # no exchange, and no slots
...     print(done.value)
None
>>> SharedSlots.result_size(4 << 20, 4), SharedSlots.segment_bytes(4, 4 << 20) >> 20
(1048640, 40)
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
from collections.abc import Generator
from typing import Any

import numpy as np

SLOTS = 2
SHM_DIR = "/dev/shm"
# Every slot starts on a multiple of this (a cache line); a result slot has this much room
# beyond slot_bytes / parts for the rounding of a chunk up to a whole element.
ALIGN = 64
# The path of the segment travels in a fixed-size message (NUL-padded).
_PATH_BYTES = 1024

Stage = tuple[Any, str, tuple]
"""``(communicator, blocking MPI call name, arguments)``, posted by the caller as the
call's nonblocking twin (``collectives.mpi``)."""


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


class SharedSlots:
    """One mapped segment: ``parts`` members x ``SLOTS`` pairs x (input, result) slots."""

    __slots__ = ("_mapping", "_base", "parts", "slot_bytes", "result_bytes", "_stride")

    def __init__(self, mapping: mmap.mmap, parts: int, slot_bytes: int):
        self._mapping = mapping
        self._base: np.ndarray | None = np.frombuffer(mapping, np.uint8)
        self.parts = parts
        self.slot_bytes = slot_bytes
        self.result_bytes = self.result_size(slot_bytes, parts)
        self._stride = _round_up(slot_bytes, ALIGN) + self.result_bytes

    @staticmethod
    def result_size(slot_bytes: int, parts: int) -> int:
        """Bytes of a result slot: the largest chunk of a buffer of up to ``slot_bytes`` split
        over ``parts`` members (near-equal chunks of whole elements of up to ``ALIGN``
        bytes), rounded up to ``ALIGN``."""
        return _round_up(-(-slot_bytes // parts), ALIGN) + ALIGN

    @classmethod
    def segment_bytes(cls, parts: int, slot_bytes: int) -> int:
        """Bytes of the segment of ``parts`` members with input slots of ``slot_bytes``."""
        return parts * SLOTS * (_round_up(slot_bytes, ALIGN) + cls.result_size(slot_bytes,
                                                                               parts))

    @classmethod
    def create_steps(cls, comm: Any, slot_bytes: int
                     ) -> Generator[Stage, None, SharedSlots | None]:
        """Map one segment shared by every member of ``comm`` (collective over ``comm``: a
        ``Bcast`` of its path and an ``Allgather`` of who mapped it, yielded as stages for
        the caller to complete), or None on every member when some member cannot, or asks
        for none (``slot_bytes`` 0), or asks for another size: every member takes part,
        whatever it asks for."""
        if comm is None or comm.Get_size() < 2:
            return None
        parts, me = comm.Get_size(), comm.Get_rank()
        size = cls.segment_bytes(parts, slot_bytes)
        name = np.zeros(_PATH_BYTES, np.uint8)
        path = _reserve(size) if me == 0 and slot_bytes > 0 else None
        try:
            if path is not None:
                encoded = os.fsencode(path)
                if len(encoded) < _PATH_BYTES:
                    name[:len(encoded)] = np.frombuffer(encoded, np.uint8)
            yield comm, "Bcast", (name, 0)
            received = name.tobytes().rstrip(b"\0")
            mapping = _attach(os.fsdecode(received), size) if received and slot_bytes > 0 \
                else None
            mapped = np.array([mapping is not None], np.int32)
            everyone = np.zeros(parts, np.int32)
            yield comm, "Allgather", (mapped, everyone)
        finally:
            if path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        if not everyone.all():
            if mapping is not None:
                mapping.close()
            return None
        assert mapping is not None
        return cls(mapping, parts, slot_bytes)

    def fits(self, size: int, itemsize: int) -> bool:
        """Whether an all-reduce of ``size`` elements of ``itemsize`` bytes fits the slots."""
        return (size * itemsize <= self.slot_bytes
                and -(-size // self.parts) * itemsize <= self.result_bytes)

    def input(self, member: int, pair: int) -> np.ndarray:
        """Member ``member``'s input slot of pair ``pair`` (``slot_bytes`` bytes)."""
        assert self._base is not None, "shared slots used after close()"
        start = (member * SLOTS + pair) * self._stride
        return self._base[start:start + self.slot_bytes]

    def result(self, member: int, pair: int) -> np.ndarray:
        """Member ``member``'s result slot of pair ``pair`` (``result_bytes`` bytes)."""
        assert self._base is not None, "shared slots used after close()"
        start = (member * SLOTS + pair + 1) * self._stride - self.result_bytes
        return self._base[start:start + self.result_bytes]

    def close(self) -> None:
        """Unmap (views of the slots still held elsewhere keep it mapped until dropped)."""
        self._base = None
        with contextlib.suppress(BufferError):
            self._mapping.close()


def _reserve(size: int) -> str | None:
    """A new file of ``size`` bytes in ``SHM_DIR`` with every page reserved, or None where
    there is no room (or no such directory). A tmpfs refuses a reservation it cannot back
    (``ENOSPC``) and frees what it reserved."""
    try:
        stats = os.statvfs(SHM_DIR)
        if stats.f_bavail * stats.f_frsize < size:
            return None
        fd, path = tempfile.mkstemp(prefix="xla_spmd_", dir=SHM_DIR)
    except OSError:
        return None
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None
    finally:
        os.close(fd)
    return path


def _attach(path: str, size: int) -> mmap.mmap | None:
    """``path`` mapped, or None where it cannot be (another host's file, another size)."""
    try:
        with open(path, "r+b") as file:
            if os.fstat(file.fileno()).st_size != size:
                return None
            return mmap.mmap(file.fileno(), size)
    except (OSError, ValueError):
        return None
