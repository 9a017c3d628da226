"""Running one compiled SPMD program (a backend's ``Executable``) on the job's devices.

`execute(executable, per_device_args)` runs the program on every device this process owns
and returns each one's results (flattened). In-process devices are threads, one per device
(`LocalWorld.run`), that exchange data through `xla_spmd.collectives.local`, sharing the
cores' BLAS threads, or, where the executable offers it (`lockstep`, a small program on the
CPU backend), all on the calling thread, step by step (`run_together`). Under MPI this
process runs its one device and collectives go through `xla_spmd.collectives.mpi` (or NCCL,
`xla_spmd.collectives.nccl`, for a GPU executable). The program is the same; only the
communicator differs.

>>> import numpy as np, xla_spmd as xs
>>> from xla_spmd.backends import get_backend
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
>>> executable = get_backend("reference").compile(module, devices=(0, 1))
>>> execute(executable, {0: [np.ones(2, np.float32)], 1: [np.ones(2, np.float32)]})[1]
[array([2., 2.], dtype=float32)]
"""

from __future__ import annotations

import contextlib
import hashlib
import weakref
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from xla_spmd.backends import Executable
from xla_spmd.backends.base import LockstepExecutable, NcclExecutable
from xla_spmd.cores import affinity, blas_controller
from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir.hlo_printer import print_module
from xla_spmd.runtime.devices import topology

if TYPE_CHECKING:
    from xla_spmd.collectives.local import LocalWorld

_local_worlds: dict[int, LocalWorld] = {}
_mpi_communicator = None
_nccl_communicator = None


def _local_world(num_devices: int) -> LocalWorld:
    from xla_spmd.collectives.local import LocalWorld

    world = _local_worlds.get(num_devices)
    if world is None:
        world = _local_worlds[num_devices] = LocalWorld(num_devices)
    return world


def mpi_communicator():
    """This rank's MPI communicator (made collectively, on first use); a rank that raises
    aborts the whole job. It also sets how many BLAS threads this rank's programs use."""
    global _mpi_communicator, _mpi_blas_threads
    if _mpi_communicator is None:
        from xla_spmd.collectives.mpi import MpiCommunicator, install_abort_on_error

        install_abort_on_error()
        _mpi_communicator = MpiCommunicator()
        _mpi_blas_threads = _rank_blas_threads()
    return _mpi_communicator


def mpi_aborts_on_error() -> bool:
    """Whether this rank has made its MPI communicator, and with it the hook that makes an
    uncaught exception stop every rank, reported once (``install_abort_on_error``)."""
    return _mpi_communicator is not None


def nccl_communicator(gpu: int):
    """This rank's NCCL communicator on GPU ``gpu`` (for executables whose collectives run on
    the GPU: ``executable.collectives == "nccl"``); unique ids travel over the MPI one."""
    global _nccl_communicator
    if _nccl_communicator is None:
        from xla_spmd.collectives.nccl import NcclCommunicator

        _nccl_communicator = NcclCommunicator(mpi=mpi_communicator(), device=gpu)
    return _nccl_communicator


@contextlib.contextmanager
def blas_threads(limit: int):
    """BLAS on at most ``limit`` threads while the block runs: fewer if it had fewer (an
    ``OMP_NUM_THREADS`` or an enclosing ``threadpool_limits`` stays in force). The libraries
    are looked up once (a fresh ``threadpool_limits`` costs half a millisecond a step)."""
    controller = blas_controller()
    if controller is None or not controller.lib_controllers:
        yield
        return
    current = min(c.num_threads for c in controller.lib_controllers)
    with controller.limit(limits=max(1, min(limit, current))):
        yield


def blas_threads_per_device(num_devices: int):
    """Share the cores among in-process devices: each device calling a multi-threaded BLAS
    at once would oversubscribe them (devices × threads = cores)."""
    return blas_threads(len(affinity()) // num_devices)


_mpi_blas_threads = 1  # set with the MPI communicator


def _rank_blas_threads() -> int:
    """BLAS threads for this rank (collective over the ranks of its node): its cores over
    the most ranks that share one of them. Unbound ranks share every core (``mpirun -n 8``
    on 2 cores: 1 thread each, where OpenBLAS would start 2 in each rank and their waits
    would take the cores from the ranks computing); ranks bound to cores of their own use
    them all."""
    from mpi4py import MPI

    mine = affinity()
    node = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        masks = [set(cores) for cores in node.allgather(sorted(mine))]
    finally:
        node.Free()
    sharing = max(sum(core in mask for mask in masks) for core in mine)
    return max(1, len(mine) // sharing)


_fingerprints: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def program_fingerprint(executable: Executable) -> int:
    """A 64-bit digest of the executable's program text (computed once per executable):
    ranks under MPI check at every collective that they all run this program."""
    try:
        return _fingerprints[executable]
    except (KeyError, TypeError):
        pass
    text = print_module(executable.module).encode()
    fingerprint = int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")
    with contextlib.suppress(TypeError):  # an executable that takes no weak reference
        _fingerprints[executable] = fingerprint
    return fingerprint


def execute(executable: Executable, per_device_args: Mapping[int, Sequence],
            donated: Mapping[int, Collection[int]] | None = None
            ) -> dict[int, list[np.ndarray]]:
    """Run `executable` on this process's devices; `per_device_args[d]` are device d's
    arguments (local shapes). Returns each local device's results, flattened. A program
    partitioned for fewer devices than the job runs on the job's first devices (a process
    that owns none of them runs nothing and returns no results). `donated[d]`: the numbers
    of device d's arguments handed over to the program (buffers no other argument shares),
    passed on to an executable that writes over them (`donates`, the CPU backend's)."""
    handed = donated if donated and getattr(executable, "donates", False) else None

    def run(device: int, arguments: Sequence, communicator) -> list[np.ndarray]:
        if handed is None:
            return executable.run(device, arguments, communicator)
        return cast(Any, executable).run(device, arguments, communicator,
                                         donated=handed.get(device, ()))
    top = topology()
    module = executable.module
    if module.num_partitions > top.num_devices:
        raise XlaSpmdError(f"module {module.name} is partitioned for {module.num_partitions} "
                           f"devices, but this job has {top.num_devices}")
    count = module.num_partitions if module.num_partitions > 1 else top.num_devices
    missing = [d for d in top.local_device_ids if d < count and d not in per_device_args]
    if missing:
        raise XlaSpmdError(f"no arguments for devices {missing}")
    if top.kind == "mpi":
        (device,) = top.local_device_ids
        communicator = mpi_communicator()
        # every rank names the program, those that run none of it too: the collectives after
        # it (a gather) are checked to come from the same program on every rank
        communicator.set_program(program_fingerprint(executable))
        if device >= count:
            return {}
        if getattr(executable, "collectives", None) == "nccl":
            communicator = nccl_communicator(cast(NcclExecutable, executable).gpu_of(device))
        with blas_threads(_mpi_blas_threads):  # ranks sharing the cores share them out
            return {device: run(device, per_device_args[device], communicator)}
    world = _local_world(count)
    if getattr(executable, "lockstep", False):
        # The backend runs every device on this thread, step by step (a small program: its
        # time is Python's, which threads would only serialise on the GIL); BLAS keeps every
        # core, as one call runs at a time.
        world.reset()
        extra = {} if handed is None else {"donated": handed}
        return cast(LockstepExecutable, executable).run_together(
            {d: per_device_args[d] for d in range(count)},
            {d: world.communicator(d) for d in range(count)}, **extra)
    with blas_threads_per_device(count):
        results = world.run(lambda comm: run(comm.rank, per_device_args[comm.rank], comm))
    return dict(enumerate(results))
