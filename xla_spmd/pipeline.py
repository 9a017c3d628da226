"""The pipeline, in one place: a global program with a few shardings -> an executable SPMD
program.

    import shardings -> propagate -> partition -> optimize -> verify -> backend.compile

`lower` runs every stage up to the verified SPMD module; `compile` hands that module to a
backend. jit, the command line, the examples and the benchmarks all come through here, and
propagation runs once per program.

The backend is ``xla_spmd.config.backend`` unless one is named (``XLA_SPMD_BACKEND``,
``xs.config.update("backend", ...)``, ``--backend`` on the command line). A known backend
that cannot load here (its dependencies missing) gives way to the reference backend with a
warning that says why.

>>> from xla_spmd.ir import Builder, ArrayShape, F32, Module
>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import TensorSharding
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(F32, (8, 4)), sharding=TensorSharding(make_mesh({"x": 4}),
...                                                                  [["x"], []]))
>>> program = compile(Module.from_entry("m", b.build(b.negate(x))), backend="reference")
>>> str(program.spmd_module.entry.root.shape), program.executable.module is program.spmd_module
('f32[2,4]', True)
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import xla_spmd.config as config
from xla_spmd.backends import BACKENDS, Backend, Executable, get_backend
from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import Module, verify
from xla_spmd.mesh import Mesh, make_mesh, parse_sdy_meshes
from xla_spmd.partition import partition
from xla_spmd.partition.partitioner import find_mesh
from xla_spmd.passes import optimize_spmd
from xla_spmd.propagation import import_shardings, propagate
from xla_spmd.propagation.importing import has_foreign_shardings


@dataclass(frozen=True)
class Program:
    """A program through the pipeline: the propagated global `module` (every value has a
    sharding), the verified per-device `spmd_module`, the `mesh`, and (after `compile`) the
    backend's `executable`."""

    module: Module
    spmd_module: Module
    mesh: Mesh
    executable: Executable | None = None


def program_mesh(module: Module) -> Mesh | None:
    """The mesh a program's shardings are over: the first axis-based sharding's, else the
    first mesh its ``xla.sdy.meshes`` attribute declares (a program whose only shardings are
    those of manual regions); None when it has none."""
    found = find_mesh(module)
    if found is not None:
        return found
    declared = parse_sdy_meshes(module.header_value("frontend_attributes") or "")
    return next(iter(declared.values()), None)


def load_backend(backend: str | Backend | None = None) -> Backend:
    """The backend called `backend` (None: ``xla_spmd.config.backend``). A known backend that
    cannot load gives way to the reference backend, with a warning saying why."""
    if backend is not None and not isinstance(backend, str):
        return backend
    name = config.backend if backend is None else backend
    if name not in BACKENDS:
        raise XlaSpmdError(f"unknown backend {name!r}; backends: {', '.join(BACKENDS)}")
    try:
        return get_backend(name)
    except XlaSpmdError as error:
        if name == "reference":
            raise
        warnings.warn(f"{error}; running on the reference backend instead", stacklevel=3)
        return get_backend("reference")


def lower(module: Module, *, mesh: Mesh | None = None, strategy: str | None = None,
          propagate_shardings: bool = True) -> Program:
    """Every stage but the backend: the propagated module and its verified SPMD module.

    `mesh` defaults to the program's own (`program_mesh`); `strategy` is propagation's
    ("basic", "aggressive", "op-priority", "user-priority"). With
    ``propagate_shardings=False`` the module's shardings are taken as they are (a module
    propagated already); a value without one is replicated.
    """
    if propagate_shardings:
        if has_foreign_shardings(module):  # GSPMD / Shardy text -> TensorShardings
            module = import_shardings(module, mesh).module
        mesh = mesh or program_mesh(module)
        module = propagate(module, strategy, mesh=mesh)
    mesh = mesh or program_mesh(module) or make_mesh({"x": 1})
    spmd_module = partition(module, mesh)
    spmd_module = optimize_spmd(spmd_module)
    verify(spmd_module)
    return Program(module, spmd_module, mesh)


def compile(module: Module, *, mesh: Mesh | None = None, strategy: str | None = None,
            backend: str | Backend | None = None, devices: Sequence[int] | None = None,
            propagate_shardings: bool = True) -> Program:
    """Run the pipeline on `module` (see `lower`) and compile its SPMD module with `backend`
    for `devices` (the device ids this process runs; default: all of the program's)."""
    program = lower(module, mesh=mesh, strategy=strategy,
                    propagate_shardings=propagate_shardings)
    spmd_module = program.spmd_module
    if devices is None:
        devices = range(spmd_module.num_partitions)
    executable = load_backend(backend).compile(spmd_module, tuple(devices))
    return Program(program.module, spmd_module, program.mesh, executable)
