"""The backend protocol: what the pipeline hands a per-device program to, and what the
runtime runs.

A ``Backend`` compiles one SPMD module (local shapes, collectives, ``partition-id``) for the
devices this process owns into an ``Executable``. The runtime decides how devices run
(one thread per in-process device, or one MPI rank per device) and calls
``Executable.run`` once per device, on that device's thread, with that device's
communicator. Backends never start threads of their own for devices, and never know
whether a communicator is in-process or MPI.

Backends register by name in ``BACKENDS``; ``get_backend(name)`` loads one (``reference``,
``cpu``, ``gpu``). A backend that cannot load says why.

>>> import numpy as np
>>> from xla_spmd.backends import get_backend
>>> from xla_spmd.ir.hlo_parser import parse_hlo
>>> module = parse_hlo('''HloModule m
... ENTRY %e (x: f32[2]) -> f32[2] {
...   %x = f32[2] parameter(0)
...   ROOT %y = f32[2] add(%x, %x)
... }''')
>>> executable = get_backend("reference").compile(module, devices=(0,))
>>> executable.run(0, [np.ones(2, np.float32)], communicator=None)
[array([2., 2.], dtype=float32)]
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import Module


@runtime_checkable
class Executable(Protocol):
    """One compiled SPMD program, runnable on each of the devices it was compiled for."""

    module: Module
    """The per-device program it runs (for printing and inspection)."""

    def run(self, device: int, arguments: Sequence[np.ndarray], communicator: Any
            ) -> list[np.ndarray]:
        """Run device ``device``'s program on its ``arguments`` (the entry parameters, in
        order, with local shapes) and return its results, flattened (a tuple-shaped root
        gives its leaves in order). ``communicator`` is the device's
        ``xla_spmd.collectives.Communicator``; None when the program has no collective.
        Called concurrently from one thread per in-process device."""
        ...

    # Optional: an executable with ``lockstep = True`` also has
    # ``run_together(arguments_by_device, communicators_by_device) -> results_by_device``,
    # which runs a whole in-process world of devices on the calling thread; the runtime then
    # calls it instead of ``run`` on one thread per device (see the CPU backend). One with
    # ``collectives = "nccl"`` has ``gpu_of(device)`` (the GPU backend under mpirun).


class LockstepExecutable(Executable, Protocol):
    """An executable with ``lockstep = True`` (see `Executable`)."""

    lockstep: bool

    def run_together(self, arguments: Mapping[int, Sequence[np.ndarray]],
                     communicators: Mapping[int, Any]) -> dict[int, list[np.ndarray]]: ...


class NcclExecutable(Executable, Protocol):
    """An executable with ``collectives = "nccl"``: its collectives run on the GPU of
    `gpu_of` (see `Executable`)."""

    collectives: str | None

    def gpu_of(self, device: int) -> int: ...


@runtime_checkable
class Backend(Protocol):
    """Compiles SPMD modules into executables."""

    name: str

    def compile(self, module: Module, devices: Sequence[int]) -> Executable:
        """Compile ``module`` (partitioned for ``module.num_partitions`` devices) for the
        device ids in ``devices`` this process owns."""
        ...


# name -> the module that defines it as `BACKEND` (imported on first use).
BACKENDS: dict[str, str] = {
    "reference": "xla_spmd.backends.reference.executable",
    "cpu": "xla_spmd.backends.cpu",
    "gpu": "xla_spmd.backends.gpu",
}

_loaded: dict[str, Backend] = {}


def get_backend(name: str) -> Backend:
    """The backend called ``name``; an unknown name or a backend that cannot load (its
    dependencies missing) raises an ``XlaSpmdError`` that says why."""
    backend = _loaded.get(name)
    if backend is not None:
        return backend
    module_name = BACKENDS.get(name)
    if module_name is None:
        raise XlaSpmdError(f"unknown backend {name!r}; backends: {', '.join(BACKENDS)}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise XlaSpmdError(f"backend {name!r} cannot load: {error}") from error
    backend = _loaded[name] = module.BACKEND
    return backend


def register_backend(name: str, module_name: str) -> None:
    """Make ``get_backend(name)`` import ``module_name`` and use its ``BACKEND``."""
    if name in BACKENDS and BACKENDS[name] != module_name:
        raise XlaSpmdError(f"backend {name!r} is already registered ({BACKENDS[name]})")
    BACKENDS[name] = module_name
