"""Running one SPMD program on the job's devices.

`SpmdExecutable(module).execute(per_device_args)` runs the partitioned program on every
device this process owns and returns each one's result. In-process devices are threads that
exchange data through `xla_spmd.collectives.local`; under MPI this process runs its one
device and collectives go through `xla_spmd.collectives.mpi`. The program is the same; only
the communicator behind the collectives differs.

>>> import numpy as np, xla_spmd as xs
>>> xs.set_num_devices(2)
>>> module = xs.parse_hlo('''HloModule m, num_partitions=2
... %add (a: f32[], b: f32[]) -> f32[] {
...   %a = f32[] parameter(0)
...   %b = f32[] parameter(1)
...   ROOT %s = f32[] add(%a, %b)
... }
... ENTRY %e (x: f32[2]) -> f32[2] {
...   %x = f32[2] parameter(0)
...   ROOT %r = f32[2] all-reduce(%x), channel_id=1, replica_groups={{0,1}},
...       use_global_device_ids=true, to_apply=%add
... }''')
>>> SpmdExecutable(module).execute({0: [np.ones(2, np.float32)], 1: [np.ones(2, np.float32)]})[1]
array([2., 2.], dtype=float32)
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Mapping, Sequence

from xla_spmd.backends.reference import Context, evaluate_computation
from xla_spmd.backends.reference.evaluator import coerce_argument
from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import Module
from xla_spmd.ir.hlo_printer import print_module
from xla_spmd.runtime.devices import topology

_local_worlds: dict[int, object] = {}
_mpi_communicator = None


def _local_world(num_devices: int):
    from xla_spmd.collectives.local import LocalWorld

    world = _local_worlds.get(num_devices)
    if world is None:
        world = _local_worlds[num_devices] = LocalWorld(num_devices)
    return world


def mpi_communicator():
    """This rank's MPI communicator; a rank that raises aborts the whole job."""
    global _mpi_communicator
    if _mpi_communicator is None:
        from xla_spmd.collectives.mpi import MpiCommunicator, install_abort_on_error

        install_abort_on_error()
        _mpi_communicator = MpiCommunicator()
    return _mpi_communicator


@contextlib.contextmanager
def blas_threads_per_device(num_devices: int):
    """Share the cores among in-process devices: each device calling a multi-threaded BLAS
    at once would oversubscribe them."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=max(1, (os.cpu_count() or 1) // num_devices), user_api="blas"):
        yield


class SpmdExecutable:
    """A partitioned program bound to the job's devices (one partition per device)."""

    def __init__(self, module: Module):
        self.module = module
        self.num_devices = topology().num_devices
        # Ranks under MPI check that they all run this program at every collective.
        text = print_module(module).encode()
        self.fingerprint = int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")
        partitions = module.num_partitions
        if partitions not in (1, self.num_devices):
            raise XlaSpmdError(f"module {module.name} is partitioned for {partitions} devices, "
                               f"but this job has {self.num_devices}")

    def _run_device(self, device: int, args: Sequence, communicator) -> object:
        params = self.module.entry.parameters
        if len(args) != len(params):
            raise XlaSpmdError(f"device {device}: {self.module.name} takes {len(params)} "
                               f"arguments, got {len(args)}")
        coerced = [coerce_argument(a, p.shape, f"device {device} argument {i} ({p.name})")
                   for i, (a, p) in enumerate(zip(args, params))]
        context = Context(partition_id=device, num_partitions=self.num_devices,
                          communicator=communicator)
        return evaluate_computation(self.module.entry, coerced, context)

    def execute(self, per_device_args: Mapping[int, Sequence]) -> dict[int, object]:
        """Run on this process's devices; `per_device_args[d]` are device d's arguments."""
        top = topology()
        missing = [d for d in top.local_device_ids if d not in per_device_args]
        if missing:
            raise XlaSpmdError(f"no arguments for devices {missing}")
        if top.kind == "mpi":
            (device,) = top.local_device_ids
            communicator = mpi_communicator()
            communicator.set_program(self.fingerprint)
            return {device: self._run_device(device, per_device_args[device], communicator)}
        world = _local_world(self.num_devices)
        with blas_threads_per_device(self.num_devices):
            results = world.run(lambda comm: self._run_device(
                comm.rank, per_device_args[comm.rank], comm))
        return dict(enumerate(results))
