"""Collectives between GPUs through CuPy's NCCL bindings (``cupy.cuda.nccl``).

One device per MPI rank, as in ``mpi.py``: the MPI communicator gives ranks, sizes and
carries each group's NCCL unique id (rank 0 of the group creates it and broadcasts it with
``Bcast`` as an int64 array). Buffers are CuPy arrays (numpy inputs are copied to the
GPU); results are fresh CuPy arrays (``accepts_device_arrays``: the GPU backend hands its
device buffers over as they are).

Streams: communication runs on a stream of its own. A ``*_start`` orders it after the work
already queued on the caller's (compute) stream with an event, and records an event on the
communication stream when its work is queued; compute queued meanwhile overlaps it. A
handle's ``wait()`` polls that event against the collective timeout (aborting the NCCL
communicator if it expires) and orders the caller's stream after it.

Reductions: NCCL's own sum/prod/min/max for float16/32/64 and 8/32/64-bit integers (bool
is moved as uint8, where or = max and and = min); bitwise and/or, complex and custom
callables gather (``allGather``) and fold in group order on the GPU.
Float reductions fold in group order too, matching ``LocalWorld`` bit for bit, unless
``deterministic=False`` (or ``XLA_SPMD_DETERMINISTIC=0``) lets NCCL order them. CuPy has no
bfloat16 dtype, so bfloat16 data cannot be passed here; keep it as uint16 bits and reduce
with the MPI or local communicator (which fold it in float32).
All-to-all and collective-permute are grouped ``send``/``recv`` calls
(``groupStart``/``groupEnd``), as the binding has no all-to-all.

Importing this module never needs CuPy; constructing ``NcclCommunicator`` without CuPy or
a GPU raises ``CommunicationError``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from xla_spmd.errors import CommunicationError

from .base import (
    NAMED_REDUCERS,
    TIMEOUT_HINT,
    BlockingCollectives,
    CompletedHandle,
    Group,
    ReduceOp,
    canonical_op,
    check_group,
    check_pairs,
    collective_timeout,
    describe,
    normalize_axis,
)


def _cupy() -> Any:
    try:
        import cupy  # pyright: ignore[reportMissingImports]  (the gpu extra)
        from cupy.cuda import nccl  # noqa: F401  # pyright: ignore[reportMissingImports]
    except ImportError as error:
        raise CommunicationError(
            "the NCCL communicator needs CuPy built with NCCL (pip install cupy-cuda12x) and "
            f"a CUDA GPU: {error}") from error
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # noqa: BLE001 -- CUDA raises its own runtime errors
        raise CommunicationError(f"the NCCL communicator needs a CUDA GPU: {error}") from error
    if count < 1:
        raise CommunicationError("the NCCL communicator needs a CUDA GPU; none is visible")
    return cupy


def _nccl_types(nccl: Any) -> dict[np.dtype, int]:
    pairs = [(np.int8, "NCCL_INT8"), (np.uint8, "NCCL_UINT8"), (np.int32, "NCCL_INT32"),
             (np.uint32, "NCCL_UINT32"), (np.int64, "NCCL_INT64"), (np.uint64, "NCCL_UINT64"),
             (np.float16, "NCCL_FLOAT16"), (np.float32, "NCCL_FLOAT32"),
             (np.float64, "NCCL_FLOAT64")]
    return {np.dtype(t): getattr(nccl, name) for t, name in pairs if hasattr(nccl, name)}


def _on_comm_stream(start: Callable) -> Callable:
    """Run a ``*_start`` on the communication stream, ordered after the caller's stream."""

    @functools.wraps(start)
    def wrapped(self: NcclCommunicator, *args: Any, **kwargs: Any) -> Any:
        with self._after_compute():
            handle = start(self, *args, **kwargs)
        if not isinstance(handle, _NcclHandle):  # done at once: its value is read now
            self._cupy.cuda.get_current_stream().wait_event(self._comm_stream.record())
        return handle

    return wrapped


_NCCL_OPS = {"sum": "NCCL_SUM", "prod": "NCCL_PROD", "min": "NCCL_MIN", "max": "NCCL_MAX"}
_BOOL_AS_UINT8 = {"sum": "max", "or": "max", "max": "max", "prod": "min", "and": "min",
                  "min": "min"}


class _NcclHandle:
    __slots__ = ("_owner", "_event", "_finish", "_what", "_nccl_comm", "_done", "_value",
                 "_keep")

    def __init__(self, owner: NcclCommunicator, nccl_comm: Any, finish: Callable[[], Any],
                 what: tuple, keep: tuple):
        self._owner = owner
        self._nccl_comm = nccl_comm
        self._event = owner._cupy.cuda.Event(disable_timing=True)
        self._event.record(owner._comm_stream)
        self._finish = finish
        self._what = what
        self._keep = keep
        self._done = False
        self._value = None

    def wait(self) -> Any:
        if not self._done:
            self._owner._poll(self._event, self._nccl_comm, self._what)
            # The caller's stream reads what the communication stream wrote.
            self._owner._cupy.cuda.get_current_stream().wait_event(self._event)
            with self._owner._comm_stream:
                assert self._finish is not None  # dropped only once done
                self._value = self._finish()
            self._owner._cupy.cuda.get_current_stream().wait_event(
                self._owner._comm_stream.record())
            self._done = True
            self._finish = self._keep = self._nccl_comm = None
        return self._value


class NcclCommunicator(BlockingCollectives):
    """A ``Communicator`` over one GPU per MPI rank, through NCCL.

    ``mpi``: an ``MpiCommunicator`` for ranks and unique-id exchange (default: a new one on
    ``COMM_WORLD``). ``device``: the CUDA device of this rank (default rank modulo the
    visible devices). ``timeout`` and ``deterministic`` as for ``MpiCommunicator``.
    """

    accepts_device_arrays = True

    def __init__(self, mpi: Any = None, device: int | None = None,
                 timeout: float | None = None, deterministic: bool | None = None):
        import xla_spmd.config as config

        self._cupy = _cupy()
        from cupy.cuda import nccl  # pyright: ignore[reportMissingImports]  (gpu extra)

        from .mpi import MpiCommunicator

        self._nccl = nccl
        self._mpi = mpi if mpi is not None else MpiCommunicator(timeout=timeout)
        count = self._cupy.cuda.runtime.getDeviceCount()
        self._device = self._cupy.cuda.Device(self._mpi.rank % count if device is None
                                              else device)
        self._device.use()
        self._comm_stream = self._cupy.cuda.Stream(non_blocking=True)
        self.timeout = timeout
        self.deterministic = (config.deterministic_collectives if deterministic is None
                              else deterministic)
        self._types = _nccl_types(nccl)
        self._comms: dict[Group, Any] = {}
        self._sequence: dict[Group, int] = {}

    @property
    def rank(self) -> int:
        return self._mpi.rank

    @property
    def size(self) -> int:
        return self._mpi.size

    def group_comm(self, group: Sequence[int]) -> Any:
        """The NCCL communicator of ``group`` (ranked in group order), created on first use;
        creation is collective over the group's members, as for ``MpiCommunicator``."""
        group = check_group("group_comm", self.rank, group, self.size)
        comm = self._comms.get(group)
        if comm is None:
            unique_id = np.zeros(128, np.int64)
            if group[0] == self.rank:
                unique_id[:] = self._nccl.get_unique_id()
            if len(group) > 1:
                self._mpi.group_comm(group).Bcast(unique_id, root=0)
            with self._device:
                comm = self._nccl.NcclCommunicator(len(group), tuple(int(v) for v in unique_id),
                                                   group.index(self.rank))
            self._comms[group] = comm
        return comm

    def free(self) -> None:
        """Destroy every NCCL communicator."""
        for comm in self._comms.values():
            comm.destroy()
        self._comms.clear()

    # -- plumbing ---------------------------------------------------------------------------

    def _what(self, kind: str, group: Group) -> tuple[str, Group, int]:
        sequence = self._sequence.get(group, 0)
        self._sequence[group] = sequence + 1
        return kind, group, sequence

    def _poll(self, event: Any, nccl_comm: Any, what: tuple) -> None:
        timeout = collective_timeout(self.timeout)
        deadline = time.monotonic() + timeout
        while not event.done:
            if time.monotonic() > deadline:
                nccl_comm.abort()
                kind, group, sequence = what
                raise CommunicationError(
                    f"{describe(kind, group)} (call #{sequence} on that group) timed out after "
                    f"{timeout:g} s on rank {self.rank}; the NCCL communicator was aborted. "
                    f"Check that every member makes the same calls; if they are only slow, "
                    f"{TIMEOUT_HINT}.")
            time.sleep(0.0001)

    def _stream(self) -> int:
        return self._comm_stream.ptr

    def _after_compute(self) -> Any:
        """Order the communication stream after the caller's queued work, and make it the
        current stream for the ``with`` block (the staging copies run on it too)."""
        self._comm_stream.wait_event(self._cupy.cuda.get_current_stream().record())
        return self._comm_stream

    def _array(self, x: Any) -> Any:
        return self._cupy.asarray(x, order="C")  # keeps 0-d arrays 0-d

    def _raw(self, array: Any) -> tuple[int, int]:
        """Pointer and byte count, for moving any dtype as NCCL_UINT8."""
        return array.data.ptr, array.nbytes

    def _native(self, dtype: np.dtype, op: ReduceOp) -> tuple[Any, int, int] | None:
        """(view dtype, NCCL type, NCCL op) for a native reduction, or None to fold."""
        if not isinstance(op, str):
            return None
        if dtype.kind == "b":
            return np.uint8, self._types[np.dtype(np.uint8)], getattr(
                self._nccl, _NCCL_OPS[_BOOL_AS_UINT8[op]])
        if op not in _NCCL_OPS or dtype not in self._types:
            return None
        if dtype.kind == "f" and self.deterministic:
            return None
        return dtype, self._types[dtype], getattr(self._nccl, _NCCL_OPS[op])

    def _fold(self, stacked: Any, op: ReduceOp) -> Any:
        cupy = self._cupy
        acc = stacked[0].copy()
        reducer = getattr(cupy, NAMED_REDUCERS[op].__name__) if isinstance(op, str) else op
        for item in stacked[1:]:
            acc = reducer(acc, item)
        return acc.astype(stacked.dtype, copy=False)

    def _gather(self, comm: Any, x: Any, parts: int) -> Any:
        out = self._cupy.empty((parts,) + x.shape, x.dtype)
        pointer, nbytes = self._raw(x)
        comm.allGather(pointer, out.data.ptr, nbytes, self._nccl.NCCL_UINT8, self._stream())
        return out

    def _exchange(self, comm: Any, stacked: Any, group: Group) -> Any:
        """Grouped send/recv: slice j goes to member j; slice i of the result came from i."""
        received = self._cupy.empty_like(stacked)
        stream = self._stream()
        chunk = stacked[0].nbytes
        self._nccl.groupStart()
        for peer in range(len(group)):
            comm.send(stacked[peer].data.ptr, chunk, self._nccl.NCCL_UINT8, peer, stream)
            comm.recv(received[peer].data.ptr, chunk, self._nccl.NCCL_UINT8, peer, stream)
        self._nccl.groupEnd()
        return received

    def _handle(self, comm: Any, finish: Callable[[], Any], what: tuple,
                *keep: Any) -> _NcclHandle:
        return _NcclHandle(self, comm, finish, what, keep)

    # -- nonblocking collectives --------------------------------------------------------------

    @_on_comm_stream
    def all_reduce_start(self, x: Any, group: Sequence[int], op: ReduceOp = "sum") -> Any:
        group = check_group("all_reduce", self.rank, group, self.size)
        op, x = canonical_op(op), self._array(x)
        comm, what = self.group_comm(group), self._what("all_reduce", group)
        native = self._native(np.dtype(x.dtype), op)
        if native is not None:
            view, nccl_type, nccl_op = native
            source = x.view(view)
            out = self._cupy.empty_like(source)
            comm.allReduce(source.data.ptr, out.data.ptr, source.size, nccl_type, nccl_op,
                           self._stream())
            return self._handle(comm, lambda: out.view(x.dtype), what, x)
        gathered = self._gather(comm, x, len(group))
        return self._handle(comm, lambda: self._fold(gathered, op), what, x)

    @_on_comm_stream
    def all_gather_start(self, x: Any, group: Sequence[int], axis: int = 0) -> Any:
        group = check_group("all_gather", self.rank, group, self.size)
        x = self._array(x)
        axis = normalize_axis("all_gather", axis, x.ndim)
        comm, what = self.group_comm(group), self._what("all_gather", group)
        gathered = self._gather(comm, x, len(group))
        return self._handle(
            comm, lambda: self._cupy.concatenate(list(gathered), axis=axis), what, x)

    def _stack(self, kind: str, x: Any, parts: int, axis: int) -> Any:
        axis = normalize_axis(kind, axis, x.ndim)
        if x.shape[axis] % parts:
            raise CommunicationError(
                f"{kind}: dimension {axis} of a {x.shape} array has size {x.shape[axis]}, not "
                f"divisible by the group size {parts}")
        return self._cupy.ascontiguousarray(
            self._cupy.stack(self._cupy.split(x, parts, axis=axis)))

    @_on_comm_stream
    def reduce_scatter_start(self, x: Any, group: Sequence[int], axis: int = 0,
                             op: ReduceOp = "sum") -> Any:
        group = check_group("reduce_scatter", self.rank, group, self.size)
        op, x = canonical_op(op), self._array(x)
        stacked = self._stack("reduce_scatter", x, len(group), axis)
        comm, what = self.group_comm(group), self._what("reduce_scatter", group)
        native = self._native(np.dtype(x.dtype), op)
        if native is not None:
            view, nccl_type, nccl_op = native
            source = stacked.view(view)
            out = self._cupy.empty_like(source[0])
            comm.reduceScatter(source.data.ptr, out.data.ptr, out.size, nccl_type, nccl_op,
                               self._stream())
            return self._handle(comm, lambda: out.view(x.dtype), what, stacked)
        received = self._exchange(comm, stacked, group)
        return self._handle(comm, lambda: self._fold(received, op), what, stacked)

    @_on_comm_stream
    def all_to_all_start(self, x: Any, group: Sequence[int], split_axis: int = 0,
                         concat_axis: int = 0) -> Any:
        group = check_group("all_to_all", self.rank, group, self.size)
        x = self._array(x)
        concat_axis = normalize_axis("all_to_all", concat_axis, x.ndim)
        stacked = self._stack("all_to_all", x, len(group), split_axis)
        comm, what = self.group_comm(group), self._what("all_to_all", group)
        received = self._exchange(comm, stacked, group)
        return self._handle(
            comm, lambda: self._cupy.concatenate(list(received), axis=concat_axis), what,
            stacked)

    @_on_comm_stream
    def collective_permute_start(self, x: Any, pairs: Sequence[tuple[int, int]]) -> Any:
        pairs = check_pairs(self.rank, pairs, self.size)
        x = self._array(x)
        out = self._cupy.zeros_like(x)
        if self.rank not in {d for pair in pairs for d in pair}:
            return CompletedHandle(out)
        everyone = tuple(range(self.size))
        comm, what = self.group_comm(everyone), self._what("collective_permute", everyone)
        stream = self._stream()
        self._nccl.groupStart()
        for source, target in pairs:
            if source == target == self.rank:
                out[...] = x
            elif target == self.rank:
                comm.recv(out.data.ptr, out.nbytes, self._nccl.NCCL_UINT8, source, stream)
            elif source == self.rank:
                comm.send(x.data.ptr, x.nbytes, self._nccl.NCCL_UINT8, target, stream)
        self._nccl.groupEnd()
        return self._handle(comm, lambda: out, what, x)

    @_on_comm_stream
    def broadcast_start(self, x: Any, group: Sequence[int], root: int) -> Any:
        group = check_group("broadcast", self.rank, group, self.size)
        if root not in group:
            raise CommunicationError(f"broadcast: root {root} is not in replica group {group}")
        x = self._array(x)
        comm, what = self.group_comm(group), self._what("broadcast", group)
        out = self._cupy.empty_like(x)
        comm.broadcast(x.data.ptr, out.data.ptr, x.nbytes, self._nccl.NCCL_UINT8,
                       group.index(root), self._stream())
        return self._handle(comm, lambda: out, what, x)

    @_on_comm_stream
    def barrier_start(self, group: Sequence[int]) -> Any:
        group = check_group("barrier", self.rank, group, self.size)
        comm, what = self.group_comm(group), self._what("barrier", group)
        token = self._cupy.zeros(1, np.int32)
        comm.allReduce(token.data.ptr, token.data.ptr, 1, self._types[np.dtype(np.int32)],
                       self._nccl.NCCL_SUM, self._stream())
        return self._handle(comm, lambda: None, what, token)
