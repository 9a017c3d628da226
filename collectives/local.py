"""N in-process devices, one thread each, exchanging numpy buffers through shared memory.

A ``LocalWorld`` owns the shared state; ``world.communicator(d)`` is device ``d``'s view.
Each collective is a *rendezvous*: a member deposits its input and the last member to
arrive computes every member's result (so a reduction is one left fold in group order,
bit-identical for everyone), then wakes the others.

Invariants:

* Rendezvous are matched by ``(sorted group, k)``: the k-th call a device makes on a group
  meets the k-th call of every other member. The first member fixes the collective kind,
  group order and arguments; a member that disagrees fails all of them with a
  ``CommunicationError`` naming both calls.
* Inputs are read only while every member is still inside the collective (the result is
  computed before anyone is woken), so a member may reuse its input buffer as soon as
  its call (or ``wait()``) returns. Results are fresh arrays owned by the caller.
* A device that fails (``world.abort`` -- ``world.run`` calls it) wakes every device
  blocked in a rendezvous with ``CommunicationError("... device 3 failed: ...")``; later
  collectives fail at once, and ``stopped`` is set for long computations to watch. A
  rendezvous fails at once if a member it waits for has returned from ``run`` without
  calling it, and after the timeout (``collective_timeout``) naming the devices that did
  not arrive.
* ``run`` never hangs: it returns or raises once every device has, or gives up on devices
  that do not stop (see ``LocalWorld.run``); device threads are daemons.

>>> import numpy as np
>>> world = LocalWorld(4)
>>> world.run(lambda comm: comm.all_gather(np.array([comm.rank]), (0, 1, 2, 3)))[2]
array([0, 1, 2, 3])
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from xla_spmd.errors import CommunicationError

from .base import (
    TIMEOUT_HINT,
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
    timed_out,
)

STOP_GRACE = 2.0
"""Seconds that devices get to stop after one failed, before ``LocalWorld.run`` reports."""
_POLL_SECONDS = 0.1

# compute(inputs in group order) -> per-member results in group order.
Compute = Callable[[list[Any]], list[Any]]


class _Rendezvous:
    __slots__ = ("kind", "group", "signature", "inputs", "arrived", "results", "error",
                 "sequence", "generation")

    def __init__(self, kind: str, group: Group, signature: tuple, sequence: int,
                 generation: int):
        self.generation = generation
        self.kind = kind
        self.group = group
        self.signature = signature
        self.sequence = sequence
        self.inputs: dict[int, Any] = {}
        self.arrived = 0
        self.results: list[Any] | None = None
        self.error: str | None = None


class LocalWorld:
    """Shared state of ``num_devices`` in-process devices.

    ``timeout`` (seconds) bounds every wait in a collective; default: the
    ``collective_timeout`` option (``$XLA_SPMD_COLLECTIVE_TIMEOUT``, 300 s).

    >>> import numpy as np
    >>> world = LocalWorld(2)
    >>> world.run(lambda comm: comm.broadcast(np.array([comm.rank + 5]), (0, 1), root=1))
    [array([6]), array([6])]
    """

    def __init__(self, num_devices: int, timeout: float | None = None):
        if num_devices < 1:
            raise CommunicationError(f"LocalWorld needs at least 1 device, got {num_devices}")
        self.num_devices = int(num_devices)
        self.timeout = timeout
        self._condition = threading.Condition()
        self._generation = 0
        self.reset()

    def reset(self) -> None:
        """Forget every pending collective, sequence number and failure. Devices still
        running from before (abandoned by ``run``) fail at their next collective."""
        with self._condition:
            self._generation += 1
            self._pending: dict[tuple[Group, int], _Rendezvous] = {}
            self._sequence: dict[tuple[int, Group], int] = {}
            self._failure: str | None = None
            self._failure_time: float | None = None
            self._returned: set[int] = set()   # devices whose `run` function returned
            self._waiting: set[int] = set()    # devices blocked in a collective
            self.stopped = threading.Event()
            self._condition.notify_all()

    def communicator(self, device_id: int) -> LocalCommunicator:
        """Device ``device_id``'s communicator."""
        if not 0 <= device_id < self.num_devices:
            raise CommunicationError(
                f"device {device_id} is outside this world of {self.num_devices} devices")
        return LocalCommunicator(self, device_id, self._generation, self.stopped)

    def abort(self, device_id: int | None, error: BaseException | str) -> None:
        """Record that ``device_id`` failed (None: the job was stopped from outside), set
        ``stopped`` and wake every device waiting in a collective."""
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        with self._condition:
            if self._failure is None:
                self._failure = (text if device_id is None
                                 else f"device {device_id} failed: {text}")
                self._failure_time = time.monotonic()
            self.stopped.set()
            self._condition.notify_all()

    def run(self, fn: Callable[[LocalCommunicator], Any]) -> list[Any]:
        """Run ``fn(comm)`` on one thread per device; return the results by device id.

        The first exception any device raises is re-raised here once every device has
        stopped, or ``STOP_GRACE`` seconds after it: devices blocked in a collective are
        woken with ``CommunicationError`` and evaluator loops watch ``stopped``; a device
        that still runs (stuck in a call that cannot be interrupted) is named in the error
        and left behind on a daemon thread, which cannot keep the process alive. Once one
        device has returned, the others must return within the collective timeout (the
        results are gathered as by a collective). Ctrl-C (``KeyboardInterrupt``) stops every
        device the same way and is re-raised. The world is reset first, so it can be reused
        after a failure.
        """
        self.reset()
        results: list[Any] = [None] * self.num_devices
        errors: list[tuple[int, BaseException]] = []
        finished: list[tuple[float, int]] = []

        def body(device: int, communicator: LocalCommunicator) -> None:
            try:
                results[device] = fn(communicator)
            except BaseException as error:  # noqa: BLE001 -- re-raised by the caller
                with self._condition:
                    errors.append((device, error))
                self.abort(device, error)
            finally:
                with self._condition:
                    finished.append((time.monotonic(), device))
                    if communicator._generation == self._generation:
                        self._returned.add(device)
                    self._condition.notify_all()

        try:
            for device in range(self.num_devices):
                threading.Thread(target=body, args=(device, self.communicator(device)),
                                 name=f"xla-spmd-device-{device}", daemon=True).start()
            late, stuck = self._join(finished)
        except KeyboardInterrupt:
            self.abort(None, "interrupted (KeyboardInterrupt)")
            self._join(finished)
            raise
        if late or errors:
            self._raise_failure(errors, finished, late, stuck)
        return results

    def _raise_failure(self, errors: list[tuple[int, BaseException]],
                       finished: list[tuple[float, int]], late: list[int],
                       stuck: list[int]) -> None:
        """One error for a failed run: the devices that did not return in time, or else the
        root cause (the first failure not induced by another), naming any device left
        behind."""
        if late:
            raise CommunicationError(
                f"devices {late} did not return within {self._timeout():g} s after device "
                f"{finished[0][1]} returned; they were stopped"
                + (f", and devices {stuck} left behind" if stuck else "")
                + f". If they are only slow, {TIMEOUT_HINT}")
        root = next((e for _, e in errors if not _is_induced(e)), errors[0][1])
        if not stuck:
            raise root
        note = f"devices {stuck} were still running {STOP_GRACE:g} s later and were left behind"
        if isinstance(root, CommunicationError):  # one error, with the device's frames
            error = CommunicationError(f"{root}; {note}")
            raise error.with_traceback(root.__traceback__) from None
        root.add_note(note)
        raise root

    def _timeout(self) -> float:
        return collective_timeout(self.timeout)

    def _join(self, finished: list[tuple[float, int]]) -> tuple[list[int], list[int]]:
        """Wait until every device returned, or give up: ``STOP_GRACE`` s after a failure,
        or the collective timeout after the first device returned if no device is waiting
        in a collective (then the others are stopped and get ``STOP_GRACE`` s more).
        Returns the devices that had not returned by that timeout, and those still running
        at the end."""
        timeout = self._timeout()
        late: list[int] = []
        with self._condition:
            while len(finished) < self.num_devices:
                if self._failure_time is not None:
                    deadline = self._failure_time + STOP_GRACE
                elif finished:
                    deadline = finished[0][0] + timeout
                else:
                    deadline = math.inf
                remaining = deadline - time.monotonic()
                if remaining > 0:
                    # A short wait: Ctrl-C raises KeyboardInterrupt here only between waits
                    # (Linux may deliver SIGINT to a device thread, which does not wake us).
                    self._condition.wait(min(remaining, _POLL_SECONDS))
                elif self._failure_time is not None:
                    break
                elif self._waiting:
                    # A device in a collective reports the late ones itself, at its timeout.
                    self._condition.wait(_POLL_SECONDS)
                else:
                    late = self._running(finished)
                    self.abort(None, f"abandoned: devices {late} did not return")
            return late, self._running(finished)

    def _running(self, finished: list[tuple[float, int]]) -> list[int]:
        done = {device for _, device in finished}
        return [d for d in range(self.num_devices) if d not in done]

    # -- the rendezvous -------------------------------------------------------------------

    def _arrive(self, device: int, generation: int, kind: str, group: Group, signature: tuple,
                payload: Any, compute: Compute) -> _Rendezvous:
        key_group = tuple(sorted(group))
        with self._condition:
            self._check_alive(device, generation, kind, group)
            counter = (device, key_group)
            sequence = self._sequence.get(counter, 0)
            self._sequence[counter] = sequence + 1
            key = (key_group, sequence)
            rendezvous = self._pending.get(key)
            if rendezvous is None:
                rendezvous = _Rendezvous(kind, group, signature, sequence, generation)
                self._pending[key] = rendezvous
            elif rendezvous.error is None and (rendezvous.kind, rendezvous.group,
                                               rendezvous.signature) != (kind, group,
                                                                         signature):
                rendezvous.error = (
                    f"mismatched collectives: call #{sequence} on devices {key_group} is "
                    f"{rendezvous.kind}(group={rendezvous.group}, {rendezvous.signature}) on "
                    f"device {min(rendezvous.inputs)} but {kind}(group={group}, {signature})"
                    f" on device {device}")
                self._condition.notify_all()
            rendezvous.arrived += 1
            if rendezvous.arrived == len(group):
                del self._pending[key]
            if rendezvous.error is not None:
                raise CommunicationError(f"{describe(kind, group)}: {rendezvous.error}")
            rendezvous.inputs[device] = payload
            complete = len(rendezvous.inputs) == len(group)
        if complete:
            try:
                results = compute([rendezvous.inputs[d] for d in group])
                error = None
            except Exception as exc:  # noqa: BLE001 -- reported to every member
                results, error = None, f"{type(exc).__name__}: {exc}"
            with self._condition:
                rendezvous.results, rendezvous.error = results, error
                rendezvous.inputs = {}
                self._condition.notify_all()
        return rendezvous

    def _wait(self, device: int, rendezvous: _Rendezvous) -> Any:
        kind, group = rendezvous.kind, rendezvous.group
        timeout = collective_timeout(self.timeout)
        deadline = time.monotonic() + timeout
        with self._condition:
            self._waiting.add(device)
            try:
                while rendezvous.results is None and rendezvous.error is None:
                    self._check_alive(device, rendezvous.generation, kind, group)
                    self._check_arrivals(device, rendezvous, deadline, timeout)
                    self._condition.wait(_wait_seconds(deadline - time.monotonic()))
            finally:
                self._waiting.discard(device)
            if rendezvous.error is not None:
                raise CommunicationError(f"{describe(kind, group)}: {rendezvous.error}")
            assert rendezvous.results is not None  # the loop ends on results or an error
            return rendezvous.results[group.index(device)]


    def _check_arrivals(self, device: int, rendezvous: _Rendezvous, deadline: float,
                        timeout: float) -> None:
        """Raise if a member that has not arrived never will (it returned from the run), or
        once the deadline passed."""
        missing = [d for d in rendezvous.group if d not in rendezvous.inputs]
        what = (f"{describe(rendezvous.kind, rendezvous.group)} (call #{rendezvous.sequence} "
                f"on that group) on device {device}")
        returned = [d for d in missing if d in self._returned]
        if returned:
            raise CommunicationError(
                f"{what}: devices {returned} returned without making this call, so it can "
                "never complete (the devices' control flow diverged)")
        if time.monotonic() >= deadline:
            raise timed_out(what, timeout, f"devices {missing} did not arrive")

    def _check_alive(self, device: int, generation: int, kind: str, group: Group) -> None:
        """Raise if the run has failed, or if ``device`` belongs to an abandoned run."""
        if generation != self._generation:
            raise _peer_failed(f"{describe(kind, group)}: device {device} belongs to a run "
                               "of this world that was abandoned")
        if self._failure is not None:
            raise _peer_failed(f"{describe(kind, group)}: {self._failure}")


def _peer_failed(message: str) -> CommunicationError:
    error = CommunicationError(message)
    error.peer_failed = True  # marks it as a consequence, not the root cause
    return error


def _is_induced(error: BaseException | None) -> bool:
    """True if ``error``, or an error it was raised from, only says that a peer failed."""
    while error is not None:
        if getattr(error, "peer_failed", False):
            return True
        error = error.__cause__
    return False


def _wait_seconds(remaining: float) -> float | None:
    """A ``Condition.wait`` argument: None for no limit (it refuses ``inf``)."""
    return None if remaining == math.inf else remaining


class _LocalHandle:
    __slots__ = ("_world", "_device", "_rendezvous", "_finish", "_done", "_value")

    def __init__(self, world: LocalWorld, device: int, rendezvous: _Rendezvous,
                 finish: Callable[[Any], Any]):
        self._world = world
        self._device = device
        self._rendezvous = rendezvous
        self._finish = finish
        self._done = False
        self._value = None

    def wait(self) -> Any:
        if not self._done:
            assert self._rendezvous is not None  # dropped only once done
            self._value = self._finish(self._world._wait(self._device, self._rendezvous))
            self._done = True
            self._rendezvous = None
        return self._value


def _copy(value: np.ndarray) -> np.ndarray:
    return np.array(value, copy=True)


def _same(value: Any) -> Any:
    return value


class LocalCommunicator(BlockingCollectives):
    """One device's view of a ``LocalWorld``; implements ``Communicator``."""

    def __init__(self, world: LocalWorld, device_id: int, generation: int,
                 stopped: threading.Event):
        self._world = world
        self._device = device_id
        self._generation = generation
        self.stopped = stopped
        """Set when any device of this run failed or the run was interrupted: long
        computations (evaluator loops) check it and stop."""

    @property
    def rank(self) -> int:
        return self._device

    @property
    def size(self) -> int:
        return self._world.num_devices

    def __repr__(self) -> str:
        return f"LocalCommunicator(device={self._device}, size={self.size})"

    def _start(self, kind: str, group: Sequence[int], signature: tuple, payload: Any,
               compute: Compute, finish: Callable[[Any], Any]) -> _LocalHandle:
        group = check_group(kind, self._device, group, self.size)
        rendezvous = self._world._arrive(self._device, self._generation, kind, group,
                                         signature, payload, compute)
        return _LocalHandle(self._world, self._device, rendezvous, finish)

    # -- nonblocking collectives --------------------------------------------------------------

    def all_reduce_start(self, x: np.ndarray, group: Sequence[int], op: ReduceOp = "sum"
                         ) -> _LocalHandle:
        op = canonical_op(op)

        def compute(inputs: list[np.ndarray]) -> list[np.ndarray]:
            _check_same_shapes("all_reduce", group, inputs)
            return [fold(inputs, op)] * len(inputs)

        # Every member gets the same folded array; each copies it in its own thread.
        return self._start("all_reduce", group, (op_name(op),), np.asarray(x), compute, _copy)

    def all_gather_start(self, x: np.ndarray, group: Sequence[int], axis: int = 0
                         ) -> _LocalHandle:
        x = np.asarray(x)
        axis = normalize_axis("all_gather", axis, x.ndim)

        def compute(inputs: list[np.ndarray]) -> list[np.ndarray]:
            _check_same_shapes("all_gather", group, inputs)
            return [np.concatenate(inputs, axis=axis)] * len(inputs)

        return self._start("all_gather", group, (axis,), x, compute, _copy)

    def reduce_scatter_start(self, x: np.ndarray, group: Sequence[int], axis: int = 0,
                             op: ReduceOp = "sum") -> _LocalHandle:
        x = np.asarray(x)
        op = canonical_op(op)
        axis = normalize_axis("reduce_scatter", axis, x.ndim)
        parts = len(group)

        def compute(inputs: list[np.ndarray]) -> list[np.ndarray]:
            _check_same_shapes("reduce_scatter", group, inputs)
            stacked = split_stacked("reduce_scatter", fold(inputs, op), parts, axis)
            return [concat_stacked("reduce_scatter", stacked[k:k + 1], axis)
                    for k in range(parts)]

        return self._start("reduce_scatter", group, (axis, op_name(op)), x, compute, _same)

    def all_to_all_start(self, x: np.ndarray, group: Sequence[int], split_axis: int = 0,
                         concat_axis: int = 0) -> _LocalHandle:
        x = np.asarray(x)
        split_axis = normalize_axis("all_to_all", split_axis, x.ndim)
        concat_axis = normalize_axis("all_to_all", concat_axis, x.ndim)
        parts = len(group)

        def compute(inputs: list[np.ndarray]) -> list[np.ndarray]:
            _check_same_shapes("all_to_all", group, inputs)
            stacked = [split_stacked("all_to_all", item, parts, split_axis) for item in inputs]
            return [concat_stacked("all_to_all", np.stack([s[j] for s in stacked]),
                                   concat_axis) for j in range(parts)]

        return self._start("all_to_all", group, (split_axis, concat_axis), x, compute, _same)

    def collective_permute_start(self, x: np.ndarray, pairs: Sequence[tuple[int, int]]
                                 ) -> _LocalHandle | CompletedHandle:
        """Devices named in ``pairs`` meet in one rendezvous; a device in no pair returns
        zeros at once without waiting."""
        x = np.asarray(x)
        pairs = check_pairs(self._device, pairs, self.size)
        group = tuple(sorted({d for pair in pairs for d in pair}))
        if self._device not in group:
            return CompletedHandle(np.zeros_like(x))
        source_of = {t: s for s, t in pairs}

        def compute(inputs: list[np.ndarray]) -> list[np.ndarray]:
            _check_same_shapes("collective_permute", group, inputs)
            by_device = dict(zip(group, inputs, strict=True))
            return [_copy(by_device[source_of[d]]) if d in source_of
                    else np.zeros_like(by_device[d]) for d in group]

        return self._start("collective_permute", group, (pairs,), x, compute, _same)

    def broadcast_start(self, x: np.ndarray, group: Sequence[int], root: int
                        ) -> _LocalHandle:
        """``root`` is a device id in ``group``; non-roots pass a buffer of the same shape
        and dtype (its contents are ignored)."""
        x = np.asarray(x)
        group_tuple = check_group("broadcast", self._device, group, self.size)
        if root not in group_tuple:
            raise CommunicationError(
                f"broadcast: root {root} is not in replica group {group_tuple}")
        position = group_tuple.index(root)

        def compute(inputs: list[np.ndarray]) -> list[np.ndarray]:
            # Copied here, while the root is still inside the collective.
            return [_copy(inputs[position]) for _ in inputs]

        return self._start("broadcast", group_tuple, (int(root),), x, compute, _same)

    def barrier_start(self, group: Sequence[int]) -> _LocalHandle:
        return self._start("barrier", group, (), None,
                           lambda inputs: [None] * len(inputs), _same)


def _check_same_shapes(kind: str, group: Sequence[int], inputs: list[np.ndarray]) -> None:
    first = inputs[0]
    for device, item in zip(group, inputs, strict=True):
        if item.shape != first.shape or item.dtype != first.dtype:
            raise CommunicationError(
                f"{kind}: device {device} passed a {item.dtype}{list(item.shape)} buffer but "
                f"device {group[0]} passed {first.dtype}{list(first.shape)}; every member "
                "must pass the same shape and dtype")
