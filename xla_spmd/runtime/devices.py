"""Devices, and which of them this process owns.

Two ways to run, one script for both:

* in-process (the default): this process owns N devices, 8 unless `XLA_SPMD_NUM_DEVICES` or
  `set_num_devices(n)` says otherwise; collectives go through shared memory between threads;
* under `mpirun` (detected from the launcher's environment, or forced by
  `xla_spmd.distributed.initialize()`): each rank owns one device, device id = rank, and
  collectives go through MPI.

>>> import xla_spmd as xs
>>> xs.set_num_devices(4)
>>> [d.id for d in xs.devices()]
[0, 1, 2, 3]
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import xla_spmd.config as config
from xla_spmd.errors import XlaSpmdError

DEFAULT_NUM_DEVICES = 8
NUM_DEVICES_ENV = "XLA_SPMD_NUM_DEVICES"
# Environment variables MPI launchers set in every rank (Open MPI, MPICH/Hydra, PMIx, Slurm).
_MPI_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS")


@dataclass(frozen=True, slots=True)
class Device:
    """One device: its global id and the process that owns it."""

    id: int
    process_index: int = 0
    platform: str = "cpu"

    def __repr__(self) -> str:
        return f"{self.platform.upper()}Device(id={self.id})"


@dataclass(frozen=True, slots=True)
class Topology:
    """How many devices there are, which this process owns, and how they talk."""

    num_devices: int
    local_device_ids: tuple[int, ...]
    kind: str  # "local" (threads in this process) or "mpi" (one rank per device)

    @property
    def process_index(self) -> int:
        return 0 if self.kind == "local" else self.local_device_ids[0]

    @property
    def process_count(self) -> int:
        return 1 if self.kind == "local" else self.num_devices


_topology: Topology | None = None
_requested_devices: int | None = None


def launched_by_mpi() -> bool:
    return any(name in os.environ for name in _MPI_SIZE_VARIABLES)


def _local_device_count() -> int:
    if _requested_devices is not None:
        return _requested_devices
    text = os.environ.get(NUM_DEVICES_ENV)
    if not text:
        return DEFAULT_NUM_DEVICES
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise XlaSpmdError(f"{NUM_DEVICES_ENV}={text!r}: expected a positive number of devices")
    return count


def topology() -> Topology:
    """The current topology, set up on first use."""
    global _topology
    if _topology is None:
        config.check()  # a bad XLA_SPMD_* variable fails here, at start-up, naming itself
        if launched_by_mpi():
            initialize_mpi()
        else:
            count = _local_device_count()
            _topology = Topology(count, tuple(range(count)), "local")
    assert _topology is not None  # initialize_mpi sets it too
    return _topology


def initialize_mpi() -> Topology:
    """Own one device per MPI rank (device id = rank). Called by
    `xla_spmd.distributed.initialize()` and on first use when an MPI launcher is detected."""
    global _topology
    try:
        from mpi4py import MPI
    except ImportError:
        raise XlaSpmdError("running under an MPI launcher needs mpi4py: "
                           "pip install 'xla-spmd[mpi]'") from None
    world = MPI.COMM_WORLD
    _topology = Topology(world.Get_size(), (world.Get_rank(),), "mpi")
    return _topology


def set_num_devices(count: int) -> None:
    """Use `count` in-process devices (not under MPI, where each rank owns one)."""
    global _topology, _requested_devices
    if count < 1:
        raise XlaSpmdError(f"set_num_devices({count}): expected a positive number")
    if _topology is not None and _topology.kind == "mpi":
        raise XlaSpmdError("set_num_devices: under MPI each rank owns one device; launch "
                           "with `mpirun -n N` to change the number of devices")
    _requested_devices = count
    _topology = Topology(count, tuple(range(count)), "local")


def devices() -> list[Device]:
    """Every device of the job, in id order."""
    top = topology()
    owner = (lambda d: 0) if top.kind == "local" else (lambda d: d)
    return [Device(d, owner(d)) for d in range(top.num_devices)]


def local_devices() -> list[Device]:
    """The devices this process owns."""
    top = topology()
    return [Device(d, top.process_index) for d in top.local_device_ids]


def device_count() -> int:
    return topology().num_devices


def process_index() -> int:
    return topology().process_index


def process_count() -> int:
    return topology().process_count
