"""Shared-memory slots (``collectives/shm.py``): made collectively with every page reserved,
or refused on every member together; and, under ``mpirun``, a ``/dev/shm`` without room
never crashes a rank (no SIGBUS) and never changes a bit of an all-reduce."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess

import numpy as np
import pytest

import xla_spmd.collectives.shm as shm
from xla_spmd.collectives.shm import ALIGN, SLOTS, SharedSlots


class _Member:
    """A member of a fake group: all the creation asks of a communicator."""

    def __init__(self, rank: int, size: int):
        self.rank, self.size = rank, size

    def Get_rank(self) -> int:  # noqa: N802 -- mpi4py's name
        return self.rank

    def Get_size(self) -> int:  # noqa: N802 -- mpi4py's name
        return self.size


def _create(slot_bytes: list[int]) -> list[SharedSlots | None]:
    """``SharedSlots.create_steps`` on every member of a fake group, its two exchanges done
    here: ``Bcast`` from member 0, ``Allgather``."""
    parts = len(slot_bytes)
    steps = [SharedSlots.create_steps(_Member(rank, parts), asked)
             for rank, asked in enumerate(slot_bytes)]
    stages = [next(step) for step in steps]
    assert [name for _, name, _ in stages] == ["Bcast"] * parts
    for _, _, (buffer, root) in stages:
        buffer[...] = stages[root][2][0]
    stages = [next(step) for step in steps]
    assert [name for _, name, _ in stages] == ["Allgather"] * parts
    everyone = np.concatenate([sent for _, _, (sent, _) in stages])
    for _, _, (_, received) in stages:
        received[...] = everyone
    made = []
    for step in steps:
        with pytest.raises(StopIteration) as stop:
            next(step)
        made.append(stop.value.value)
    return made


@pytest.fixture
def shm_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(shm, "SHM_DIR", str(tmp_path))
    return tmp_path


def test_every_member_maps_the_same_reserved_pages_and_no_file_is_left(shm_dir, monkeypatch):
    reserved = []
    real = os.posix_fallocate
    monkeypatch.setattr(os, "posix_fallocate",
                        lambda fd, offset, length: (reserved.append((offset, length)),
                                                    real(fd, offset, length))[1])
    parts, slot_bytes = 3, 10_000
    slots = _create([slot_bytes] * parts)
    assert all(isinstance(s, SharedSlots) for s in slots)
    assert reserved == [(0, SharedSlots.segment_bytes(parts, slot_bytes))]  # by member 0
    assert list(shm_dir.iterdir()) == []  # unlinked once everyone mapped it
    first, second = slots[0], slots[2]
    assert first is not None and second is not None
    # Slots are disjoint, aligned, of the promised sizes, and the same memory everywhere.
    spans = []
    for member in range(parts):
        for pair in range(SLOTS):
            for k, (view, size) in enumerate(((first.input(member, pair), slot_bytes),
                                              (first.result(member, pair), first.result_bytes))):
                assert view.nbytes == size and view.ctypes.data % ALIGN == 0
                start = view.ctypes.data
                spans.append((start, start + size))
                view[...] = 10 * member + 2 * pair + k + 1
    spans.sort()
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))
    for member in range(parts):
        for pair in range(SLOTS):
            assert (second.input(member, pair) == 10 * member + 2 * pair + 1).all()
            assert (second.result(member, pair) == 10 * member + 2 * pair + 2).all()
    for made in slots:
        assert made is not None
        made.close()


def test_no_room_for_the_reservation_refuses_on_every_member(shm_dir, monkeypatch):
    def no_room(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "posix_fallocate", no_room)
    assert _create([1 << 16] * 4) == [None] * 4
    assert list(shm_dir.iterdir()) == []


def test_no_directory_or_a_member_asking_for_none_refuses_on_every_member(shm_dir,
                                                                           monkeypatch):
    assert _create([1 << 16, 0, 1 << 16]) == [None] * 3  # one member turned it off
    assert _create([0, 1 << 16]) == [None] * 2
    assert _create([1 << 16, 1 << 12]) == [None] * 2  # another size: not mapped
    assert list(shm_dir.iterdir()) == []
    monkeypatch.setattr(shm, "SHM_DIR", str(shm_dir / "missing"))
    assert _create([1 << 16] * 2) == [None] * 2


@pytest.mark.parametrize("parts", [2, 3, 4, 5, 7, 8])
def test_a_result_slot_holds_the_largest_chunk_of_any_buffer_that_fits(parts):
    # Chunks as MpiCommunicator splits them: near-equal, whole elements, the first larger.
    slot_bytes = (4 << 20) + 12
    result = SharedSlots.result_size(slot_bytes, parts)
    assert result % ALIGN == 0 and result <= slot_bytes // parts + 2 * ALIGN
    for itemsize in (1, 2, 4, 8, 16, 32, 64):
        size = slot_bytes // itemsize
        assert -(-size // parts) * itemsize <= result, (parts, itemsize)


@pytest.mark.mpi
@pytest.mark.slow
def test_no_room_for_the_reservation_falls_back_on_every_rank_under_mpirun(mpirun):
    completed = mpirun("shm_room_program.py", "mock", ranks=4, timeout=120)
    assert completed.returncode == 0, completed.stdout[-5000:]
    assert "ROOM OK" in completed.stdout, completed.stdout[-5000:]
    # Rank 0 makes the world's file and pair (0, 1)'s: those fall back on every member;
    # pair (2, 3) and, with room again, a later communicator use the slots.
    for rank, pair in enumerate(("None", "None", "slots", "slots")):
        assert f"rank {rank}: world None, pair {pair}, later world slots" in completed.stdout


@pytest.mark.mpi
@pytest.mark.slow
def test_a_full_small_tmpfs_never_crashes_a_rank(mpirun, tmp_path):
    """A tmpfs with room for the world's segment (40 MiB on 4 ranks; a sparse 64 MiB file
    passed the free-space check before), filled up by another job after the segment was
    made: the pages written first after that are reserved, so no rank dies of SIGBUS; a
    communicator made after finds no room and falls back. A private mount namespace, so
    nothing is left mounted (needs root or user namespaces)."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1)")
    directory = tmp_path / "shm"
    directory.mkdir()
    prefix = ["unshare", "-m", "--propagation", "private", "sh", "-c",
              'mount -t tmpfs -o size=72m tmpfs "$0" && exec "$@"', str(directory)]
    probe = subprocess.run([*prefix, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a private mount namespace: {probe.stderr}")
    completed = mpirun("shm_room_program.py", str(directory), ranks=4, timeout=120,
                       prefix=prefix)
    assert completed.returncode == 0, completed.stdout[-5000:]
    assert "ROOM OK" in completed.stdout, completed.stdout[-5000:]
    for rank in range(4):
        assert f"rank {rank}: world slots, later world None" in completed.stdout
