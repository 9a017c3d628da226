"""The lockstep multi-device evaluator: one program (or one per device), N devices, one
Python thread each.

Device d is replica ``d // num_partitions``, partition ``d % num_partitions``. Each thread
evaluates its program (`evaluate_spmd`: the entry computation everywhere; `evaluate_mpmd`: a
computation per device) with its own `Context`; at its k-th collective every device
calls the shared `_Rendezvous`, which hands back all N values once all have arrived. A device
that raises marks the rendezvous failed, so the others stop with a `CommunicationError` instead
of waiting forever; so do devices reaching different collectives (divergent control flow) or a
collective that a finished device will never reach. The caller gets the first real error,
tagged with its device.

>>> from xla_spmd.ir import Builder, ArrayShape, F32, Module, ReplicaGroups
>>> add = Builder("add")
>>> a, b = (add.parameter(ArrayShape(F32, ()), n) for n in "ab")
>>> add = add.build(add.add(a, b))
>>> e = Builder("e")
>>> x = e.parameter(ArrayShape(F32, (2,)), "x")
>>> m = Module.from_entry("m", e.build(e.all_reduce(x, to_apply=add, channel_id=1,
...     replica_groups=ReplicaGroups.listed([[0, 1]]), use_global_device_ids=True)))
>>> evaluate_spmd(m, [[np.ones(2, np.float32)], [np.full(2, 2, np.float32)]], 2)[1]
array([3., 3.], dtype=float32)
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Sequence

import numpy as np  # noqa: F401 (the doctest uses it)

import xla_spmd.config as config
from xla_spmd.backends.reference.collectives import check_device_ids
from xla_spmd.backends.reference.evaluator import (
    Context,
    Feeds,
    coerce_argument,
    evaluate_computation,
)
from xla_spmd.errors import CommunicationError, EvaluationError
from xla_spmd.ir import Computation, Instruction, Module

STOP_GRACE = 2.0
"""Seconds that devices get to stop after one failed, before the failure is reported."""
_POLL_SECONDS = 0.1


class _PeerFailed(CommunicationError):
    """Raised in a device because another device failed first."""


class _Rendezvous:
    """N-party exchange: each call blocks until all N devices made their k-th call."""

    def __init__(self, size: int, same_program: bool = True):
        self.size = size
        # One program: devices must meet at the same instruction. Several programs: at the
        # same kind of collective (instruction names differ between programs).
        self.key = (lambda inst: inst.name) if same_program else (lambda inst: inst.opcode)
        self.condition = threading.Condition()
        self.generation = 0
        self.arrived = 0
        self.slots: list = [None] * size
        self.names: list = [None] * size
        self.result: tuple[list, list] = ([], [])
        self.failed: int | None = None
        self.failed_at: float | None = None
        self.finished: set[int] = set()
        self.stop = threading.Event()  # the devices' Context.stop: set when one fails

    def exchange(self, device: int, inst: Instruction, value) -> list:
        with self.condition:
            self._check(device, inst)
            generation = self.generation
            self.slots[device], self.names[device] = value, self.key(inst)
            self.arrived += 1
            if self.arrived == self.size:
                self.result = (self.slots, self.names)
                self.slots, self.names = [None] * self.size, [None] * self.size
                self.arrived = 0
                self.generation += 1
                self.condition.notify_all()
            else:
                timeout = config.collective_timeout
                deadline = time.monotonic() + timeout
                while (self.generation == generation and self.failed is None
                       and not self.finished):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        missing = [d for d, name in enumerate(self.names) if name is None]
                        raise CommunicationError(
                            f"device {device} waited {timeout:g} s at collective {inst.name}"
                            f" for devices {missing}, which did not arrive; if they are only "
                            "slow, raise the timeout: "
                            + config.how_to_set("collective_timeout", "SECONDS"))
                    self.condition.wait(None if remaining == math.inf else remaining)
                if self.generation == generation:
                    self._check(device, inst)
            values, names = self.result
        if len(set(names)) > 1:
            raise CommunicationError(
                "devices reached different collectives at the same step: "
                + ", ".join(f"device {d}: {n}" for d, n in enumerate(names))
                + " (control flow diverged between devices)")
        return values

    def _check(self, device: int, inst: Instruction) -> None:
        if self.failed is not None:
            why = "interrupted" if self.failed < 0 else f"device {self.failed} failed"
            raise _PeerFailed(f"device {device} stopped at {inst.name}: {why}")
        if self.finished:
            raise CommunicationError(
                f"device {device} waits at collective {inst.name}, but device(s) "
                f"{sorted(self.finished)} already finished the program (control flow "
                "diverged between devices)")

    def fail(self, device: int) -> None:
        """Device ``device`` failed (-1: the run was interrupted): stop every device."""
        with self.condition:
            if self.failed is None:
                self.failed, self.failed_at = device, time.monotonic()
            self.stop.set()
            self.condition.notify_all()

    def finish(self, device: int) -> None:
        with self.condition:
            self.finished.add(device)
            self.condition.notify_all()


def _caused_by_peer(error: BaseException | None) -> bool:
    """True if `error` (or an error it wraps) is a device stopping because a peer failed."""
    while error is not None:
        if isinstance(error, _PeerFailed) or getattr(error, "peer_failed", False):
            return True
        error = error.__cause__
    return False


def evaluate_spmd(module: Module, per_device_args: Sequence[Sequence],
                  num_devices: int | None = None, num_replicas: int | None = None,
                  max_loop_iterations: int | None = None,
                  feeds: Sequence[Feeds] | None = None) -> list:
    """Run `module` on `num_devices` devices in lockstep; returns each device's result.

    By default the module runs on its own devices: ``num_partitions x replica_count`` from its
    header. Given `num_devices` alone, the run has one replica. ``feeds[d]`` is device d's
    infeed and outfeed queues (`Feeds`).
    """
    if num_devices is None:
        num_replicas = module.num_replicas if num_replicas is None else num_replicas
        num_devices = module.num_partitions * num_replicas
    num_replicas = 1 if num_replicas is None else num_replicas
    if num_replicas < 1 or num_devices < 1 or num_devices % num_replicas:
        raise EvaluationError(f"{num_devices} devices cannot hold {num_replicas} replicas")
    if len(per_device_args) != num_devices:
        raise EvaluationError(f"expected arguments for {num_devices} devices, got "
                              f"{len(per_device_args)}")
    return evaluate_mpmd([module.entry] * num_devices, per_device_args, num_replicas,
                         num_devices // num_replicas, max_loop_iterations, feeds)


def evaluate_mpmd(computations: Sequence[Computation], per_device_args: Sequence[Sequence],
                  num_replicas: int, num_partitions: int,
                  max_loop_iterations: int | None = None,
                  feeds: Sequence[Feeds] | None = None) -> list:
    """Run ``computations[d]`` on device d (flattened id ``replica * num_partitions +
    partition``) in lockstep; returns each device's result.

    Devices may run different programs (StableHLO's ``interpreter.run_parallel`` with a grid
    of programs); their k-th collectives still meet at one rendezvous, so every device must
    reach the same sequence of collective kinds. With one program for all, the collectives
    must also be the same instructions.

    >>> from xla_spmd.ir import Builder, ArrayShape, F32
    >>> f = Builder("f")
    >>> x = f.parameter(ArrayShape(F32, ()), "x")
    >>> f = f.build(f.negate(x))
    >>> g = Builder("g")
    >>> g = g.build(g.parameter(ArrayShape(F32, ()), "y"))
    >>> evaluate_mpmd([f, g], [[np.float32(1)], [np.float32(2)]], 1, 2)
    [array(-1., dtype=float32), array(2., dtype=float32)]
    """
    limit = config.max_loop_iterations if max_loop_iterations is None else max_loop_iterations
    num_devices = num_replicas * num_partitions
    if num_devices < 1 or len(computations) != num_devices:
        raise EvaluationError(f"expected one program per device for {num_replicas} replicas "
                              f"x {num_partitions} partitions, got {len(computations)}")
    if len(per_device_args) != num_devices:
        raise EvaluationError(f"expected arguments for {num_devices} devices, got "
                              f"{len(per_device_args)}")
    if feeds is not None and len(feeds) != num_devices:
        raise EvaluationError(f"expected feeds for {num_devices} devices, got {len(feeds)}")
    arguments = []
    for device, (computation, args) in enumerate(zip(computations, per_device_args)):
        params = computation.parameters
        if len(args) != len(params):
            raise EvaluationError(f"device {device}: {computation.name} takes {len(params)} "
                                  f"arguments, got {len(args)}")
        arguments.append([coerce_argument(a, p.shape, f"device {device} argument {i} ({p.name})")
                          for i, (a, p) in enumerate(zip(args, params))])
    for computation in {id(c): c for c in computations}.values():
        check_device_ids(computation, num_replicas, num_partitions)
    same_program = all(c is computations[0] for c in computations)
    rendezvous = _Rendezvous(num_devices, same_program)
    results: list = [None] * num_devices
    errors: list[tuple[int, int, BaseException]] = []
    order = itertools.count()
    lock = threading.Lock()

    def run(device: int) -> None:
        ctx = Context(partition_id=device % num_partitions, replica_id=device // num_partitions,
                      num_partitions=num_partitions, num_replicas=num_replicas,
                      exchange=lambda inst, value: rendezvous.exchange(device, inst, value),
                      max_loop_iterations=limit, stop=rendezvous.stop,
                      feeds=None if feeds is None else feeds[device])
        try:
            results[device] = evaluate_computation(computations[device], arguments[device], ctx)
        except BaseException as error:  # noqa: BLE001 - reported to the caller below
            with lock:
                errors.append((next(order), device, error))
            rendezvous.fail(device)
        else:
            rendezvous.finish(device)

    threads = [threading.Thread(target=run, args=(d,), name=f"device-{d}", daemon=True)
               for d in range(num_devices)]
    try:
        for thread in threads:
            thread.start()
        _join(threads, rendezvous)
    except BaseException:  # Ctrl-C, or a caller's timeout signal: stop the devices too
        rendezvous.fail(-1)  # every device stops at its next loop iteration or collective
        _join(threads, rendezvous)
        raise
    if errors:
        errors.sort(key=lambda e: (_caused_by_peer(e[2]), e[0]))
        _, device, error = errors[0]
        raise EvaluationError(f"device {device} (replica {device // num_partitions}, partition "
                              f"{device % num_partitions}) failed: {type(error).__name__}: "
                              f"{error}") from error
    return results


def _join(threads: list[threading.Thread], rendezvous: _Rendezvous) -> None:
    """Wait for the device threads; after a failure, give them ``STOP_GRACE`` seconds to stop
    (a device stuck in a call that cannot be interrupted stays behind on its daemon thread,
    which cannot keep the process alive)."""
    for thread in threads:
        while thread.is_alive():
            failed_at = rendezvous.failed_at
            if failed_at is not None and time.monotonic() > failed_at + STOP_GRACE:
                return
            thread.join(_POLL_SECONDS)


__all__ = ["evaluate_mpmd", "evaluate_spmd"]
